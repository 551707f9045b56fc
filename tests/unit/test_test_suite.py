"""A check of the checkers: no test asserts what a loaded machine decides instead of the code.

CI runs on the 2-core machine that just ran the session, often still busy, so a test must pass or fail on the
code alone. Three shapes are refused, each named with its file, line and test:

- **an upper bound on wall-clock time** in an assert: a real clock read (`time.monotonic()`, `time.time()`,
  `time.perf_counter()`, or a name or helper that holds one), or, outside tests/unit (whose nemesis and group
  tests run on tests/fakeclock.py's virtual clock), a journal's measured time (`late_s`, `held_s`, `heal_s`,
  `applied_offset`, `produce_seconds`, ...), on the small side of `<`, `<=`, `>` or `>=` against a constant. A
  lower bound stays allowed: a delay or a hold that must last at least its planned time is a property of the
  code, and load only lengthens it. A deadlock guard (`time.monotonic() < deadline`) is a wait, not a bound.
- **a fixed sleep that waits for a state** (integration, spark, kafka and compose tiers): `time.sleep(N)` in
  a test's own body, outside a polling loop; wait for the state instead (`wait_for`).
- **a wait that gives up early** (the same tiers): `wait_for(..., timeout=N)` with N under 30 s. A wait's
  timeout says "never happened", so it must be far beyond anything load can add.

Timeliness itself (how late faults land, how fast the proxy is) is measured in bench/, never asserted.
"""

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
REAL_CLOCKS = {"monotonic", "time", "perf_counter", "monotonic_ns", "time_ns", "perf_counter_ns"}
# summary.json's and faults.jsonl's fields that are wall-clock measurements of a real run
JOURNAL_TIMES = {"late_s", "held_s", "heal_s", "applied_offset", "healed_offset", "produce_seconds", "seconds",
                 "lso_stall_s", "unavailable_s", "elapsed", "took", "duration_s"}
ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
MIN_WAIT_S = 30
REAL_TIERS = {"integration", "spark", "kafka", "compose"}


def _is_real_clock_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in REAL_CLOCKS
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "time")


def _mentions(node: ast.AST, pred) -> bool:
    return any(pred(n) for n in ast.walk(node))


def _constant(node: ast.AST) -> bool:
    """A number, an UPPER_CASE name, or arithmetic of those (what a bound is written with)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.Name):
        return node.id.isupper()
    if isinstance(node, ast.Attribute):
        return node.attr.isupper()
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    if isinstance(node, ast.BinOp):
        return _constant(node.left) and _constant(node.right)
    return False


class _Module:
    """One test file: which names and helpers hold a real clock's reading."""

    def __init__(self, tree: ast.Module, journal: bool):
        self.journal = journal
        self.clock_helpers = {f.name for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                              and any(isinstance(r, ast.Return) and r.value is not None
                                      and _mentions(r.value, _is_real_clock_call) for r in ast.walk(f))}

    def timed_names(self, func: ast.AST) -> set[str]:
        names: set[str] = set()
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and self.is_timed(node.value, names):
                for target in node.targets:
                    names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        return names

    def is_timed(self, node: ast.AST, names: set[str]) -> bool:
        def timed(n):
            if _is_real_clock_call(n):
                return True
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in self.clock_helpers:
                return True
            if isinstance(n, ast.Name) and n.id in names:
                return True
            return self.journal and isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) \
                and n.slice.value in JOURNAL_TIMES
        return _mentions(node, timed)


def _deadline(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and "deadline" in node.id.lower()


def upper_bounds(source: str, journal: bool) -> list[tuple[int, str]]:
    """(line, text) of every assert that bounds a wall-clock time from above."""
    tree = ast.parse(source)
    module = _Module(tree, journal)
    found = []
    for func in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        names = module.timed_names(func)
        for node in ast.walk(func):
            if not isinstance(node, ast.Assert):
                continue
            for cmp in [c for c in ast.walk(node.test) if isinstance(c, ast.Compare)]:
                operands = [cmp.left, *cmp.comparators]
                for op, left, right in zip(cmp.ops, operands, operands[1:]):
                    if not isinstance(op, ORDERING):
                        continue
                    small, big = (left, right) if isinstance(op, (ast.Lt, ast.LtE)) else (right, left)
                    if _deadline(big) or not _constant(big):
                        continue
                    if module.is_timed(small, names):
                        found.append((node.lineno, ast.unparse(node.test)))
    return sorted(set(found))


def _in_loop(func: ast.AST, target: ast.AST) -> bool:
    loops = [n for n in ast.walk(func) if isinstance(n, (ast.For, ast.While, ast.AsyncFor))]
    return any(target in set(ast.walk(loop)) for loop in loops)


def fixed_sleeps(source: str) -> list[tuple[int, str]]:
    """(line, text) of every `time.sleep(constant)` in a test's own body, outside a polling loop."""
    tree = ast.parse(source)
    found = []
    for func in [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]:
        for node in ast.walk(func):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "sleep"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "time"
                    and node.args and _constant(node.args[0]) and not _in_loop(func, node)):
                found.append((node.lineno, ast.unparse(node)))
    return found


def early_waits(source: str) -> list[tuple[int, str]]:
    """(line, text) of every `wait_for(..., timeout=N)` with N under MIN_WAIT_S."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "wait_for":
            for kw in node.keywords:
                if kw.arg == "timeout" and isinstance(kw.value, ast.Constant) and kw.value.value < MIN_WAIT_S:
                    found.append((node.lineno, ast.unparse(node)))
    return found


def _test_at(source: str, line: int) -> str:
    funcs = [n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
             and n.lineno <= line <= (n.end_lineno or n.lineno)]
    return max(funcs, key=lambda f: f.lineno).name if funcs else "<module>"


def problems(path: Path) -> list[str]:
    source = path.read_text()
    tier = path.relative_to(TESTS).parts[0]
    found = [(line, "bounds wall-clock time from above", text)
             for line, text in upper_bounds(source, journal=tier in REAL_TIERS)]
    if tier in REAL_TIERS:
        found += [(line, "sleeps a fixed time to wait for a state", text) for line, text in fixed_sleeps(source)]
        found += [(line, f"gives up waiting in under {MIN_WAIT_S} s", text) for line, text in early_waits(source)]
    rel = path.relative_to(TESTS.parent)
    return [f"{rel}:{line} {_test_at(source, line)} {why}: {text}" for line, why, text in sorted(found)]


TEST_FILES = sorted(p for p in TESTS.rglob("*.py") if p.name != Path(__file__).name and "data" not in p.parts)


def test_every_test_file_is_checked():
    tiers = {p.relative_to(TESTS).parts[0] for p in TEST_FILES}
    assert {"unit", "integration", "spark", "kafka", "compose"} <= tiers, tiers


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: str(p.relative_to(TESTS)))
def test_no_test_depends_on_how_busy_the_machine_is(path):
    assert problems(path) == []


# The checks themselves, on planted cases: each shape is found, and what is allowed is not.

PLANTED = '''
import time

def helper():
    t = time.monotonic()
    return time.monotonic() - t

def test_planted(faults, summary):
    t = time.monotonic()
    elapsed = time.monotonic() - t
    assert elapsed < 2
    assert 0.25 <= time.monotonic() - t < 2
    assert helper() < 0.1
    assert all(f["late_s"] <= 0.1 for f in faults)
    assert 1.5 > summary["seconds"]["cluster up"]
    time.sleep(3)
    wait_for(lambda: True, timeout=5, what="x")
'''

ALLOWED = '''
import time

def test_allowed(faults, clock, deadline):
    t = time.monotonic()
    assert time.monotonic() - t >= 0.25
    assert helper_free() >= 0.2
    assert time.monotonic() < deadline
    assert all(f["held_s"] >= f["planned_duration"] - 0.002 for f in faults)
    assert all(f["late_s"] == round(f["applied_offset"] - f["planned_at"], 3) for f in faults)
    assert clock.monotonic() <= 3
    while True:
        time.sleep(0.1)
    wait_for(lambda: True, timeout=60, what="x")
'''


def test_the_check_finds_each_planted_shape():
    bounds = [text for _, text in upper_bounds(PLANTED, journal=True)]
    assert bounds == ["elapsed < 2", "0.25 <= time.monotonic() - t < 2", "helper() < 0.1",
                      "all((f['late_s'] <= 0.1 for f in faults))", "1.5 > summary['seconds']['cluster up']"]
    assert [text for _, text in fixed_sleeps(PLANTED)] == ["time.sleep(3)"]
    assert [text for _, text in early_waits(PLANTED)] == ["wait_for(lambda: True, timeout=5, what='x')"]


def test_the_check_lets_lower_bounds_deadlines_virtual_clocks_and_polling_pass():
    assert upper_bounds(ALLOWED, journal=True) == []
    assert fixed_sleeps(ALLOWED) == [] and early_waits(ALLOWED) == []


def test_journal_times_are_virtual_in_the_unit_tier():
    assert upper_bounds('def test_x(f):\n    assert f["late_s"] <= 0.1\n', journal=False) == []
    assert upper_bounds('import time\ndef test_x(t):\n    assert time.time() - t < 1\n', journal=False)
