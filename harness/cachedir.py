"""Where the user's cache folder is (XDG_CACHE_HOME, else ~/.cache): the Spark driver's class archive
(engine/classcache.py) and the client versions (workload/clientenv.py) keep their files in it."""

from __future__ import annotations

import os
from pathlib import Path


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kafka-chaos"
