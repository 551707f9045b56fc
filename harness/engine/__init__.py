"""The Spark engine: the session, the final read's data source, the per-partition tasks and a run folder's
analysis. Kept apart from harness/analysis/, whose definitions are pure functions of data that run (and are
tested) without Spark."""
