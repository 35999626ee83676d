"""The calls of a student's functions during a replayed run, each with its inputs and result, and whether it
answered as the lab's own rule does (the reference is asked on copies of the same inputs; its answer is never
shown: only which call went wrong)."""

from __future__ import annotations

import copy
from dataclasses import replace

from lab.core.guard import describe, describe_call
from lab.core.impl import FUNCTIONS, Impl, load


def _same(name: str, got, want) -> bool:
    if name == "check_read":  # refusals are the student's own words: only serving or not counts
        return (got is None) == (want is None)
    return got == want


def recording(impl: Impl, world) -> Impl:
    """`impl` whose calls are appended to world.calls (dicts: node, step, function, inputs, result, wrong)."""
    reference = load("solutions")

    def wrap(name, fn):
        theirs = getattr(reference, name)

        def call(*args):
            shown = describe_call(args)
            try:
                copied = tuple(copy.copy(a) if isinstance(a, dict) else a for a in args)
                if name == "on_replication_response":
                    copied = (*copied[:-1], reference.high_water_mark)
                want = theirs(*copied)
            except Exception:  # the reference refuses inputs it never gets from the lab: no verdict
                want = _UNKNOWN
            record = {"node": world.current, "step": world.now, "function": name, "inputs": shown}
            world.calls.append(record)
            result = fn(*args)
            record["result"] = describe(result)
            record["wrong"] = want is not _UNKNOWN and not _same(name, result, want)
            return result

        call.__wrapped__ = getattr(fn, "__wrapped__", fn)
        call.guard_limit = getattr(fn, "guard_limit", None)
        return call

    return replace(impl, **{f: wrap(f, getattr(impl, f)) for f in FUNCTIONS})


_UNKNOWN = object()
