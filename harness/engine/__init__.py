"""The Spark engine: the session, the per-partition tasks, the final read's data source, a run folder's analysis."""
