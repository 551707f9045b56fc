"""Reports rendered from a stored fixture run (no broker, no Spark)."""

from html import unescape
import json
import re
import shutil
import subprocess

import pyarrow as pa
import pytest

from harness.analysis.anomalies import check_partition
from harness.report import load, write_index, write_report
from harness.report.load import LISTING_CAP
from harness.report.render import listing_line
from tests.stored_run import T0, iso, make_run, rewrite_summary


def html_of(folder):
    return write_report(folder).read_text()


def test_report_content_matches_the_run(tmp_path):
    folder, summary, faults = make_run(tmp_path)
    html = html_of(folder)
    table = html[html.index('id="comparison"'):html.index("</table>", html.index('id="comparison"'))]
    cells = re.findall(r'data-metric="(\w+)"[^>]*>([^<]*)<', table)
    assert cells, "no metric cells"
    for i, (metric, value) in enumerate(cells):
        variant = ("off", "on")[i % 2]
        assert value.replace(",", "") == str(summary["variants"][variant][metric]), (variant, metric)
    for variant in ("off", "on"):  # one shaded bar per fault, coloured by its kind, with a legend
        section = html[html.index(f"<h2>{variant}</h2>"):]
        first_chart = section[:section.index("</svg>")]
        assert first_chart.count('class="fault"') == sum(1 for f in faults if f["variant"] == variant)
        assert first_chart.count('data-kind="lost-acks"') == 2 and first_chart.count('data-kind="broker-pause"') == 1
        assert ">lost-acks</text>" in first_chart and ">broker-pause</text>" in first_chart
        assert "acks (by acknowledgement time)" in first_chart
    listing = html[html.index('id="listing-off"'):html.index("</pre>", html.index('id="listing-off"'))]
    runs = folder.read_table("off", "jump_back_runs").to_pylist()
    assert [line for line in listing.splitlines()[1:] if line] == [listing_line(r) for r in runs]
    assert "enable.idempotence" in html and html.count('class="fault-row"') == len(faults)


def test_first_line_says_pass_fail_or_allowed_and_why(tmp_path):
    folder, summary, _ = make_run(tmp_path / "a")
    assert re.search(r'id="headline">PASS: every check held<', html_of(folder))
    folder, summary, _ = make_run(tmp_path / "b", off_lost=12)
    first = re.search(r'id="headline">([^<]*)<', html_of(folder)).group(1)
    assert first.startswith("FAIL: off: lost = 12, expected == 0 (fatal)")
    folder, summary, _ = make_run(tmp_path / "c", off_lost=12, off_allow=["lost"])
    html = html_of(folder)
    assert re.search(r'id="headline">PASS with allowed anomalies: off: lost = 12 \(allowed by the experiment\)<', html)
    assert '<td class="allowed">allowed</td>' in html and 'data-metric="lost" class="allowed">12<' in html


def test_first_line_says_unknown_when_the_read_could_not_prove_it_reached_the_end(tmp_path):
    from harness.summary import build, variant_entry

    folder, summary, _ = make_run(tmp_path)
    on = {k: x for k, x in summary["variants"]["on"].items() if k not in ("expectations", "verdict", "allowed")}
    summary = build(summary["run_id"], summary["experiment"], "complete",
                    {**summary["variants"], "on": variant_entry({**on, "unseen": 4}, {}, [])},
                    {k: summary[k] for k in ("cluster", "seed", "started_at", "ended_at", "reason")})
    rewrite_summary(folder, summary)
    first = unescape(re.search(r'id="headline">([^<]*)<', html_of(folder)).group(1))
    assert summary["verdict"] == "unknown"
    assert first.startswith("UNKNOWN: the final read could not prove it reached every partition's end"), first
    assert "on: unseen = 4, expected == 0 (else unknown)" in first


def test_listing_reproduces_the_seed_articles_lines():
    # The article's consumer printed "Msg: m=65899 Last-acked=65929 JUMP BACK 30 DUPLICATE" for 31 records
    # re-read after 65929, and "Msg: m=37217 DUPLICATE" (no JUMP BACK) for a repeat of the value just read.
    values = list(range(65930)) + list(range(65899, 65930)) + [65930, 65931, 65931, 65932]
    log = pa.table({"partition": pa.array([0] * len(values), pa.int32()), "offset": list(range(len(values))),
                    "value": values})
    acks = pa.table({"partition": pa.array([0] * 65933, pa.int32()), "value": list(range(65933)),
                     "outcome": ["acked"] * 65933, "offset": [None] * 65933}).cast(
        pa.schema([("partition", pa.int32()), ("value", pa.int64()), ("outcome", pa.string()), ("offset", pa.int64())]))
    runs = check_partition(0, [acks], [log]).table("jump_back_runs").to_pylist()
    lines = [listing_line(r) for r in runs]
    assert lines[0].startswith("Msg: m=65899 Last-acked=65929 JUMP BACK 30 DUPLICATE  (p=0 offsets 65930-65960, "
                               "31 records)")
    assert lines[1].startswith("Msg: m=65931 DUPLICATE  (p=0")


def test_listing_is_capped_with_a_link_to_the_parquet(tmp_path):
    folder, _, _ = make_run(tmp_path, n_runs=LISTING_CAP + 25)
    html = html_of(folder)
    assert html.count("Msg: m=") == LISTING_CAP
    assert "25 more" in html and 'href="off/anomalies/jump_back_runs.parquet"' in html


def test_values_from_files_are_escaped(tmp_path):
    folder, summary, _ = make_run(tmp_path, producer_value="<script>alert(1)</script>")
    summary["reason"] = "<script>alert(2)</script>"
    rewrite_summary(folder, summary)
    html = html_of(folder)
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;script&gt;alert(2)" in html


def test_big_run_report_stays_small(tmp_path):
    folder, _, _ = make_run(tmp_path, n_runs=10_000, seconds=600)  # 10,000 jump-back runs, 1M+ records a variant
    assert write_report(folder).stat().st_size < 10 * 2**20


def test_index_lists_runs_newest_first_with_trend_and_safe_links(tmp_path):
    make_run(tmp_path, run_id="20260101T000000Z-a")
    later, summary, _ = make_run(tmp_path, run_id="20260102T000000Z-b", off_lost=3)
    summary["started_at"] = iso(T0 + 86400)
    summary["run_id"] = "javascript:alert(1)"  # a hostile summary must not become a live link
    rewrite_summary(later, summary)
    html = write_index(tmp_path).read_text()
    table = html[html.index('id="runs"'):]
    assert table.index("20260102T000000Z-b") < table.index("20260101T000000Z-a")
    assert ">fail<" in html and html.count("<svg") == 2 and "fixture/off" in html
    assert re.findall(r'href="([^"]*)"', html) == ["20260102T000000Z-b/index.html", "20260101T000000Z-a/index.html"]


def test_view_is_plain_data(tmp_path):
    folder, summary, _ = make_run(tmp_path)
    view = load(folder)
    json.dumps({k: v for k, v in view.items()}, default=str)  # nothing but data: render is pure over it
    assert view["verdict"] == "pass" and set(view["variants"]) == {"off", "on"}


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
OFFLINE = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--enable-logging=stderr", "--v=0"]


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (.ci/run installs Debian's chromium)")
def test_report_and_index_render_in_headless_chromium_offline(tmp_path):
    folder, _, _ = make_run(tmp_path)
    pages = {"report": write_report(folder), "index": write_index(tmp_path)}
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
        subprocess.run([CHROMIUM, *OFFLINE, f"--user-data-dir={profile}", "--window-size=1366,768",
                        f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=60)
        assert shot.stat().st_size > 10_000


def test_a_transactional_variant_gets_a_transactions_section_with_its_anomalies(tmp_path):
    import pyarrow.parquet as pq

    from harness.analysis.anomalies import TABLES
    from harness.formats import TRANSACTIONS_SCHEMA

    folder, summary, _ = make_run(tmp_path)
    rows = [{"txn": 0, "session": 0, "outcome": "committed", "error": None, "cause": None, "sends": 10, "ended_at": None},
            {"txn": 1, "session": 0, "outcome": "aborted", "error": None, "cause": "planned", "sends": 10,
             "ended_at": None},
            {"txn": 2, "session": 0, "outcome": "aborted", "error": None, "cause": "restart", "sends": 4,
             "ended_at": None},
            {"txn": 3, "session": 1, "outcome": "unknown", "error": "_TIMED_OUT", "cause": "error", "sends": 10,
             "ended_at": None}]
    pq.write_table(pa.Table.from_pylist(rows, schema=TRANSACTIONS_SCHEMA), folder.transactions_path("on"))
    (folder.uncommitted_log_path("on")).mkdir()
    pq.write_table(pa.table({"partition": pa.array([0] * 1034, pa.int32())}), folder.uncommitted_log_path("on") / "a.parquet")
    reads = [{"partition": 0, "value": 11, "offset": 12, "txn": 1}]
    tables = {t: folder.read_table("on", t) for t in TABLES if folder.read_table("on", t) is not None}
    tables["aborted_reads"] = pa.Table.from_pylist(reads, schema=pa.schema(TABLES["aborted_reads"]))
    folder.write_tables("on", tables)
    summary["variants"]["on"]["aborted_reads"] = 1
    rewrite_summary(folder, summary)
    html = html_of(folder)
    on = html[html.index("<h2>on</h2>"):]
    section = on[on.index('id="transactions-on"'):]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", section[:section.index("</table>")])
    # 4 transactions: 1 committed, 2 aborted, 1 unknown; causes planned, restart, error; records read
    # (read_committed: received + unexpected of the summary) / read_uncommitted (the second read's rows).
    assert cells == ["4", "1", "2", "1", "1", "1", "1", "1,000 / 1,034"]
    listed = on[on.index('id="not-committed-on"'):]
    listed = listed[:listed.index("</table>")]
    assert "restart" in listed and "_TIMED_OUT" in listed and "planned" not in listed  # planned aborts aside
    assert 'id="aborted_reads-on"' in on and "<h3>aborted reads (1)</h3>" in on
    assert 'id="transactions-off"' not in html  # a plain variant has no such section


def test_longest_unavailability_is_marked_on_the_acks_chart_and_variants_are_ranked(tmp_path):
    folder, summary, _ = make_run(tmp_path)
    summary["variants"]["on"].update(unavailable_s=1.5, unavailable_from_ms=(T0 + 103) * 1000,
                                     latency_ms={"p50": 3.0, "p95": 9.0, "p99": 1234.5, "max": 1500.0},
                                     produce_seconds=2.0)
    rewrite_summary(folder, summary)
    html = html_of(folder)
    on = html[html.index("<h2>on</h2>"):]
    acks_chart = on[:on.index("</svg>")]
    assert acks_chart.count('class="stretch"') == 1 and "longest unavailable: 1.5 s" in acks_chart
    off = html[html.index("<h2>off</h2>"):html.index("<h2>on</h2>")]
    assert 'class="stretch"' not in off  # no figure, no mark
    ranking = html[html.index('id="ranking"'):html.index("</table>", html.index('id="ranking"'))]
    rows = re.findall(r"<td>(\d)</td><td class=\"l nw\">(\w+)</td>", ranking)
    assert rows == [("1", "on"), ("2", "off")]  # off: 37 duplicates per 1,000 acked = 3,700 per 100k
    assert ">3,700<" in ranking and ">500<" in ranking and ">1,234<" in ranking  # on: 1,000 acked in 2 s


def write_acks(folder, variant, n=10_000):
    """A delivery log of n sends, 1 ms apart from T0: the 10 sent 4.1 s in (in make_run's 0.3 s fault at 4 s)
    unknown after 900 ms, the others acked in 2.5 ms."""
    import numpy as np
    import pyarrow.parquet as pq

    from harness.formats import ACKS_SCHEMA

    value = np.arange(n, dtype=np.int64)
    unknown = (value >= 4100) & (value < 4110)
    acks = pa.table({"partition": pa.array(np.zeros(n, np.int32)), "value": value,
                     "outcome": pa.array(np.where(unknown, "unknown", "acked")), "offset": value,
                     "error": pa.nulls(n, pa.string()), "sent_at": pa.array(T0 * 1000 + value, pa.int64()),
                     "latency_ms": pa.array(np.where(unknown, 900.0, 2.5)), "session": pa.array(np.zeros(n, np.int32)),
                     "txn": pa.nulls(n, pa.int64())},
                    schema=ACKS_SCHEMA.set(5, pa.field("sent_at", pa.int64()))).cast(ACKS_SCHEMA)
    pq.write_table(acks, folder.acks_path(variant))


def test_each_send_is_a_dot_coloured_by_outcome_over_the_faults_thinned_with_the_thinning_said(tmp_path):
    folder, _, _ = make_run(tmp_path)
    write_acks(folder, "off")
    html = html_of(folder)
    off = html[html.index("<h2>off</h2>"):html.index("<h2>on</h2>")]
    assert 'latency of each send' not in html[html.index("<h2>on</h2>"):]  # no delivery log, no cloud
    start = off.rindex("<svg", 0, off.index("latency of each send"))
    chart = off[start:off.index("</svg>", start)]
    dots = {o: d.count("M") for o, d in re.findall(r'data-outcome="(\w+)"[^>]* d="([^"]*)"', chart)}
    assert dots == {"acked": 3330, "unknown": 10}, dots  # every unknown send; 1 in 3 of the 9,990 acked
    assert "3,340 of 10,000 sends shown: 1 in 3 acked" in chart and "acked 9,990; rejected 0; unknown 10" in chart
    unknown_x = [float(x) for x in re.findall(r"M([\d.]+) ", re.search(r'data-outcome="unknown"[^>]* d="([^"]*)"',
                                                                       chart).group(1))]
    bands = [(float(x), float(w)) for x, w in re.findall(r'class="fault" data-kind="lost-acks"[^>]* x="([\d.]+)" '
                                                         r'y="[\d.]+" width="([\d.]+)"', chart)]
    assert len(bands) == 2 and all(w > 20 for _, w in bands)  # a 0.3 s fault is a band, not a hairline
    x0, w = bands[1]
    assert all(x0 <= x <= x0 + w for x in unknown_x)  # the unknown sends sit in the fault they met


def test_the_finding_comes_first_in_words_with_one_picture_and_the_verdict_in_one_line(tmp_path):
    folder, summary, _ = make_run(tmp_path)
    html = unescape(html_of(folder))
    finding = html[html.index('id="finding"'):html.index('id="checks"')]
    off = summary["variants"]["off"]
    assert (f"<b>off</b>: {off['sent']:,} sent, {off['acked']:,} confirmed, {off['received']:,} received; "
            f"{off['duplicates']:,} duplicates in {off['jump_back_runs']} jump-backs of up to {off['max_jump_back']:,}; "
            "nothing lost") in finding
    assert "<b>on</b>: " in finding and "no duplicate, no jump-back; nothing lost" in finding
    picture = finding[finding.index("<svg"):finding.index("</svg>")]
    assert "<desc>" in picture and f"duplicates: off {off['duplicates']:,}, on 0" in picture  # its text alternative
    assert "off</b>: all 8 fatal checks held" in finding
    assert "on</b>: all 8 fatal checks held; 1 expectation held (duplicates == 0)" in finding
    assert html.index('id="finding"') < html.index('id="comparison"')  # before every table
    assert '<details id="checks">' in html  # all held: the table of every check is folded


def test_the_checks_unfold_when_something_failed_or_was_allowed(tmp_path):
    folder, _, _ = make_run(tmp_path, off_lost=2, off_allow=("lost",))
    html = html_of(folder)
    assert '<details id="checks" open>' in html
    assert "2 confirmed values lost" in unescape(html)


def test_a_producer_only_run_shows_no_transaction_or_consumer_metric_and_says_so(tmp_path):
    folder, summary, _ = make_run(tmp_path)
    html = html_of(folder)
    for key in ("aborted_reads", "torn_transactions", "zombie_writes_visible", "lost_committed", "reprocessed",
                "skipped", "processed"):
        assert f'data-metric="{key}"' not in html, key
    said = html[html.index('id="not-measured"'):html.index("</p>", html.index('id="not-measured"'))]
    assert re.search(r"not measured here: aborted reads, [^;]*zombie writes visible \(no variant sends in "
                     r"transactions\); reprocessed, [^;]*processed \(no variant runs a consumer group\)", said), said
    partitions = html[html.index('class="partitions"'):html.index("</table>", html.index('class="partitions"'))]
    assert "aborted reads" not in partitions and "duplicates" in partitions


def test_a_transactional_run_shows_the_transaction_metrics(tmp_path):
    folder, summary, _ = make_run(tmp_path)
    summary["variants"]["on"]["transactions"] = {"committed": 10, "aborted": 1, "unknown": 0}
    rewrite_summary(folder, summary)
    html = html_of(folder)
    assert 'data-metric="aborted_reads"' in html and 'data-metric="torn_transactions"' in html
    assert "aborted reads" not in html[html.index('id="not-measured"'):] if 'id="not-measured"' in html else True
    row = html[html.index('data-metric="aborted_reads"') - 200:html.index("</tr>", html.index('data-metric="aborted_reads"'))]
    assert row.count('data-metric="aborted_reads"') == 2 and ">-<" in row  # off sends no transactions: "-"


def test_a_consumer_variant_shows_the_consumer_metrics_and_the_other_variant_dashes(tmp_path, capsys):
    from harness.terminal import print_summary

    folder, summary, _ = make_run(tmp_path)
    summary["variants"]["on"]["consumer"] = {"group": "g", "members": 2}
    for key in ("reprocessed", "skipped", "processed"):
        summary["variants"]["on"][key] = 7
    rewrite_summary(folder, summary)
    html = html_of(folder)
    row = html[html.index('data-metric="reprocessed"') - 200:html.index("</tr>", html.index('data-metric="reprocessed"'))]
    assert re.findall(r'data-metric="reprocessed"[^>]*>([^<]*)<', row) == ["-", "7"]
    assert "reprocessed" not in html[html.index('id="not-measured"'):] and "aborted reads" in html[
        html.index('id="not-measured"'):]
    print_summary(summary)
    out = capsys.readouterr().out
    table, said = out.split("not measured here")
    assert re.search(r"reprocessed +│ +- │ +7 │", table) and "aborted reads" in said and "reprocessed" not in said
    assert "(no variant sends in transactions)" in said and "consumer group" not in said


def test_the_cli_table_leaves_out_what_cannot_apply(tmp_path, capsys):
    from harness.terminal import print_summary

    _, summary, _ = make_run(tmp_path)
    print_summary(summary)
    out = capsys.readouterr().out
    assert "aborted reads" not in out.split("not measured here")[0] and "not measured here: aborted reads" in out
    assert "off: all 8 fatal checks held" in out and "on: all 8 fatal checks held; 1 expectation held" in out
    summary["variants"]["on"]["transactions"] = {"committed": 3}
    print_summary(summary)
    out = capsys.readouterr().out
    assert "aborted reads" in out.split("not measured here")[0]
    _, summary, _ = make_run(tmp_path / "failed", off_lost=2)
    print_summary(summary)
    out = capsys.readouterr().out  # the one line is headed by the variant's verdict, never pass when one failed
    assert re.search(r"FAIL +off: 7 of 8 fatal checks held", out) and re.search(r"FAIL +off: lost == 0", out), out
    assert re.search(r"pass +on: all 8 fatal checks held", out), out


def test_fault_rows_are_seconds_from_the_start_with_their_lateness(tmp_path):
    folder, _, faults = make_run(tmp_path)
    records = [{**f, "applied_offset": f["planned_at"] + 0.35, "late_s": 0.35, "held_s": 0.3} for f in faults]
    folder.faults_path.write_text("")
    folder.append_faults(records)
    html = html_of(folder)
    table = html[html.index('id="faults"'):html.index("</table>", html.index('id="faults"'))]
    assert "<th>applied at (s)</th><th>late (s)</th>" in table and ">1.35<" in table and 'class="bad">0.35<' in table
    assert f">{faults[0]['applied_at']}<" not in table  # clock times only on hover (title), never wrapping the row


def test_compare_puts_two_runs_side_by_side_and_refuses_a_folder_that_is_not_a_run(tmp_path):
    from click.testing import CliRunner

    from harness.cli import main

    a, summary, _ = make_run(tmp_path / "out", run_id="20260101T000000Z-fixture-aaaaaa")
    b, _, _ = make_run(tmp_path / "out", run_id="20260102T000000Z-fixture-bbbbbb", off_lost=3, off_allow=("lost",))
    write_index(tmp_path / "out")
    result = CliRunner().invoke(main, ["compare", str(a.path), str(b.path)])
    assert result.exit_code == 0, result.output
    [page] = (tmp_path / "out").glob("compare-*.html")
    html = page.read_text()
    assert "20260101T000000Z-fixture-aaaaaa" in html and "20260102T000000Z-fixture-bbbbbb" in html
    off = html[html.index('id="compare-off"'):html.index("</table>", html.index('id="compare-off"'))]
    lost_row = off[off.index(">lost"):off.index("</tr>", off.index(">lost"))]
    assert lost_row.count('class="differs"') == 2 and ">3<" in lost_row  # the difference highlighted
    assert page.name in (tmp_path / "out" / "index.html").read_text()  # the runs index links it
    assert f"page: {page}" in result.output
    printed = result.output[result.output.index("\noff\n"):result.output.index("\non\n")]  # one table per variant
    assert re.search(r"lost +│ +0 │ +3 │ differs", printed) and not re.search(r"sent .*differs", printed)
    result = CliRunner().invoke(main, ["compare", str(a.path), str(tmp_path)])
    assert result.exit_code == 2 and f"{tmp_path}: not a run folder" in result.output
    result = CliRunner().invoke(main, ["compare", str(a.path), str(tmp_path / "gone")])
    assert result.exit_code == 2 and f"{tmp_path / 'gone'}: no such run folder" in result.output
    (tmp_path / "file").write_text("")
    result = CliRunner().invoke(main, ["compare", str(a.path), str(b.path), "--out", str(tmp_path / "file" / "x.html")])
    assert result.exit_code == 2 and f"--out {tmp_path / 'file'}: not a writable folder" in result.output, result.output


PROBE = """<script>
const box = e => e ? Math.round(e.getBoundingClientRect().bottom) : -1;
const wide = [...document.querySelectorAll('table, svg, pre')].filter(t => t.getBoundingClientRect().right > innerWidth);
document.title = JSON.stringify({scroll: document.documentElement.scrollWidth, width: innerWidth,
  wide: wide.map(t => t.tagName + '#' + t.id), tables: document.querySelectorAll('table').length,
  finding: box([...document.querySelectorAll('p.finding')].pop()), picture: box(document.querySelector('#finding ~ svg')),
  verdict: box(document.querySelector('#verdict-line'))});
</script>"""


def measured(page, profile):
    """At 1366x768 in headless Chromium: a copy of the page (beside it) with a measuring script appended (the
    page itself has none) reports the page's width, the elements wider than the window and where the
    finding, the picture and the verdict line end."""
    probe = page.with_name("probe-" + page.name)
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = subprocess.run([CHROMIUM, *OFFLINE, f"--user-data-dir={profile}", "--window-size=1366,768",
                          "--virtual-time-budget=2000", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=60)
    probe.unlink()
    assert dom.returncode == 0, dom.stderr[-2000:]
    return json.loads(unescape(re.search(r"<title>(.*?)</title>", dom.stdout, re.S).group(1)))


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (.ci/run installs Debian's chromium)")
def test_on_a_laptop_screen_the_finding_is_on_the_first_screen_and_no_table_scrolls_sideways(tmp_path):
    """The report, the runs index and a comparison at 1366x768: nothing wider than the window; the report's
    finding, its picture and the verdict line on the first screen."""
    from harness.report import write_compare

    out = tmp_path / "out"
    a, _, _ = make_run(out, n_runs=40)
    write_acks(a, "off")  # the latency cloud, the widest chart
    b, _, _ = make_run(out, n_runs=3, run_id="20260102T000000Z-fixture-bbbbbb", off_lost=2, off_allow=("lost",))
    pages = {"report": write_report(a), "index": write_index(out),
             "compare": write_compare([a, b], out / "compare-ab.html")[0]}
    for name, page in pages.items():
        found = measured(page, tmp_path / "profile")
        assert found["width"] == 1366 and found["scroll"] <= found["width"] and found["wide"] == [], (name, found)
        assert found["tables"] >= 1, (name, found)  # the page was measured, not an error page
    found = measured(pages["report"], tmp_path / "profile")
    assert 0 < found["finding"] <= 768 and 0 < found["picture"] <= 768 and 0 < found["verdict"] <= 768, found


def test_a_page_lists_at_most_the_fault_cap_those_that_went_wrong_first(tmp_path):
    """A run of 2 × 10,000 faults (the bound) made a page of 100+ MB listing each; the page shows FAULT_CAP rows,
    says how many of how many, and keeps the late one near the end among them."""
    from harness.report.load import FAULT_CAP

    folder, _, _ = make_run(tmp_path)
    rows = [{"variant": v, "id": k, "kind": "lost-acks", "target": "all", "planned_at": k * 0.01,
             "planned_duration": 0.005, "params": {}, "outcome": "healed", "applied_at": iso(T0 + k * 0.01),
             "healed_at": iso(T0 + k * 0.01 + 0.005)} for v in ("off", "on") for k in range(1_500)]
    rows[-1] = {**rows[-1], "deviation": "applied 0.9 s late", "id": 1_499}
    folder.faults_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    html = write_report(folder).read_text()
    assert html.count('class="fault-row"') == FAULT_CAP < len(rows)
    assert f"{FAULT_CAP} of {len(rows)} faults shown" in html and "applied 0.9 s late" in html


def test_a_failed_run_that_kept_its_brokers_logs_links_the_evidence_command_at_the_first_affected_offset(tmp_path):
    folder, summary, _ = make_run(tmp_path, off_lost=12)  # off lost values 0..11 at offsets 0..11, partition 0
    assert 'id="evidence"' not in html_of(folder)  # nothing kept: no command to give
    rewrite_summary(folder, {**summary, "broker_data": {"path": str(folder.path / "kafka-data"),
                                                        "why": "the verdict is fail", "bytes": 1}})
    html = unescape(html_of(folder))
    assert "The brokers' log folders were kept (the verdict is fail)" in html
    assert (f"off: first lost at partition 0 offset 0: kafka-chaos evidence {folder.path} --variant off "
            "--partition 0 --offsets 0-2") in html
    assert "--variant on" not in html  # the variant that passed has nothing to show


def test_a_partition_left_behind_by_an_open_transaction_renders_as_at_least_the_stall(tmp_path):
    # run.py writes lso_stalled as {partition: [last stable offset, high watermark]}; the schema once said true/false
    # and the report of such a run (hanging-transaction, 2026-11-27) failed to render.
    folder, summary, _ = make_run(tmp_path)
    summary["variants"]["off"].update(lso_stall_s=15.0, lso_stalled={"0": [418, 6878]})
    rewrite_summary(folder, summary)
    assert "\u2265 15.0" in unescape(html_of(folder))


def test_a_failed_run_shows_its_brokers_warnings_around_the_fault_nearest_its_first_affected_send(tmp_path):
    from datetime import datetime, timezone

    import pyarrow.parquet as pq

    from harness.formats import ACKS_SCHEMA

    folder, summary, _ = make_run(tmp_path, off_lost=2)  # off lost values 0 and 1 at offsets 0 and 1, partition 0
    sent = [datetime.fromtimestamp(T0 + 3.9 + v, tz=timezone.utc) for v in (0, 1)]
    pq.write_table(pa.Table.from_pylist(
        [{"partition": 0, "value": v, "outcome": "acked", "offset": v, "error": None, "sent_at": sent[v],
          "latency_ms": 1.0, "session": 0, "txn": None} for v in (0, 1)], schema=ACKS_SCHEMA),
        folder.acks_path("off"))

    def line(at, level, text):  # log4j's format, in the machine's local time as a broker writes it
        return f"[{datetime.fromtimestamp(T0 + at).strftime('%Y-%m-%d %H:%M:%S,%f')[:-3]}] {level} {text}\n"

    folder.broker_log(0).write_text(line(3.5, "WARN", "fetch failed before") + line(4.1, "INFO", "just info")
                                    + "  at a.stack.Frame(Line.java:1)\n" + line(8.0, "ERROR", "too late"))
    folder.broker_log(1).write_text(line(4.2, "ERROR", "truncating [kc-x-0]"))
    html = unescape(re.sub(r"<[^>]+>", "", html_of(folder)))
    # value 0 was sent at 3.9 s: the nearest fault is lost-acks #1 at 4.0 s (not #0 at 1.0 s nor #2 at 7.5 s)
    assert "off: first lost at partition 0 offset 0; the fault nearest in time to its value's send: lost-acks #1" in html
    shown = re.findall(r"broker-\d: \[[^\]]+\] \w+ [^\n]+", html)
    assert [s.split("] ", 1)[1] for s in shown] == ["WARN fetch failed before", "ERROR truncating [kc-x-0]"]
    assert "on: first" not in html  # the variant that passed has nothing to show
    # a log that is a link out of the folder (a folder from elsewhere) is never read
    outside = tmp_path / "elsewhere.log"
    outside.write_text(line(4.3, "ERROR", "a secret from outside"))
    folder.broker_log(2).symlink_to(outside)
    html = unescape(re.sub(r"<[^>]+>", "", html_of(folder)))
    assert "a secret from outside" not in html and "ERROR truncating [kc-x-0]" in html
