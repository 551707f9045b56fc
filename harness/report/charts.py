"""Charts for the HTML report as inline SVG strings.

Why static SVG written here rather than a charting library: the report must open
offline, be printable, forwardable as one file, and stay small with a million records;
inline SVG needs no script, no bundled JS asset and no network, renders the same in
every browser and in print, and the few chart shapes we need (a time series with
shaded fault periods, a histogram, a trend line) take a few dozen lines. Every text
that reaches the SVG is escaped.
"""

from __future__ import annotations

import math

from markupsafe import Markup, escape

from ..faults.kind import OTHER_COLOR
from ..faults.registry import KINDS

W, H = 720, 180
PAD_L, PAD_R, PAD_T, PAD_B = 56, 12, 22, 26
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]


def _scale(lo: float, hi: float, a: float, b: float):
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def _frame(title: str, y_max: float, x_labels: tuple[str, str], body: list[str]) -> Markup:
    plot_b = H - PAD_B
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<text x="{PAD_L}" y="14" class="title">{escape(title)}</text>',
        f'<line x1="{PAD_L}" y1="{plot_b}" x2="{W - PAD_R}" y2="{plot_b}" class="axis"/>',
        f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{plot_b}" class="axis"/>',
        f'<text x="{PAD_L - 4}" y="{PAD_T + 8}" class="tick" text-anchor="end">{_num(y_max)}</text>',
        f'<text x="{PAD_L - 4}" y="{plot_b}" class="tick" text-anchor="end">0</text>',
        f'<text x="{PAD_L}" y="{H - 6}" class="tick">{escape(x_labels[0])}</text>',
        f'<text x="{W - PAD_R}" y="{H - 6}" class="tick" text-anchor="end">{escape(x_labels[1])}</text>',
        *body,
        "</svg>",
    ]
    return Markup("\n".join(parts))


def _num(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 or float(v).is_integer() else f"{v:.2g}"


def fault_color(kind: str) -> str:
    """One colour per fault kind (its own: faults/kinds/), the same in every chart and legend."""
    return KINDS[kind].color if kind in KINDS else OTHER_COLOR


def fault_label(kind: str) -> str:
    """How the legend names a fault kind (its own label: faults/kinds/)."""
    return KINDS[kind].label if kind in KINDS else kind


def timeline(title: str, t0: float, t1: float, lines: dict[str, list[tuple[float, float]]],
             faults: list[dict], stretch: dict | None = None) -> Markup:
    """Lines over time (seconds since t0) with each fault ({start, end, kind, label}) shaded over its
    active period in its kind's colour, and a legend of the kinds shown. `stretch` ({start, end, label}):
    a span marked under the plot with its label (the longest unavailability)."""
    x = _scale(0, max(t1 - t0, 1e-9), PAD_L, W - PAD_R)
    y_max = max([v for pts in lines.values() for _, v in pts] + [1])
    y = _scale(0, y_max, H - PAD_B, PAD_T)
    body = []
    if stretch is not None:
        x0, x1 = x(max(0.0, stretch["start"] - t0)), x(min(t1 - t0, stretch["end"] - t0))
        base = H - PAD_B - 4
        body.append(f'<g class="stretch"><line x1="{x0:.1f}" y1="{base}" x2="{x1:.1f}" y2="{base}" stroke="#111" '
                    f'stroke-width="4"/><text x="{(x0 + x1) / 2:.1f}" y="{base - 6}" class="legend" '
                    f'text-anchor="middle">{escape(stretch["label"])}</text>'
                    f'<title>{escape(stretch["label"])}</title></g>')
    body += _fault_bands(x, t0, t1, faults, PAD_T, H - PAD_B)
    for i, (name, pts) in enumerate(lines.items()):
        color = COLORS[i % len(COLORS)]
        coords = " ".join(f"{x(t - t0):.1f},{y(v):.1f}" for t, v in pts)
        dash = ' stroke-dasharray="5,3"' if i else ""  # later lines dashed: they may lie on the first
        body.append(f'<polyline class="series" fill="none" stroke="{color}" stroke-width="1.5"{dash} points="{coords}">'
                    f'<title>{escape(name)}</title></polyline>')
        body.append(f'<text x="{W - PAD_R - 4}" y="{PAD_T + 12 + 12 * i}" class="legend" text-anchor="end" '
                    f'fill="{color}">{escape(name)}</text>')
    body += _fault_legend(faults)
    return _frame(title, y_max, ("0 s", f"{t1 - t0:.0f} s"), body)


def _fault_bands(x, t0: float, t1: float, faults: list[dict], top: float, bottom: float) -> list[str]:
    """Each fault ({start, end, kind, label}, epoch seconds) shaded over its active period in its kind's colour
    (at least 1 px wide), its label on hover."""
    out = []
    for f in faults:
        x0, x1 = x(max(0.0, f["start"] - t0)), x(min(t1 - t0, max(f["start"], f["end"]) - t0))
        out.append(f'<rect class="fault" data-kind="{escape(f["kind"])}" fill="{fault_color(f["kind"])}" '
                   f'x="{x0:.1f}" y="{top}" width="{max(1.0, x1 - x0):.1f}" height="{bottom - top}">'
                   f'<title>{escape(f["label"])}</title></rect>')
    return out


def _fault_legend(faults: list[dict]) -> list[str]:
    out = []
    for i, kind in enumerate(sorted({f["kind"] for f in faults})):
        lx = PAD_L + 6 + 110 * i
        out.append(f'<rect class="legend-key" x="{lx}" y="{PAD_T + 2}" width="9" height="9" '
                   f'fill="{fault_color(kind)}"/><text x="{lx + 12}" y="{PAD_T + 10}" class="legend">'
                   f'{escape(fault_label(kind))}</text>')
    return out


CLOUD_W, CLOUD_H = 1060, 260  # the latency cloud spans the page's width: a 0.3 s fault shows in a minute's run
OUTCOME_COLORS = {"acked": "#1f77b4", "rejected": "#9467bd", "unknown": "#111111"}


def cloud(title: str, t0: float, t1: float, data: dict, faults: list[dict]) -> Markup:
    """Every send (or 1 in k, as `data` says: load._latency_cloud) as a dot at its send time and latency (ms,
    log scale), coloured by outcome, over the faults shaded by kind. The title says the thinning; a <desc>
    gives the counts and the largest latency as the text alternative."""
    points, counts, every = data["points"], data["counts"], data["every"]
    shown = {o: sum(1 for p in points if p[2] == o) for o in counts}
    thinned = [f"1 in {every[o]:,} {o}" for o in counts if counts[o] and every.get(o, 1) > 1]
    note = (f"{len(points):,} of {data['sends']:,} sends shown: " + ", ".join(thinned) + " (every other outcome "
            "in full)" if thinned else f"all {data['sends']:,} sends")
    top_ms = max([p[1] for p in points] + [1.0])
    lo = 10 ** math.floor(math.log10(max(min([p[1] for p in points if p[1] > 0] + [1.0]), 0.1)))
    hi = 10 ** math.ceil(math.log10(max(top_ms, lo * 10)))
    left, right, top, bottom = PAD_L, CLOUD_W - PAD_R, PAD_T + 14, CLOUD_H - PAD_B
    x = _scale(0, max(t1 - t0, 1e-9), left, right)
    ly = _scale(math.log10(lo), math.log10(hi), bottom, top)
    y = lambda ms: ly(math.log10(max(ms, lo)))  # noqa: E731
    desc = (f"{title}: {note}; " + "; ".join(f"{o} {counts[o]:,}" for o in counts) +
            f"; the largest latency shown {top_ms:,.0f} ms")
    body = [f'<desc>{escape(desc)}</desc>', *_fault_bands(x, t0, t1, faults, top, bottom)]
    decade = lo
    while decade <= hi:
        body.append(f'<line x1="{left}" y1="{y(decade):.1f}" x2="{right}" y2="{y(decade):.1f}" stroke="#eee"/>'
                    f'<text x="{left - 4}" y="{y(decade) + 3:.1f}" class="tick" text-anchor="end">'
                    f'{_num(decade)} ms</text>')
        decade *= 10
    span = max(t1 - t0, 1e-9)
    step = next(s for s in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, math.inf)
                if span / s <= 12)
    for k in range(1, int(span / step) + 1) if step < math.inf else ():
        body.append(f'<text x="{x(k * step):.1f}" y="{CLOUD_H - 6}" class="tick" text-anchor="middle">'
                    f'{k * step:g} s</text>' if span - k * step > step / 2 else "")
    for outcome, color in OUTCOME_COLORS.items():  # acked first: the rarer outcomes drawn over it
        d = "".join(f"M{x(t - t0):.1f} {y(ms):.1f}h0" for t, ms, o in points if o == outcome)
        if d:
            body.append(f'<path class="sends" data-outcome="{outcome}" stroke="{color}" stroke-width="3" '
                        f'stroke-linecap="round" stroke-opacity=".6" fill="none" d="{d}">'
                        f'<title>{escape(outcome)}: {shown[outcome]:,} shown of {counts[outcome]:,}</title></path>')
    for i, outcome in enumerate(o for o in OUTCOME_COLORS if counts.get(o)):
        body.append(f'<text x="{right - 4}" y="{top + 10 + 12 * i}" class="legend" text-anchor="end" '
                    f'fill="{OUTCOME_COLORS[outcome]}">{escape(outcome)} {counts[outcome]:,}</text>')
    body += _fault_legend(faults)
    return Markup("\n".join([
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {CLOUD_W} {CLOUD_H}" width="{CLOUD_W}" '
        f'height="{CLOUD_H}" role="img" aria-label="{escape(desc)}">',
        f'<text x="{left}" y="14" class="title">{escape(title)}</text>',
        f'<text x="{right}" y="14" class="tick" text-anchor="end">{escape(note)}</text>',
        f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" class="axis"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" class="axis"/>',
        f'<text x="{left}" y="{CLOUD_H - 6}" class="tick">0 s</text>',
        f'<text x="{right}" y="{CLOUD_H - 6}" class="tick" text-anchor="end">{t1 - t0:.1f} s</text>',
        *body, "</svg>"]))


def histogram(title: str, values: list[int], bins: int = 20) -> Markup:
    """Counts of values in log-spaced bins (jump-back sizes span 0 to thousands; 0 has its own bin)."""
    if not values:
        return _frame(title, 1, ("", ""), [f'<text x="{W / 2}" y="{H / 2}" class="tick" '
                                           f'text-anchor="middle">none</text>'])
    top = max(values)
    edges = sorted({0, 1} | {max(1, round(top ** (k / bins))) for k in range(bins + 1)} | {top + 1})
    counts = [sum(1 for v in values if lo <= v < hi) for lo, hi in zip(edges, edges[1:])]
    y_max = max(counts)
    y = _scale(0, y_max, H - PAD_B, PAD_T)
    bw = (W - PAD_L - PAD_R) / len(counts)
    body = []
    for i, (c, lo, hi) in enumerate(zip(counts, edges, edges[1:])):
        body.append(f'<rect class="bar" x="{PAD_L + i * bw + 1:.1f}" y="{y(c):.1f}" width="{max(1.0, bw - 2):.1f}" '
                    f'height="{H - PAD_B - y(c):.1f}"><title>size {lo}-{hi - 1}: {c}</title></rect>')
    return _frame(title, y_max, ("size 0", f"size {top}"), body)


def trend(title: str, runs: list[str], lines: dict[str, list[float | None]]) -> Markup:
    """One point per run (oldest left), one line per series; gaps where a run lacks the series."""
    x = _scale(0, max(len(runs) - 1, 1), PAD_L, W - PAD_R)
    y_max = max([v for vs in lines.values() for v in vs if v is not None] + [1])
    y = _scale(0, y_max, H - PAD_B, PAD_T)
    body = []
    for i, (name, values) in enumerate(lines.items()):
        color = COLORS[i % len(COLORS)]
        pts = [(x(k), y(v)) for k, v in enumerate(values) if v is not None]
        body.append(f'<polyline class="series" fill="none" stroke="{color}" stroke-width="1.5" '
                    f'points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in pts)}"><title>{escape(name)}</title></polyline>')
        body += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="2.5" fill="{color}"/>' for a, b in pts]
        body.append(f'<text x="{W - PAD_R - 4}" y="{PAD_T + 12 + 12 * i}" class="legend" text-anchor="end" '
                    f'fill="{color}">{escape(name)}</text>')
    labels = (runs[0], runs[-1]) if runs else ("", "")
    return _frame(title, y_max, labels, body)


def window_cdf(title: str, distances: list[float], unit: str, marks: dict[str, float] | None = None) -> Markup:
    """The share of repeats a dedup window of each size catches (the cumulative distribution of the
    distances, a step line rising to 100 %), with each mark ({"p99": 120}) drawn as a dashed line."""
    if not distances:
        return _frame(title, 100, ("", ""), [f'<text x="{W / 2}" y="{H / 2}" class="tick" '
                                             f'text-anchor="middle">no repeats</text>'])
    d = sorted(distances)
    n, top = len(d), max(d[-1], 1e-9)
    x = _scale(0, top, PAD_L, W - PAD_R)
    y = _scale(0, 100, H - PAD_B, PAD_T)
    step = max(1, n // 400)  # at most ~400 steps: the page stays small with a million repeats
    points = [(0.0, 0.0)]
    for i in list(range(0, n, step)) + [n - 1]:
        points += [(d[i], points[-1][1]), (d[i], 100.0 * (i + 1) / n)]
    coords = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in points)
    body = [f'<polyline class="series" fill="none" stroke="{COLORS[0]}" stroke-width="1.5" points="{coords}">'
            f'<title>{escape(title)}</title></polyline>']
    for i, (name, at) in enumerate((marks or {}).items()):
        color = COLORS[(i + 1) % len(COLORS)]
        body.append(f'<line class="mark" x1="{x(at):.1f}" y1="{PAD_T}" x2="{x(at):.1f}" y2="{H - PAD_B}" '
                    f'stroke="{color}" stroke-dasharray="4,3"><title>{escape(name)}: {_num(at)} {escape(unit)}'
                    f'</title></line>')
        body.append(f'<text x="{W - PAD_R - 4}" y="{PAD_T + 12 + 12 * i}" class="legend" text-anchor="end" '
                    f'fill="{color}">{escape(name)} {_num(at)} {escape(unit)}</text>')
    return _frame(title + " (% of repeats caught)", 100, ("0", f"{_num(top)} {unit}"), body)


def compare(title: str, names: list[str], panels: list[tuple[str, list[float | None]]]) -> Markup:
    """The variants side by side: one panel per measure (its label, one value per variant in `names`' order),
    a horizontal bar per variant with its value written beside it. The title and a <desc> listing every
    value are the chart's text alternative."""
    label_w, gap, bar_h = 150, 18, 16
    height = PAD_T + 18 + len(names) * (bar_h + 6) + 8
    panel_w = (W - label_w - PAD_R - gap * (len(panels) - 1)) / max(len(panels), 1)
    def text(v) -> str:
        return "-" if v is None else f"{v:,}" if isinstance(v, int) else f"{v:.3g}"

    desc = "; ".join(f"{label}: " + ", ".join(f"{n} {text(v)}" for n, v in zip(names, vals)) for label, vals in panels)
    body = [f'<desc>{escape(desc)}</desc>']
    for i, name in enumerate(names):
        y = PAD_T + 18 + i * (bar_h + 6)
        body.append(f'<text x="{label_w - 6}" y="{y + bar_h - 4}" class="legend" text-anchor="end">{escape(name)}</text>')
    for k, (label, values) in enumerate(panels):
        x0 = label_w + k * (panel_w + gap)
        top = max([v for v in values if v is not None] + [0]) or 1
        body.append(f'<text x="{x0:.1f}" y="{PAD_T + 8}" class="legend">{escape(label)}</text>')
        body.append(f'<line x1="{x0:.1f}" y1="{PAD_T + 12}" x2="{x0:.1f}" y2="{height - 6}" class="axis"/>')
        for i, v in enumerate(values):
            y = PAD_T + 18 + i * (bar_h + 6)
            width = 0 if not v else max(1.0, (panel_w - 60) * v / top)
            body.append(f'<rect class="bar" fill="{COLORS[i % len(COLORS)]}" x="{x0:.1f}" y="{y}" width="{width:.1f}" '
                        f'height="{bar_h}"><title>{escape(names[i])}: {escape(label)} {text(v)}</title></rect>')
            body.append(f'<text x="{x0 + width + 4:.1f}" y="{y + bar_h - 4}" class="tick">{text(v)}</text>')
    return Markup("\n".join([
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height}" width="{W}" '
        f'height="{height}" role="img" aria-label="{escape(title)}: {escape(desc)}">',
        f'<title>{escape(title)}</title>', f'<text x="{PAD_L}" y="14" class="title">{escape(title)}</text>',
        *body, "</svg>"]))
