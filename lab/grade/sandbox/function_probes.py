"""The grader's probes: its own checks of a student's function over many small situations, for mistakes that the
scenarios' traces cannot show (rubric entries beside the checks; the texts are in lab.grade.inputs.rubric_entries.PROBES).
A probe returns None when the rule holds, else the smallest situation that breaks it, in words."""

from __future__ import annotations

import functools
import itertools
from typing import Callable

from lab.core.guard import answers
from lab.core.messages import Entry
from lab.core.replica import Log

MAX_LOG = 3  # entries in a generated log (enough for a stale tail beyond a request: the mistakes need two)
GENERATIONS = (1, 2, 3)


def _logs() -> list[tuple[int, ...]]:
    """Every log's generations up to MAX_LOG entries (generations never go down along a log), shortest first."""
    out = []
    for n in range(MAX_LOG + 1):
        out.extend(g for g in itertools.product(GENERATIONS, repeat=n) if list(g) == sorted(g))
    return out


@functools.lru_cache(maxsize=None)
def _entries(generations: tuple[int, ...]) -> tuple[Entry, ...]:
    # The same (index, generation) is the same entry on every node, as the pattern guarantees.
    return tuple(Entry(index=i, generation=g, payload=f"e{i}g{g}") for i, g in enumerate(generations, start=1))


def _consistent(leader: tuple[int, ...], follower: tuple[int, ...]) -> bool:
    """Log matching: where two logs hold an entry of the same generation at an index, they agree up to it."""
    for i in range(min(len(leader), len(follower)), 0, -1):
        if leader[i - 1] == follower[i - 1]:
            return leader[:i] == follower[:i]
    return True


def _applied(follower: tuple[int, ...], result) -> list[int]:
    held = list(follower)
    if result.truncate_from is not None:
        held = held[: result.truncate_from - 1]
    return held + [e.generation for e in result.append]


def match_acknowledged(impl) -> str | None:
    """A follower that accepts a request acknowledges at most prev_index + len(entries), and its log, once the
    answer is applied, holds the leader's entries up to the match index it answers."""
    cases = []
    for leader, follower in itertools.product(_logs(), repeat=2):
        if max(leader, default=0) < max(follower, default=0) or not _consistent(leader, follower):
            continue  # the leader is of the newest generation the follower has seen
        entries = _entries(leader)
        for prev in range(0, len(leader) + 1):
            if prev > len(follower) or (prev and follower[prev - 1] != leader[prev - 1]):
                continue  # a request the follower must refuse: another rule's business
            for count in range(0, len(leader) - prev + 1):
                cases.append((leader, follower, prev, count))
    calls = [(Log(_entries(follower)), prev, leader[prev - 1] if prev else 0, _entries(leader)[prev: prev + count])
             for leader, follower, prev, count in cases]
    for (leader, follower, prev, count), result in zip(cases, answers(impl.follower_append, calls)):
        if not result.success:
            continue
        held = _applied(follower, result)
        wrong = next((i for i in range(1, result.match_index + 1)
                      if i > len(held) or held[i - 1] != leader[i - 1]), None)
        if result.match_index > prev + count or wrong is not None:
            why = (f"index {wrong} holds generation {held[wrong - 1]} where the leader has generation "
                   f"{leader[wrong - 1]}" if wrong is not None and wrong <= len(held) else
                   f"the request vouches for entries up to {prev + count} only")
            return (f"follower log generations {list(follower)}, leader log generations {list(leader)}, "
                    f"request prev_index {prev} with {count} entries: acknowledged match_index "
                    f"{result.match_index}, but {why}")
    return None


# probe id -> (exercise, probe); ids are rubric entries, declared with their texts in lab.grade.inputs.rubric_entries
PROBES: dict[str, tuple[int, Callable]] = {"match-acknowledged": (3, match_acknowledged)}
