"""A run's status, summary.json's "status" (a series' aggregate.json uses the same words): how far the
run got, not what it found. An interrupted or failed run's status is also its verdict (verdict.py)."""

COMPLETE = "complete"  # every variant ran and the analysis finished
INCOMPLETE = "incomplete"  # analysed, but a variant could not be (its files missing: analyze --partial)
INTERRUPTED = "interrupted"  # Ctrl-C or SIGTERM
ERROR = "error"  # infrastructure or the harness failed
