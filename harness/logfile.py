"""A log file of the run folder for a librdkafka client (its `logger` setting), not the terminal.

    logger = FileLogger(folder / "logs" / "producer-a.log")
    Producer({..., "logger": logger})
    ...
    logger.close()          # when the client is gone: the file is closed, later lines are dropped

The logger is not registered with `logging.getLogger` (a name per run folder would stay in
logging's registry for the life of the process, a long --repeat series included), so it has
no parent: only its own file receives its lines. It keeps every level: librdkafka logs at debug
level only what a client's `debug` setting asks for (`debug: eos,msg`), and that must reach the file.
"""

from __future__ import annotations

import logging
from pathlib import Path


class FileLogger(logging.Logger):
    def __init__(self, path: Path):
        super().__init__(f"kafka-chaos.{path}", logging.DEBUG)
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        self.addHandler(handler)

    def close(self) -> None:
        """Close the file; safe to call twice. A line logged afterwards (a client's last words while it
        is destroyed) is dropped: a closed FileHandler would open its file again, and without a handler
        logging would print it on stderr."""
        self.disabled = True
        for handler in list(self.handlers):
            self.removeHandler(handler)
            handler.close()

    def __enter__(self) -> FileLogger:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
