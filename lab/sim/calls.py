"""The calls of a student's functions in an explorer's world, each judged by its exercise's rule as the run goes
(lab.core.judges): the first that breaks it ends a search, and a replay keeps every call, with its inputs, its
result and what was wrong with it, for the trace and the explanation."""

from __future__ import annotations

import copy
from dataclasses import replace

from lab.core.guard import describe, describe_call
from lab.core.impl import Impl, student_functions
from lab.core.judges import Call, judged
from lab.sim.reach import Reach, traced


class Ear:
    """Which world hears the calls: the one stepping now (a world's clones share its functions, hence its ear)."""

    __slots__ = ("world",)

    def __init__(self, world):
        self.world = world


def judging(impl: Impl, name: str, ear: Ear, reach: Reach) -> Impl:
    """`impl` (guarded) whose student's functions (those `name` takes from a student) tell the world stepping of
    each call: its `called` and `unwritten` gather which functions ran and which are not written yet; the first
    call that broke its rule is its `wrong` (node, Call); with its `record`, every call goes to its `calls`; and
    `reach` gathers the range of each function's inputs and the lines of its code that ran."""

    def heard(call: Call) -> None:
        world = ear.world
        if call.unwritten:
            world.unwritten.add(call.function)
            return
        world.called.add(call.function)
        reach.called(call.function, call.args if call.saved is None else (call.saved, *call.args[1:]))
        if call.why is not None and world.wrong is None:
            world.wrong = (world.current, call)
        if world.record:
            world.calls.append(record(call, world.current, world.now))
            world.heard.append((world.current, world.now, kept(call)))  # the call itself, its arguments as they were

    functions = student_functions(name)
    seen = replace(impl, **{f: twice(f, traced(f, getattr(impl, f), getattr(getattr(impl, f), "__wrapped__", None),
                                               reach), ear) for f in functions})
    return judged(seen, functions, heard)


def kept(call: Call) -> Call:
    """A call with a copy of its arguments as they were when it returned (a log or a table it was handed changes
    with the node afterwards)."""
    try:
        return call._replace(args=copy.deepcopy(call.args))
    except Exception:  # something that cannot be copied: the call as it is
        return call


def twice(function: str, fn, ear: Ear):
    """`fn`, called a second time on a copy of its arguments (made before the first call) while the world stepping
    asks for it (`twice`, the determinism check: lab.explore.twice): the first call whose two answers differ is
    the world's `differed` (node, step, function, inputs, first answer, second answer)."""

    def call(*args):
        world = ear.world
        if not world.twice:
            return fn(*args)
        copies = tuple(list(a) if type(a) is list else dict(a) if type(a) is dict else a for a in args)
        first = fn(*args)
        second = fn(*copies)
        if first != second and world.differed is None:
            world.differed = (world.current, world.now, function, describe_call(copies), describe(first),
                              describe(second))
        return first

    for name in ("__name__", "__wrapped__", "guard_limit"):
        if hasattr(fn, name):
            setattr(call, name, getattr(fn, name))
    return call


def record(call: Call, node: str, step: int) -> dict:
    """A call as the trace's student_call line and the explanation hold it."""
    out = {"node": node, "step": step, "function": call.function, "inputs": call.inputs(),
           "result": call.shown_result(), "wrong": call.why is not None}
    if call.why is not None:
        out["why"] = call.why
    if call.used is not None:  # its answer rests on a wrong answer of the function it was handed
        out["uses"] = call.used.function
    return out
