"""kafka-chaos: a chaos-testing harness for Kafka delivery guarantees."""

__version__ = "0.1.0"
