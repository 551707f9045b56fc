"""The corpus: the tries that showed events no try before them showed, which later tries mutate.

As a coverage-guided fuzzer keeps an input that reached new code, an exploration keeps a schedule that reached
new behaviour (an error code, a log line's template: signature.py) and looks near it. Pure and rebuilt by
replaying `consider` over the tries journal in try order, so a resumed exploration has the corpus it stopped
with; nothing else is stored.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    try_id: int
    faults: list[dict]  # the try's schedule, as experiment-file fault entries (generate.py)
    events: frozenset[str]  # every event the try showed
    new: frozenset[str]  # those no try before it showed


class Corpus:
    def __init__(self):
        self.entries: list[Entry] = []
        self.seen: set[str] = set()

    def __len__(self) -> int:
        return len(self.entries)

    def consider(self, try_id: int, faults: list[dict], events: Iterable[str]) -> set[str]:
        """The events of this try never seen before; the try joins the corpus when there are any. Every event
        is seen from now on either way."""
        events = frozenset(events)
        new = set(events - self.seen)
        self.seen |= events
        if new:
            self.entries.append(Entry(try_id, copy.deepcopy(faults), events, frozenset(new)))
        return new

    def pick(self, rng: random.Random) -> Entry:
        """An entry to mutate, each as likely. Not weighted by how many new events an entry brought: the first try
        brings every ordinary event (each log line a healthy run writes), so it would be picked nearly always,
        and one new event may be the rare one worth looking near."""
        if not self.entries:
            raise IndexError("the corpus is empty")
        return self.entries[rng.randrange(len(self.entries))]

    @classmethod
    def replay(cls, tries: Iterable[tuple[int, list[dict], Iterable[str]]]) -> Corpus:
        """The corpus after these tries, (try_id, faults, events) in the order they ran."""
        corpus = cls()
        for try_id, faults, events in tries:
            corpus.consider(try_id, faults, events)
        return corpus
