"""What a search reached, recorded as it goes: the kinds of choice made, each student's function called with the
range of its inputs (indexes relative to the mark, log lengths, generations), and the lines of its code that ran."""

from __future__ import annotations

import sys

from lab.core.interface import (
    CHECK_READ, EPOCH_TRUNCATION_POINT, FOLLOWER_APPEND, HIGH_WATER_MARK, LEADER_EPOCH_END, ON_REPLICATION_RESPONSE,
    PLAN_TRUNCATION)


def _log_end(log) -> int:
    return log.log_end


def _segments_end(segments) -> int:
    return max((i for s in segments for i in s.offsets), default=0)


# What each function's inputs are measured by: (name, value from the call's arguments). The names are the keys of
# `--json`; lab/explore/coverage.py words each in the reader's language.
INPUTS = {
    HIGH_WATER_MARK: (("nodes", lambda a: len(a[0])), ("spread", lambda a: max(a[0], default=0) - min(a[0], default=0))),
    ON_REPLICATION_RESPONSE: (("acknowledged_minus_mark", lambda a: a[2] - a[3]), ("generation", lambda a: a[4])),
    FOLLOWER_APPEND: (("log_end", lambda a: _log_end(a[0])), ("prev_minus_log_end", lambda a: a[1] - _log_end(a[0])),
                      ("entries", lambda a: len(a[3])), ("generation", lambda a: a[2])),
    CHECK_READ: (("index_minus_mark", lambda a: a[0] - a[1]), ("mark", lambda a: a[1])),
    PLAN_TRUNCATION: (("segments", lambda a: len(a[0])),
                      ("segments_from_index", lambda a: sum(1 for s in a[0] if s.first_index >= a[1])),
                      ("index_minus_log_end", lambda a: a[1] - _segments_end(a[0]))),
    LEADER_EPOCH_END: (("log_end", lambda a: _log_end(a[0])), ("generation", lambda a: a[1])),
    EPOCH_TRUNCATION_POINT: (("log_end", lambda a: _log_end(a[0])),
                             ("end_minus_log_end", lambda a: a[1] - _log_end(a[0]))),
}


class Reach:
    """Shared by a search's worlds (each world's clones share it, and the search hands it to each new world)."""

    __slots__ = ("choices", "calls", "inputs", "lines", "code")

    def __init__(self):
        self.choices: dict[str, int] = {}  # kind of choice -> times made
        self.calls: dict[str, int] = {}  # student's function -> calls
        self.inputs: dict[str, dict[str, list[int]]] = {}  # function -> input -> [lowest, highest]
        self.lines: dict[str, set[int]] = {}  # function -> lines of its code that ran
        self.code: dict[str, tuple[str, frozenset[int]]] = {}  # function -> (its file, every line of its body)

    def made(self, words) -> None:
        kind = words[0]
        self.choices[kind] = self.choices.get(kind, 0) + 1

    def called(self, function: str, args: tuple) -> None:
        self.calls[function] = self.calls.get(function, 0) + 1
        ranges = self.inputs.setdefault(function, {})
        for name, measure in INPUTS.get(function, ()):
            try:
                value = measure(args)
            except Exception:  # an input the student's function was handed that is not what the lab hands it
                continue
            seen = ranges.get(name)
            if seen is None:
                ranges[name] = [value, value]
            elif value < seen[0]:
                seen[0] = value
            elif value > seen[1]:
                seen[1] = value

    def as_dict(self) -> dict:
        return {"choices": dict(sorted(self.choices.items())),
                "functions": {f: {"calls": self.calls.get(f, 0),
                                  "inputs": {k: list(v) for k, v in self.inputs.get(f, {}).items()},
                                  **self.lines_of(f)} for f in sorted(set(self.calls) | set(self.code))}}

    def lines_of(self, function: str) -> dict:
        """The lines of the function's body that ran and those that never did ({} when they could not be seen: a
        function in another process)."""
        if function not in self.code:
            return {}
        file, every = self.code[function]
        ran = self.lines.get(function, set()) & every
        return {"file": file, "lines": len(every), "lines_run": len(ran), "never_run": sorted(every - ran)}


def body_lines(fn) -> tuple[str, frozenset[int]] | None:
    """The file of a student's function and the lines of its body (its nested functions' too), or None when its
    code is out of sight (a stand-in for a function that runs in another process)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    lines, stack = set(), [code]
    while stack:
        c = stack.pop()
        lines.update(line for _, _, line in c.co_lines() if line is not None and line != c.co_firstlineno)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_lines"))
    return code.co_filename, frozenset(lines)


def traced(function: str, fn, student, reach: Reach):
    """`fn` (the guarded call of the student's function `student`) with the lines of the student's file it runs
    added to `reach`, until every line of the function's body has run (then it costs nothing more)."""
    seen = body_lines(student)
    if seen is None:
        return fn
    file, every = seen
    reach.code[function] = seen
    ran = reach.lines.setdefault(function, set())

    def local(frame, event, arg):
        if event == "line":
            ran.add(frame.f_lineno)
        return local

    def enter(frame, event, arg):
        return local if frame.f_code.co_filename == file else None

    def call(*args):
        if every <= ran:
            return fn(*args)
        before = sys.gettrace()
        sys.settrace(enter)
        try:
            return fn(*args)
        finally:
            sys.settrace(before)

    for name in ("__name__", "__wrapped__", "guard_limit"):
        if hasattr(fn, name):
            setattr(call, name, getattr(fn, name))
    return call
