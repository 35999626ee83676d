"""Each call of a student's function judged by its exercise's rule, from the call's own inputs: a Reason when the
answer breaks the rule, None when it keeps it. A judge checks an answer (for exercise 1: count the nodes that hold
the index returned and the next one); it never computes the answer to compare with."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, NamedTuple

from lab.core import reasons
from lab.core.guard import describe, describe_call
from lab.core.impl import Impl
from lab.core.reasons import Reason
from lab.core.interface import (
    CHECK_READ, EPOCH_TRUNCATION_POINT, FOLLOWER_APPEND, HIGH_WATER_MARK, LEADER_EPOCH_END, ON_REPLICATION_RESPONSE,
    PLAN_TRUNCATION)


def _holders(values, index: int) -> int:
    return sum(1 for v in values if v >= index)


# ---- exercise 1 -----------------------------------------------------------------------------------------------


def high_water_mark(match_indexes, result: int) -> Reason | None:
    """The largest index a majority holds: a majority holds `result`, and no majority holds `result + 1`."""
    values = list(match_indexes)
    size = len(values)
    majority = size // 2 + 1
    holders = _holders(values, result)
    if result < 0 or holders < majority:
        return Reason(reasons.HWM_NOT_HELD, index=result, holders=holders, size=size, majority=majority)
    following = _holders(values, result + 1)
    if following >= majority:
        return Reason(reasons.HWM_NOT_LARGEST, index=result + 1, holders=following, size=size, majority=majority)
    return None


def unchanged(before, after) -> Reason | None:
    return None if before == after else Reason(reasons.ARGUMENT_CHANGED, before=before, after=after)


# ---- exercise 2 -----------------------------------------------------------------------------------------------


def on_replication_response(before: dict, after: dict, follower: str, acknowledged: int, current_hwm: int,
                            generation: int, generation_at: Callable[[int], int], result: int) -> Reason | None:
    """The match index raised, never lowered; the mark never back; only over a majority's entry of this
    generation, and as far as a majority holds one."""
    if result < current_hwm:
        return Reason(reasons.HWM_MOVED_BACK, hwm=current_hwm)
    was = before.get(follower, 0)
    now = after.get(follower, 0)
    if now != max(was, acknowledged):
        return Reason(reasons.MATCH_NOT_RECORDED, follower=follower, acknowledged=acknowledged, before=was, after=now)
    for node, value in before.items():
        if node != follower and after.get(node) != value:
            return Reason(reasons.OTHER_MATCH_CHANGED, node=node)
    values = list(after.values())
    size = len(values)
    majority = size // 2 + 1
    if result > current_hwm:
        holders = _holders(values, result)
        if holders < majority:
            return Reason(reasons.HWM_NOT_HELD, index=result, holders=holders, size=size, majority=majority)
        entry_generation = _generation(generation_at, result)
        if entry_generation != generation:
            return Reason(reasons.HWM_OLDER_GENERATION, index=result, entry_generation=entry_generation,
                          generation=generation)
    # A majority's index of this generation above the answer: the mark must reach it. (Such an index, if any, is
    # one of the match indexes: the count only changes at them.)
    for index in sorted({v for v in values if v > result}, reverse=True):
        holders = _holders(values, index)
        if holders >= majority and _generation(generation_at, index) == generation:
            return Reason(reasons.HWM_NOT_ADVANCED, index=index, holders=holders, size=size, majority=majority,
                          generation=generation)
    return None


def _generation(generation_at, index: int):
    try:
        return generation_at(index)
    except Exception:  # beyond the leader's log: no generation
        return None


# ---- exercise 3 -----------------------------------------------------------------------------------------------


def follower_append(log, prev_index: int, prev_generation: int, entries, result) -> Reason | None:
    """Refuse when the previous entry is not held; else keep what matches, cut at the first conflict, and end
    holding every entry of the request, answering the request's last index as the match index."""
    end = log.log_end
    held = prev_index <= end and _generation(log.generation_at, prev_index) == prev_generation
    if not held:
        if result.success:
            return Reason(reasons.ACCEPTED_WITHOUT_PREV, index=prev_index, generation=prev_generation)
        most = min(prev_index, end + 1)
        if not 1 <= result.conflict_index <= most:
            return Reason(reasons.CONFLICT_INDEX_OUTSIDE, conflict=result.conflict_index, most=most)
        return None
    if not result.success:
        return Reason(reasons.REFUSED_WITH_PREV, index=prev_index, generation=prev_generation)
    last = prev_index + len(entries)
    if result.match_index != last:
        return Reason(reasons.MATCH_NOT_REQUEST_END, got=result.match_index, end=last)
    theirs = {e.index: e for e in entries}
    conflict = next((e.index for e in entries if e.index <= end and log.generation_at(e.index) != e.generation), None)
    cut = result.truncate_from
    if cut is not None and cut <= end and cut != conflict:
        if cut < (conflict or end + 1):  # everything before the first conflict matches the leader's log
            return Reason(reasons.REMOVED_MATCHING, index=cut, generation=log.generation_at(cut))
    if conflict is not None and (cut is None or cut > conflict):
        return Reason(reasons.KEPT_CONFLICTING, index=conflict, generation=log.generation_at(conflict),
                      theirs=theirs[conflict].generation)
    kept = end if cut is None else min(end, cut - 1)
    for position, entry in enumerate(result.append):
        if entry.index != kept + 1 + position:
            return Reason(reasons.APPEND_NOT_AFTER, index=entry.index, end=kept + position)
    final = kept + len(result.append)
    appended = {e.index: e for e in result.append}
    for entry in entries:
        got = appended.get(entry.index) or (log.entry_at(entry.index) if entry.index <= kept else None)
        if got is None or got.generation != entry.generation or entry.index > final:
            return Reason(reasons.LOG_LACKS_ENTRY, index=entry.index, generation=entry.generation)
    return None


# ---- exercise 4 -----------------------------------------------------------------------------------------------


def check_read(index: int, hwm: int, result) -> Reason | None:
    if result is None and index < 1:
        return Reason(reasons.SERVED_BELOW_ONE, index=index)
    if result is None and index > hwm:
        return Reason(reasons.SERVED_ABOVE, index=index, hwm=hwm)
    if result is not None and 1 <= index <= hwm:
        return Reason(reasons.REFUSED_AT_OR_BELOW, index=index, hwm=hwm)
    return None


# ---- exercise 5 -----------------------------------------------------------------------------------------------


def plan_truncation(segments, index: int, plan) -> Reason | None:
    """After the plan, the log holds every index before `index` and none from it on."""
    deleted = set(plan.delete)
    for segment in segments:
        for held, offset in sorted(segment.offsets.items()):
            gone = segment.path in deleted or (segment.path == plan.cut_path and offset >= plan.cut_offset)
            if held < index and gone:
                return Reason(reasons.PLAN_REMOVES, index=held, cut=index)
            if held >= index and not gone:
                return Reason(reasons.PLAN_KEEPS, index=held, cut=index)
    return None


# ---- exercise 6 -----------------------------------------------------------------------------------------------


def leader_epoch_end(log, of_generation: int, end: int) -> Reason | None:
    """The last index whose generation is `of_generation` or older: within the log, at such an entry, and the entry
    after it (if any) newer."""
    return epoch_end(end, log.log_end, log.generation_at(end) if 0 <= end <= log.log_end else None,
                     log.generation_at(end + 1) if 0 <= end < log.log_end else None, of_generation)


def epoch_end(end: int, log_end: int, end_generation, next_generation, generation: int) -> Reason | None:
    """The leader's answer judged from the generations around it (what a trace's epoch_answer line holds)."""
    if end < 0 or end > log_end:
        return Reason(reasons.EPOCH_END_OUTSIDE, index=end, log_end=log_end, generation=generation)
    if end_generation is not None and end_generation > generation:
        return Reason(reasons.EPOCH_END_NEWER, index=end, entry_generation=end_generation, generation=generation)
    if next_generation is not None and next_generation <= generation:
        return Reason(reasons.EPOCH_END_SHORT, index=end + 1, entry_generation=next_generation, generation=generation)
    return None


def epoch_truncation_point(log, end_index: int, cut) -> Reason | None:
    return epoch_cut(log.log_end, end_index, cut)


def epoch_cut(log_end: int, end_index: int, cut) -> Reason | None:
    """What the follower keeps ends where both logs agree it may: not past the leader's end, nor short of it; and it
    names no cut when nothing is to go."""
    if cut is not None and not 1 <= cut <= log_end:
        return Reason(reasons.EPOCH_CUT_OUTSIDE, cut=cut, log_end=log_end)
    kept = log_end if cut is None else cut - 1
    if kept > end_index:
        return Reason(reasons.EPOCH_KEEPS_BEYOND, index=kept, end=end_index)
    if kept < min(end_index, log_end):
        return Reason(reasons.EPOCH_REMOVES_HELD, index=kept + 1, end=end_index)
    return None


# ---- one call -------------------------------------------------------------------------------------------------


# What a judge needs from before the call: the arguments a function may change in place (others: none).
_SAVED = {HIGH_WATER_MARK: lambda args: list(args[0]), ON_REPLICATION_RESPONSE: lambda args: dict(args[0])}

# Each function's judge, keyed by lab.core.interface's table: (args, result, saved) -> the rule broken, or None.
JUDGES: dict[str, Callable[[tuple, Any, Any], Reason | None]] = {
    HIGH_WATER_MARK: lambda args, result, saved: high_water_mark(saved, result) or unchanged(saved, list(args[0])),
    ON_REPLICATION_RESPONSE: lambda args, result, saved: on_replication_response(
        saved, dict(args[0]), *args[1:6], result),  # (args[6], exercise 1's function, is not judged here)
    FOLLOWER_APPEND: lambda args, result, saved: follower_append(*args, result),
    CHECK_READ: lambda args, result, saved: check_read(*args, result),
    PLAN_TRUNCATION: lambda args, result, saved: plan_truncation(*args, result),
    LEADER_EPOCH_END: lambda args, result, saved: leader_epoch_end(*args, result),
    EPOCH_TRUNCATION_POINT: lambda args, result, saved: epoch_truncation_point(*args, result),
}


def before(function: str, args: tuple):
    """What the judge needs from before the call: the arguments a function may change in place."""
    save = _SAVED.get(function)
    return save(args) if save else None


def judge(function: str, args: tuple, result, saved) -> Reason | None:
    """The call `function(*args)` that returned `result` (`saved`: `before(function, args)`), judged by its rule."""
    rule = JUDGES.get(function)
    return rule(args, result, saved) if rule else None


class Call(NamedTuple):
    """One call of a student's function as its judge saw it: `why` is the rule it broke (None: it kept it), and
    `unwritten` says the function raised NotImplementedError (the exercise is not written yet)."""

    function: str
    args: tuple
    saved: object  # what `before` kept of the arguments
    result: object = None
    why: Reason | None = None
    unwritten: bool = False
    used: "Call | None" = None  # a wrong answer of the function it was handed (exercise 2 is handed exercise 1's)

    def inputs(self) -> str:
        """The arguments as the call received them (a table it changed in place, as it was before)."""
        args = self.args if self.saved is None else (self.saved, *self.args[1:])
        return describe_call(args)

    def shown_result(self) -> str:
        return describe(self.result)

    def sentence(self) -> Reason:
        """`f(inputs) returned result: why`, in the lab's words (said in any language by its kind)."""
        return Reason(reasons.WRONG_CALL, function=self.function, inputs=self.inputs(), result=self.shown_result(),
                      why=self.why)


def judged(impl: Impl, functions, on_call: Callable[[Call], None]) -> Impl:
    """`impl` whose `functions` are judged at every call; `on_call` hears of each call (and of a function not written
    yet, before its NotImplementedError goes on). A function's guard (time limit, type) stays inside. A call of
    exercise 2 that was handed a wrong answer of exercise 1 says so (`used`): its own answer rests on it."""
    handed: list = [None]  # the last wrong call of high_water_mark, heard while on_replication_response ran

    def wrap(name, fn):
        def call(*args):
            saved = before(name, args)
            if name == ON_REPLICATION_RESPONSE:
                handed[0] = None
            try:
                result = fn(*args)
            except NotImplementedError:
                on_call(Call(name, args, saved, unwritten=True))
                raise
            heard = Call(name, args, saved, result, judge(name, args, result, saved))
            if name == HIGH_WATER_MARK and heard.why is not None:
                handed[0] = heard
            elif name == ON_REPLICATION_RESPONSE:
                heard = heard._replace(used=handed[0])
            on_call(heard)
            return result

        call.__name__ = getattr(fn, "__name__", name)
        call.__wrapped__ = getattr(fn, "__wrapped__", fn)
        call.guard_limit = getattr(fn, "guard_limit", None)
        return call

    return replace(impl, **{f: wrap(f, getattr(impl, f)) for f in functions})
