"""The HTML reports: load.py reads a run folder into a view, render.py turns a view into a page."""

from __future__ import annotations

from pathlib import Path

import os
from urllib.parse import quote

from ..runfolder import RunFolder, SeriesFolder, compare_pages, write_page, write_runs_index
from .load import load, load_aggregate, load_compare, load_index, load_series
from .render import render_aggregate, render_compare, render_exploration, render_index, render_run


def write_exploration_report(folder) -> Path:
    """<exploration>/index.html (explore/folder.py): its tries, findings and coverage, from its journals."""
    tries = folder.tries()
    for t in tries:  # a try's kept folder, relative to the page
        path = Path(t.get("folder") or "")
        if (path / "summary.json").exists() and folder.path in path.parents:
            t["kept"] = quote(os.path.relpath(path, folder.path), safe="/.")
    view = {"facts": {**folder.facts(), "path": str(folder.path)}, "tries": tries, "findings": folder.findings()}
    return write_page(folder.report, render_exploration(view))


def write_report(folder: RunFolder) -> Path:
    """<run>/index.html from the folder's summary, faults and anomaly tables."""
    return folder.write_report(render_run(load(folder)))


def write_index(out: Path) -> Path:
    """<out>/index.html: every run of the folder, newest first, with the trend across runs."""
    return write_runs_index(out, render_index(load_index(out), load_series(out), compare_pages(out)))


def write_aggregate_report(folder: SeriesFolder) -> Path:
    """<series>/index.html: the aggregate of repeated runs, from aggregate.json."""
    return folder.write_report(render_aggregate(load_aggregate(folder)))


def write_compare(folders: list[RunFolder], page: Path) -> tuple[Path, dict]:
    """`page`: the runs side by side (links to each run's report relative to it); also the view, for the
    terminal's table."""
    view = load_compare(folders)
    for run, folder in zip(view["runs"], folders):
        run["href"] = quote(os.path.relpath(folder.path.resolve() / "index.html", page.resolve().parent), safe="/.")
    written = write_page(page, render_compare(view))
    if (page.parent / "index.html").exists() and any(r.path.parent.resolve() == page.parent.resolve() for r in folders):
        write_index(page.parent)  # the runs index lists the comparisons beside it
    return written, view
