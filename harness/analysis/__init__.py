"""The final read (PySpark) and the anomaly checks."""
