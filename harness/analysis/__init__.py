"""The anomaly definitions and the metric registry: pure functions of data, no Spark and no run folder."""
