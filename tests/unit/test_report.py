"""Reports rendered from a stored fixture run (no broker, no Spark)."""

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from harness.report.render import LISTING_CAP, render, render_index
from harness.summary import build

T0 = 1_790_000_000  # epoch seconds of the fixture's first record


def iso(t: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds")


def metrics(duplicates, runs, max_jb, lost=0):
    return dict(sent=1000, acked=1000, rejected=0, unknown=0, received=1000 + duplicates, unique=1000,
                duplicates=duplicates, jump_back_runs=runs, max_jump_back=max_jb, lost=lost, missing=0,
                received_unacked=0, reorders=0, unexpected=0)


def make_run(folder: Path, name="fixture", producer_value="harness", n_runs=3, seconds=10, run_id="20260101T000000Z-fx"):
    run = folder / run_id
    faults = []
    for variant, offset in (("off", 0), ("on", 100)):
        details = run / variant / "anomalies"
        details.mkdir(parents=True)
        jumps = [] if variant == "on" else [
            {"partition": k % 3, "first_offset": 100 * k, "last_offset": 100 * k + 9, "first_value": 90 * k,
             "highest_before": 90 * k + 9, "size": 10 + k, "length": 10, "kind": "duplicate"} for k in range(n_runs)]
        pq.write_table(pa.Table.from_pylist(jumps, schema=pa.schema([
            ("partition", pa.int32()), ("first_offset", pa.int64()), ("last_offset", pa.int64()),
            ("first_value", pa.int64()), ("highest_before", pa.int64()), ("size", pa.int64()), ("length", pa.int64()),
            ("kind", pa.string())])), details / "jump_back_runs.parquet")
        pq.write_table(pa.table({"second": [T0 + offset + s for s in range(seconds)],
                                 "records": [100_000] * seconds, "duplicates": [s % 3 for s in range(seconds)],
                                 "jump_backs": [s % 2 for s in range(seconds)]}), details / "series.parquet")
        for k, at in enumerate((1.0, 4.0, 7.5)):
            faults.append({"variant": variant, "id": k, "kind": "lost-acks", "target": "all", "planned_at": at,
                           "planned_duration": 0.3, "params": {}, "outcome": "healed",
                           "applied_at": iso(T0 + offset + at), "healed_at": iso(T0 + offset + at + 0.3)})
    (run / "faults.jsonl").write_text("".join(json.dumps(f) + "\n" for f in faults))
    spec = {"name": name, "producer": {"linger.ms": 5},
            "variants": [{"name": "off", "producer": {"enable.idempotence": False, "client.id": producer_value}},
                         {"name": "on", "producer": {"enable.idempotence": True}}],
            "expectations": {"on": {"duplicates": 0}}}
    (run / "spec.yaml").write_text(yaml.safe_dump(spec))
    summary = build(run_id, name, "complete", {"off": metrics(37, n_runs, 10 + n_runs - 1), "on": metrics(0, 0, 0)},
                    spec["expectations"], {"cluster": "local · tansu", "seed": 4, "started_at": iso(T0 - 5),
                                           "ended_at": iso(T0 + 200), "reason": ""})
    (run / "summary.json").write_text(json.dumps(summary))
    return run, summary, faults


def test_report_content_matches_the_run(tmp_path):
    run, summary, faults = make_run(tmp_path)
    html = render(run).read_text()
    table = html[html.index('id="comparison"'):html.index("</table>", html.index('id="comparison"'))]
    for row in re.findall(r"<tr><td>(.*?)</td>(.*?)</tr>", table):
        cells = re.findall(r'data-metric="(\w+)"[^>]*>([^<]*)<', row[1])
        for (metric, value), variant in zip(cells, ("off", "on")):
            assert value == str(summary["variants"][variant][metric]), (variant, metric)
    for variant in ("off", "on"):  # one shaded bar per fault, in each time chart of the variant
        section = html[html.index(f"<h2>{variant}</h2>"):]
        first_chart = section[:section.index("</svg>")]
        assert first_chart.count('class="fault"') == sum(1 for f in faults if f["variant"] == variant)
    listing = re.findall(r"Msg: p=(\d+) offset=(\d+) m=(\d+) Last-acked=(\d+) JUMP BACK (\d+) DUPLICATE", html)
    runs = pq.read_table(run / "off" / "anomalies" / "jump_back_runs.parquet").to_pylist()
    assert sorted(tuple(int(x) for x in line) for line in listing) == sorted(
        (r["partition"], r["first_offset"], r["first_value"], r["highest_before"], r["size"]) for r in runs)
    assert "enable.idempotence" in html and html.count('class="fault-row"') == len(faults)
    assert 'class="pass"' in html


def test_listing_is_capped_with_a_link_to_the_parquet(tmp_path):
    run, _, _ = make_run(tmp_path, n_runs=LISTING_CAP + 25)
    html = render(run).read_text()
    assert html.count("Msg: p=") == LISTING_CAP
    assert "25 more" in html and 'href="off/anomalies/jump_back_runs.parquet"' in html


def test_values_from_files_are_escaped(tmp_path):
    run, summary, _ = make_run(tmp_path, producer_value="<script>alert(1)</script>")
    summary["reason"] = "<script>alert(2)</script>"
    (run / "summary.json").write_text(json.dumps(summary))
    html = render(run).read_text()
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;script&gt;alert(2)" in html


def test_big_run_report_stays_small(tmp_path):
    run, _, _ = make_run(tmp_path, n_runs=10_000, seconds=600)  # 10,000 jump-back runs, 1M+ records a variant
    size = render(run).stat().st_size
    assert size < 10 * 2**20, size


def test_index_lists_runs_newest_first_with_trend(tmp_path):
    make_run(tmp_path, run_id="20260101T000000Z-a")
    later, summary, _ = make_run(tmp_path, run_id="20260102T000000Z-b")
    summary["started_at"] = iso(T0 + 86400)
    summary["variants"]["on"]["expectations"][0].update(actual=3, passed=False)
    (later / "summary.json").write_text(json.dumps(summary))
    html = render_index(tmp_path).read_text()
    table = html[html.index('id="runs"'):]
    assert table.index("20260102T000000Z-b") < table.index("20260101T000000Z-a")
    assert "FAIL" in html and html.count("<svg") == 2 and "fixture/off" in html


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
OFFLINE = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--enable-logging=stderr", "--v=0"]


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (.ci/run installs Debian's chromium)")
def test_report_and_index_render_in_headless_chromium_offline(tmp_path):
    run, _, _ = make_run(tmp_path)
    pages = {"report": render(run), "index": render_index(tmp_path)}
    for name, page in pages.items():
        profile = tmp_path / f"profile-{name}"
        dom = subprocess.run([CHROMIUM, *OFFLINE, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                             capture_output=True, text=True, timeout=60)
        assert dom.returncode == 0, dom.stderr[-2000:]
        assert dom.stdout.count("<svg") >= (6 if name == "report" else 2)
        assert "<polyline" in dom.stdout and (name == "index" or 'class="fault"' in dom.stdout)
        console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line or "Failed to load resource" in line]
        assert console == [], console
        shot = tmp_path / f"{name}.png"
        subprocess.run([CHROMIUM, *OFFLINE, f"--user-data-dir={profile}", "--window-size=1200,2400",
                        f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=60)
        assert shot.stat().st_size > 10_000
