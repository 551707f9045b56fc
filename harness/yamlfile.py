"""YAML as the harness reads it (experiment files, a run folder's spec.yaml): PyYAML's safe loader,
plus what it lets through silently refused, each with one line saying where.

- a key given twice in one mapping (safe_load keeps the last one without a word);
- a file larger than MAX_BYTES, nested deeper than MAX_DEPTH, or holding more than MAX_NODES values
  once aliases are expanded (a few lines of anchors can stand for billions of values);
- a NUL character in a string (it would cut a C string short in librdkafka);
- an integer too long for Python to convert (PyYAML lets that ValueError escape).

Hand-written because ruamel.yaml refuses duplicate keys but bounds neither depth nor alias
expansion, and strictyaml changes what values mean (everything a string); this is a small
subclass of the loader the harness already uses, so valid files load exactly as before.
"""

from __future__ import annotations

from pathlib import Path

import yaml

MAX_BYTES = 1 << 20  # 1 MiB: the longest shipped experiment is about 2 KB
MAX_DEPTH = 20  # experiment files nest 4 levels (variants > variant > producer > value)
MAX_NODES = 100_000  # values, with aliases expanded


class YamlError(ValueError):
    """Not a YAML file the harness reads; str() says what and where (line, column), in one line."""


class _Loader(yaml.SafeLoader):
    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise YamlError(f"{_at(self.peek_event().start_mark)}nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults` may be overridden by the keys beside it
            key = self.construct_object(key_node, deep=True)
            try:
                if key in seen:
                    raise YamlError(f"{_at(key_node.start_mark)}key {key!r} given twice in one mapping "
                                    f"(first on line {seen[key].line + 1}); YAML keeps only the last, so say it once")
                seen[key] = key_node.start_mark
            except TypeError:  # an unhashable key: the safe constructor names it below
                pass
        return super().construct_mapping(node, deep)


def _at(mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


def _one_line(e: yaml.YAMLError) -> str:
    if isinstance(e, yaml.MarkedYAMLError):
        where = e.problem_mark or e.context_mark
        what = " ".join(filter(None, [e.context, e.problem])) or type(e).__name__
        return f"{_at(where)}{what}"
    return " ".join(str(e).split())


def _check_size(doc) -> None:
    """Walk the loaded value once, stopping at the first bound crossed (aliases make it a graph)."""
    count = 0
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise YamlError(f"more than {MAX_NODES:,} values (anchors and aliases counted as expanded)")
        if depth > MAX_DEPTH:
            raise YamlError(f"nested deeper than {MAX_DEPTH} levels (anchors and aliases counted as expanded)")
        if isinstance(value, dict):
            stack.extend((x, depth + 1) for kv in value.items() for x in kv)
        elif isinstance(value, list):
            stack.extend((x, depth + 1) for x in value)
        elif isinstance(value, str) and "\0" in value:
            raise YamlError(f"a string holds a NUL character: {value[:40]!r}")


def loads(text: str):
    """The value of a YAML document; YamlError (one line) when it is not one the harness reads."""
    if len(text) > MAX_BYTES:
        raise YamlError(f"larger than {MAX_BYTES // 1024} KiB")
    loader = _Loader(text)
    try:
        doc = loader.get_single_data()
    except yaml.YAMLError as e:
        raise YamlError(_one_line(e)) from None
    except ValueError as e:  # e.g. an integer with more digits than int() converts
        if isinstance(e, YamlError):
            raise
        raise YamlError(" ".join(str(e).split())) from None
    finally:
        loader.dispose()
    _check_size(doc)
    return doc


def load(path: Path):
    """loads() of a file, reading at most MAX_BYTES + 1 bytes. OSError and UnicodeDecodeError pass through."""
    with open(path, "rb") as f:
        raw = f.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise YamlError(f"larger than {MAX_BYTES // 1024} KiB")
    return loads(raw.decode("utf-8"))
