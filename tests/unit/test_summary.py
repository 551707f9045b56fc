from harness import summary


def metrics(**over):
    base = dict(sent=10, acked=8, rejected=1, unknown=1, received=9, unique=8, duplicates=1, jump_back_runs=1,
                max_jump_back=1, lost=0, missing=1, received_unacked=1, reorders=0, unexpected=0)
    return {**base, **over}


def test_expectations_pass_and_fail():
    s = summary.build("r", "e", "complete", {"on": metrics(), "off": metrics()},
                      {"on": {"duplicates": 0, "lost": 0}, "off": {"duplicates": "> 0"}})
    on = {e["metric"]: e["passed"] for e in s["variants"]["on"]["expectations"]}
    assert on == {"duplicates": False, "lost": True}
    assert s["variants"]["off"]["expectations"][0]["passed"] is True
    assert summary.passed(s) is False
    s2 = summary.build("r", "e", "complete", {"on": metrics(duplicates=0)}, {"on": {"duplicates": 0}})
    assert summary.passed(s2) is True


def test_accounting():
    assert summary.accounting_holds(metrics())
    assert not summary.accounting_holds(metrics(unknown=0))


def test_write_is_json(tmp_path):
    import json

    s = summary.build("r", "e", "complete", {"on": metrics()}, {})
    summary.write(tmp_path / "summary.json", s)
    assert json.loads((tmp_path / "summary.json").read_text())["variants"]["on"]["sent"] == 10
