"""The HTML reports: load.py reads a run folder into a view, render.py turns a view into a page."""

from __future__ import annotations

from pathlib import Path

from ..runfolder import RunFolder, SeriesFolder, write_runs_index
from .load import load, load_aggregate, load_index, load_series
from .render import render_aggregate, render_index, render_run


def write_report(folder: RunFolder) -> Path:
    """<run>/index.html from the folder's summary, faults and anomaly tables."""
    return folder.write_report(render_run(load(folder)))


def write_index(out: Path) -> Path:
    """<out>/index.html: every run of the folder, newest first, with the trend across runs."""
    return write_runs_index(out, render_index(load_index(out), load_series(out)))


def write_aggregate_report(folder: SeriesFolder) -> Path:
    """<series>/index.html: the aggregate of repeated runs, from aggregate.json."""
    return folder.write_report(render_aggregate(load_aggregate(folder)))
