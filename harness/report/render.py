"""Render a run folder's summary.json and faults.jsonl to index.html (jinja2, autoescaped)."""

from __future__ import annotations

import json
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from ..summary import ACCOUNTING, TABLE_COLUMNS


def _env() -> Environment:
    return Environment(loader=PackageLoader("harness.report", "templates"),
                       autoescape=select_autoescape(["html", "j2"]), trim_blocks=True, lstrip_blocks=True)


def read_faults(run_dir: Path) -> list[dict]:
    path = run_dir / "faults.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda r: (r.get("variant", ""), r.get("planned_at", 0), r.get("id", 0)))


def render(run_dir: Path) -> Path:
    summary = json.loads((run_dir / "summary.json").read_text())
    html = _env().get_template("run.html.j2").render(
        s=summary, columns=TABLE_COLUMNS, accounting=ACCOUNTING, faults=read_faults(run_dir))
    out = run_dir / "index.html"
    out.write_text(html)
    return out
