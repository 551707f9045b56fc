"""The README's Words section says what the metric registry says, for every metric."""

from pathlib import Path

from harness.analysis.metrics import FIGURES, METRICS

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_every_metric_is_in_the_readme_words_exactly_as_defined():
    words = README[README.index("## Words"):README.index("## Experiments")]
    for m in METRICS:
        assert f"- **{m.label}** (`{m.key}`{', fatal' if m.fatal else ''}): {m.meaning}" in words, m.key
    assert words.count("\n- **") == len(METRICS) + len(FIGURES)


def test_every_timing_figure_is_in_the_readme_words():
    words = README[README.index("## Words"):README.index("## Experiments")]
    for f in FIGURES:
        assert f"- **{f.label}** (`{f.key}`): {f.meaning}" in words, f.key
