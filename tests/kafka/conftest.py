"""Tests here run a real Apache Kafka from KAFKA_HOME (a 4.x distribution); without it they skip, saying so.

    KAFKA_HOME=/path/to/kafka_2.13-4.1.0 python -m pytest tests/kafka

All are marked `slow` (and `kafka`): CI runs them; `-m 'not slow'` leaves them out of a quick local loop.
"""

import os
from pathlib import Path

import pytest


def pytest_collection_modifyitems(config, items):
    here = [i for i in items if "tests/kafka/" in str(i.fspath).replace("\\", "/")]
    home = os.environ.get("KAFKA_HOME")
    for item in here:
        item.add_marker(pytest.mark.kafka)
        item.add_marker(pytest.mark.slow)  # each starts 3 KRaft nodes and Spark: minutes
        if not home:
            item.add_marker(pytest.mark.skip(reason="KAFKA_HOME not set: no Apache Kafka distribution to run"))
        elif not (Path(home) / "bin" / "kafka-server-start.sh").is_file():
            item.add_marker(pytest.mark.skip(reason=f"KAFKA_HOME={home} is not a Kafka distribution"))


def server_log(run_dir: Path, broker: int) -> str:
    """Broker `broker`'s server.log as the run kept it, with the files Kafka's log4j rolled it into on the hour
    (server.log.YYYY-MM-DD-HH, beside it in the run folder): a run that crosses an hour has its start in those."""
    return "".join(p.read_text() for p in sorted((run_dir / "logs" / f"kafka-{broker}").glob("server.log*")))
