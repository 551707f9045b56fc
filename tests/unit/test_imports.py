"""The import graph of harness/ follows the data flow: no cycle, no module imports one on a higher layer, and no
folder holds modules of two layers (README, Layout). Imports inside functions count like the others: deferring an import hides a cycle from Python
at start-up, not from a reader."""

import ast
import re
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "harness"

# Low to high. A module may import its own layer and the ones below. A package name covers its modules (the
# longest name that holds a module decides; an empty package's __init__ falls to "harness", the bottom).
LAYERS = [
    ("foundations", ["harness", "harness.status", "harness.clock", "harness.logfile", "harness.yamlfile",
                     "harness.procs", "harness.launch", "harness.signals", "harness.formats", "harness.schema",
                     "harness.offsets", "harness.cachedir"]),
    ("anomaly definitions (pure)", ["harness.analysis"]),
    ("fault kinds", ["harness.faults"]),
    ("plan and judgement (pure)", ["harness.exits", "harness.verdict", "harness.summary", "harness.aggregate",
                                   "harness.junit", "harness.clients", "harness.spec", "harness.schedule", "harness.shrink",
                                   "harness.space"]),
    ("run folder", ["harness.runfolder", "harness.folder_schema"]),
    ("services", ["harness.cluster", "harness.proxy"]),
    ("workloads and faults", ["harness.workload", "harness.nemesis"]),
    ("analysis engine", ["harness.engine"]),
    ("one run, its checks and its pages", ["harness.run", "harness.preflight", "harness.report", "harness.doctor",
                                           "harness.repeat", "harness.evidence"]),
    ("exploration", ["harness.explore"]),
    ("entry points", ["harness.cli", "harness.terminal", "harness.job", "harness.__main__"]),
]
# The package's __init__ is the public facade: `from harness import open_run` defers to the run folder so that
# `import harness` (and the proxy's `from .. import __version__`) stays light. The one exception.
FACADE = ("harness", "harness.runfolder")


def modules() -> dict[str, Path]:
    out = {}
    for path in HARNESS.rglob("*.py"):
        parts = path.relative_to(HARNESS.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = modules()


def imports(name: str) -> set[str]:
    """The harness modules `name` imports anywhere in its body (a package's submodule imported as `from . import
    x` is that submodule, not the package)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rsplit(".", 1)[0]
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module
            subs = {f"{target}.{a.name}" for a in node.names} & MODULES.keys()
            found.update(subs)
            if len(subs) < len(node.names):
                found.add(target)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imports(name) for name in MODULES}


def layer(name: str) -> int:
    """The layer of the longest listed name that is the module or a package holding it."""
    best = None
    for i, (_, names) in enumerate(LAYERS):
        for listed in names:
            if (name == listed or name.startswith(listed + ".")) and (best is None or len(listed) > len(best[1])):
                best = (i, listed)
    if best is None:
        raise AssertionError(f"{name} is on no layer: add it to LAYERS here and to the README's Layout")
    return best[0]


def test_every_module_has_a_layer():
    for name in MODULES:
        layer(name)


def test_no_module_imports_one_on_a_higher_layer():
    wrong = [f"{m} ({LAYERS[layer(m)][0]}) imports {d} ({LAYERS[layer(d)][0]})"
             for m, deps in GRAPH.items() for d in deps if layer(d) > layer(m) and (m, d) != FACADE]
    assert not wrong, "\n".join(wrong)


def folders() -> dict[str, set[str]]:
    """Each package of harness/ but harness itself (a folder of the README's Layout) -> its modules, the modules of
    its subpackages included."""
    out: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        if path.name == "__init__.py" and name != "harness":
            out[name] = {m for m in MODULES if m == name or m.startswith(name + ".")}
    return out


def test_no_folder_spans_two_layers():
    wrong = []
    for folder, members in folders().items():
        found = {LAYERS[layer(m)][0] for m in members}
        if len(found) > 1:
            wrong.append(f"{folder}/ spans {', '.join(sorted(found))}: "
                         + "; ".join(f"{m} ({LAYERS[layer(m)][0]})" for m in sorted(members)))
    assert not wrong, "\n".join(wrong)


def test_the_folder_check_sees_a_folder_that_spans_two_layers(monkeypatch):
    layers = [(LAYERS[0][0], LAYERS[0][1] + ["harness.cluster.metadata"]), *LAYERS[1:]]
    monkeypatch.setattr(sys.modules[__name__], "LAYERS", layers)
    with pytest.raises(AssertionError, match="harness.cluster/ spans"):
        test_no_folder_spans_two_layers()


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle():
    assert cycles(GRAPH) == []


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": {"a"}, "c": {"c"} - {"c"}}, [["a", "b"]]),
])
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert cycles(graph) == expected


def test_the_import_reader_sees_deferred_and_relative_imports():
    # run.py defers Spark's start-up import; the layer check must see it
    assert "harness.engine.session" in GRAPH["harness.run"]
    assert "harness.cluster.topic" in GRAPH["harness.cluster.base"]  # `from .topic import ...`
    assert "harness.proxy.guard" in GRAPH["harness.proxy.server"]


def layout() -> str:
    readme = (HARNESS.parent / "README.md").read_text()
    return readme.split("## Layout", 1)[1].split("```", 2)[1]


def test_the_readme_layout_names_every_module_and_nothing_that_is_not_there():
    text = layout()
    missing = []
    for name, path in MODULES.items():
        rel = path.relative_to(HARNESS)
        if rel.name in ("__init__.py", "__main__.py") and str(rel) != "cluster/__init__.py":
            continue  # a package's facade or entry, named by its folder
        if rel.parts[:2] == ("faults", "kinds"):
            continue  # one module a kind: faults/kinds/ says so, the README's table of faults names each
        where = f"harness/{rel}" if len(rel.parts) == 1 else f"harness/{rel.parts[0]}/"
        block = text.split(where, 1)[1].split("\nharness/", 1)[0] if where in text else ""
        if len(rel.parts) == 1 and where not in text and not any(
                rel.name in line for line in text.splitlines() if line.startswith("harness/")):
            missing.append(str(rel))
        elif len(rel.parts) > 1 and "/".join(rel.parts[1:]) not in block:
            missing.append(str(rel))
    assert not missing, f"the README's Layout does not name: {', '.join(missing)}"
    named = set(re.findall(r"harness/[\w/]+\.py", text))
    assert {n for n in named if not (HARNESS.parent / n).is_file()} == set()
