"""The log file a librdkafka client writes to: closed when asked, nothing left behind."""

import logging
import os

from harness.logfile import FileLogger


def open_files() -> set[str]:
    return {os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
            if os.path.exists(f"/proc/self/fd/{fd}")}


def test_a_closed_log_file_is_closed_and_later_lines_go_nowhere(tmp_path, capsys):
    path = tmp_path / "logs" / "producer-a.log"
    logger = FileLogger(path)
    logger.warning("FAIL|rdkafka#producer-1| 127.0.0.1:9092/bootstrap: Disconnected")
    assert str(path) in open_files()
    logger.close()
    assert str(path) not in open_files()
    assert path.read_text().endswith("Disconnected\n")
    logger.error("a client's last words while it is destroyed")  # would reopen the file, or go to stderr
    logger.close()
    assert str(path) not in open_files() and "last words" not in path.read_text()
    assert capsys.readouterr() == ("", "")
    assert logger.name not in logging.Logger.manager.loggerDict  # nothing stays in logging's registry


def test_as_a_context_manager(tmp_path):
    with FileLogger(tmp_path / "admin.log") as logger:
        logger.info("metadata")
    assert not logger.handlers and str(tmp_path / "admin.log") not in open_files()


def test_a_clients_debug_lines_reach_the_file(tmp_path):
    # librdkafka logs what `debug: eos,msg` asks for at syslog level 7, which confluent-kafka logs as DEBUG
    with FileLogger(tmp_path / "producer-a.log") as logger:
        logger.log(logging.DEBUG, "ERRSEQ [rdkafka#producer-1] ProduceRequest ... skipped sequence numbers")
    assert "skipped sequence numbers" in (tmp_path / "producer-a.log").read_text()
