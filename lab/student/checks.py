"""The exercises and their checks: each rule of the pattern a student's function must keep, in words.

`hwm-lab exercise check N` runs exercise N's rules (pure calls with small, hand-picked or smallest-first inputs)
and then its scenarios on the simulator (and, with --real, as processes), writing traces for `hwm-lab submit`.
Every sentence is a catalogue Text (lab.i18n): English in JSON and manifests, the student's language in reports.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import logging
import itertools
import tempfile
import traceback
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from lab.core import judges
from lab.core.guard import DEFAULT_LIMIT, IMPORT, TIMEOUT, StudentFault, answers, fault_of, guarded
from lab.core.impl import Impl, has_reference, student_functions
from lab.i18n import Joined, Text, say
from lab.core.impl import load as load_impl
from lab.core.interface import EXERCISES as TABLE
from lab.core.interface import (
    AppendResult, CHECK_READ, EPOCH_TRUNCATION_POINT, FOLLOWER_APPEND, HIGH_WATER_MARK, LEADER_EPOCH_END,
    ON_REPLICATION_RESPONSE, PLAN_TRUNCATION)
from lab.core.messages import Entry
from lab.core.replica import Log
from lab.ports.wal import WriteAheadLog
from lab.student.check_text import report_text
from lab.student.faults import fault_text, scenario_fault_text
from lab.student.runs import SEGMENTS
from lab.student.skeletons import hint
from lab.core.reasons import ABOVE_HWM, Reason


class NotStarted(Exception):
    pass


@dataclass(frozen=True)
class Rule:
    text: str  # the rule, as the pattern states it
    check: Callable[[Impl], str | None]  # None when it holds, else what went wrong on the smallest example
    function: str = ""  # the student's function it tests (default: the exercise's only function)


@dataclass(frozen=True)
class Exercise:
    """One exercise's checks; its file and functions are those of its row in lab.core.interface.EXERCISES."""

    number: int
    title: str
    read: str
    rules: tuple[Rule, ...]
    scenarios: tuple[tuple[str, str], ...] = ()  # (scenario, truncation strategy)

    @property
    def module(self) -> str:
        """The student's file, as `exercises/leader.py`."""
        return _ROWS[self.number].path

    @property
    def functions(self) -> tuple[str, ...]:
        """What the student writes; the rest of a checked cluster runs `solutions`."""
        return _ROWS[self.number].names


_ROWS = {row.number: row for row in TABLE}


@dataclass
class RuleResult:
    rule: str
    ok: bool
    detail: str = ""
    function: str = ""
    fault: dict | None = None  # the student's function raised, looped, returned a wrong type or did not import
    unwritten: bool = False  # it raised NotImplementedError: not written yet
    uses: Text | None = None  # the rule used another exercise of the student's, which failed its own rule


@dataclass
class CheckReport:
    exercise: Exercise
    status: str  # "not started", "failing", "passing"
    rules: list[RuleResult] = field(default_factory=list)
    scenarios: list[dict] = field(default_factory=list)  # each with its status: passed, failed, waits, elsewhere
    exploration: dict | None = None  # lab.explore.check: the short search after the scenarios
    missing: dict = field(default_factory=dict)  # the student's functions the runs need that cannot run yet

    def first_fault(self) -> Text | None:
        """The first failure of the exercise's own code, said where the student looks first (the report's top)."""
        for r in self.rules:
            if r.fault:
                return fault_text(r.fault)
        for s in self.scenarios:
            if s.get("fault") and s.get("status") == "failed":
                return scenario_fault_text(s["fault"])
        return None

    def does_not_import(self) -> bool:
        return any(r.fault and r.fault["kind"] == IMPORT for r in self.rules)

    def text(self, lang: str = "en") -> str:
        """The report as `hwm-lab exercise check` prints it, in `lang`: the exercise's own fault first, then what
        its runs wait for, then each rule, scenario and the exploration; what another exercise broke comes before the
        rules when they all hold, after them when one of them (this exercise's own) is broken (lab.student.check_text)."""
        return report_text(self, lang)


def _call(fn, *args):
    try:
        return fn(*args)
    except NotImplementedError as exc:
        raise NotStarted(str(exc)) from exc


def _entries(*generations: int, payload: str = "e") -> list[Entry]:
    return [Entry(index=i, generation=g, payload=f"{payload}{i}") for i, g in enumerate(generations, start=1)]


# ---- exercise 1 -------------------------------------------------------------------------------------------


def _hwm_rule(sizes):
    """Every list of match indexes from 0 to 3 of these sizes, smallest first, each answer judged by counting the
    nodes that hold the index returned and the next one (lab.core.judges)."""
    def check(impl):
        cases = [match for size in sizes for match in itertools.product(range(4), repeat=size)]  # smallest first
        try:  # (asked all at once: in the grader they cross to the student's process in one message)
            for match, got in zip(cases, answers(impl.high_water_mark, [(list(match),) for match in cases])):
                why = judges.high_water_mark(match, got)
                if why is not None:
                    return judges.Call(HIGH_WATER_MARK, (list(match),), None, got, why).sentence()
        except NotImplementedError as exc:
            raise NotStarted(str(exc)) from exc
        return None
    return check


def _hwm_does_not_mutate(impl):
    match = [1, 3, 2]
    _call(impl.high_water_mark, match)
    return None if match == [1, 3, 2] else say("high_water_mark([1, 3, 2]) changed its argument to {match}",
                                               match=match)


# ---- exercise 2 -------------------------------------------------------------------------------------------


def _leader_case(match, follower, acked, hwm, generation, generations, want_hwm, want_match=None, *, majority):
    """`majority`: the case's majority index once the follower's acknowledgement is recorded (the case's data),
    what exercise 1's function is to answer for that table."""
    after = sorted({**match, follower: max(match.get(follower, 0), acked)}.values())

    def check(impl):
        table = dict(match)
        unjudged: list = []
        handed = _handed_majority(impl, after, majority, check.uses, unjudged)
        got = _call(impl.on_replication_response, table, follower, acked, hwm, generation,
                    lambda i: 0 if i == 0 else generations[i - 1], handed)
        if unjudged:
            return unjudged[0]
        where = say("match_index {match}, {follower} acknowledges {acked}, current HWM {hwm}, leader generation "
                    "{generation}, entry generations {generations}", match=match, follower=follower, acked=acked,
                    hwm=hwm, generation=generation, generations=generations)
        if want_match is not None and table[follower] != want_match:
            return say("{where}: match_index[{follower}] became {got}, expected {want}", where=where,
                       follower=follower, got=table[follower], want=want_match)
        if got != want_hwm:
            return say("{where}: returned HWM {got}, expected {want}", where=where, got=got, want=want_hwm)
        return None
    check.uses = []
    return check


def _handed_majority(impl: Impl, table: list, majority: int, uses: list, unjudged: list):
    """Exercise 1's function as exercise 2's rules hand it in, so that exercise 2 is judged on its own: the
    reference where the course's repository has it; in a handout the student's own, judged at each call, and
    where it breaks its rule (or is not written) on the case's table, the case's own answer in its place, the
    student told which call of exercise 1 went wrong (`uses`)."""
    theirs = load_impl("solutions").high_water_mark if has_reference() else impl.high_water_mark

    def high_water_mark(match_indexes):
        values = list(match_indexes)
        try:
            if theirs in _HUNG:
                raise NotImplementedError  # (said once already, as a fault: not waited for again)
            got = theirs(values)
            why = judges.high_water_mark(values, got)
        except NotImplementedError:
            if theirs in _HUNG:
                return _instead(values, table, majority, None, unjudged)
            got, why = None, None
            uses.append(say("exercise 2 uses your exercise 1, which is not written yet: its rules are judged with "
                            "each case's own majority index"))
        except StudentFault as exc:
            got, why = None, None
            if exc.fault.kind == TIMEOUT:
                _HUNG.add(theirs)
            uses.append(say("exercise 2 uses your exercise 1, which failed: {fault}", fault=fault_text(exc.fault)))
        if why is not None:
            uses.append(say("exercise 2 uses your exercise 1, which broke its rule: {call}", call=judges.Call(
                HIGH_WATER_MARK, (values,), None, got, why).sentence()))
        if got is not None and why is None:
            return got
        return _instead(values, table, majority, got, unjudged)

    return high_water_mark


def _instead(values: list, table: list, majority: int, got, unjudged: list) -> int:
    """What exercise 2's rule hands in where exercise 1 gave no right answer: the case's own answer for the case's
    table; for another table none is known: the rule says exercise 2 asked for the wrong table."""
    if sorted(values) == table:
        return majority
    unjudged.append(say("on_replication_response called high_water_mark({values}), not with the match indexes "
                        "after the acknowledgement {table}", values=values, table=table))
    return got if got is not None else 0


_HUNG: "weakref.WeakSet" = weakref.WeakSet()  # exercise 1's functions that ran past their limit in a rule


# ---- exercise 3 -------------------------------------------------------------------------------------------


def _follower_case(log_generations, prev_index, prev_generation, entries, expect: Callable[[AppendResult], str]):
    def check(impl):
        log = Log(_entries(*log_generations))
        result = _call(impl.follower_append, log, prev_index, prev_generation, tuple(entries))
        problem = expect(result)
        if problem:
            shown = [(e.index, e.generation) for e in entries]
            return say("log generations {generations}, request prev=({prev_index}, {prev_generation}) entries "
                       "(index, generation) {shown}: {problem}; got {result}", generations=list(log_generations),
                       prev_index=prev_index, prev_generation=prev_generation, shown=shown, problem=problem,
                       result=result)
        return None
    return check


def _e(index, generation, payload=None):
    return Entry(index=index, generation=generation, payload=payload or f"e{index}")


# ---- exercise 4 -------------------------------------------------------------------------------------------


def _read_case(index, hwm, want):
    def check(impl):
        got = _call(impl.check_read, index, hwm)
        if want is None and got is not None:
            return say("check_read({index}, hwm={hwm}) refused ({got}) but index {index} is at or below the HWM",
                       index=index, hwm=hwm, got=repr(got))
        if want is not None and (got is None or not got.startswith(want)):
            return say("check_read({index}, hwm={hwm}) returned {got}, expected {want}", index=index, hwm=hwm,
                       got=repr(got), want=repr(want))
        return None
    return check


# ---- exercise 5 -------------------------------------------------------------------------------------------



def _plan_case(index, must_delete, cut):
    def check(impl):
        plan = _call(impl.plan_truncation, list(SEGMENTS), index)
        deleted = set(plan.delete)
        kept_whole = {s.path for s in SEGMENTS if s.first_index < index}
        where = say("segments seg-1 (1-3), seg-4 (4-5), seg-6 (6); truncate from {index}", index=index)
        if not set(must_delete) <= deleted:
            return say("{where}: deleted {deleted}, but {missing} start after it", where=where,
                       deleted=sorted(deleted), missing=sorted(set(must_delete) - deleted))
        if deleted & kept_whole:
            return say("{where}: deleted {deleted}, which hold entries before {index}", where=where,
                       deleted=sorted(deleted & kept_whole), index=index)
        if cut and (plan.cut_path, plan.cut_offset) != cut and not (cut[1] == 0 and cut[0] in deleted):
            return say("{where}: cut {path} at {offset}, expected {want_path} at offset {want_offset}", where=where,
                       path=plan.cut_path, offset=plan.cut_offset, want_path=cut[0], want_offset=cut[1])
        return None
    return check


def _wal_round_trip(impl):
    with tempfile.TemporaryDirectory() as tmp:
        with WriteAheadLog(tmp, fsync="never", segment_bytes=120, impl=impl) as wal:
            wal.append(_entries(*([1] * 10)))
            wal.flush()
            try:
                wal.truncate_from(4)
            except NotImplementedError as exc:
                raise NotStarted(str(exc)) from exc
            wal.flush()
        with WriteAheadLog(tmp, fsync="never", segment_bytes=120, impl=impl) as wal:
            got = [e.index for e in wal.entries()]
    return None if got == [1, 2, 3] else say("10 entries in segments of 120 bytes, truncate_from(4), reopen: {got}",
                                             got=got)


# ---- exercise 6 -------------------------------------------------------------------------------------------


def _epoch_end_case(generations, of_generation, want):
    def check(impl):
        got = _call(impl.leader_epoch_end, Log(_entries(*generations)), of_generation)
        if got != want:
            return say("leader log generations {generations}, asked for generation {generation}: got {got}, "
                       "expected {want}", generations=list(generations), generation=of_generation, got=got, want=want)
        return None
    return check


def _epoch_cut_case(log_end, end_index, want):
    def check(impl):
        got = _call(impl.epoch_truncation_point, Log(_entries(*([1] * log_end))), end_index)
        if got != want:
            return say("follower log end {log_end}, leader's end {end}: got {got}, expected {want}", log_end=log_end,
                       end=end_index, got=got, want=want)
        return None
    return check


EXERCISES: tuple[Exercise, ...] = (
    Exercise(1, say("the high-water mark from the match indexes"),
             say("scenario N4: lab/sim/scenarios/n4.txt (docs/scenarios.md); the article's computeHighwaterMark"), (
                 Rule(say("the HWM is the largest index a majority (n // 2 + 1) holds: odd cluster sizes"),
                      _hwm_rule((1, 3, 5))),
                 Rule(say("the HWM is the largest index a majority (n // 2 + 1) holds: even cluster sizes (N4)"),
                      _hwm_rule((2, 4, 6))),
                 Rule(say("computing the HWM does not modify the match indexes"), _hwm_does_not_mutate),
             ), (("n4", "generation"),)),
    Exercise(2, say("the leader's handling of a replication response"),
             say("scenarios S1 and F8: lab/sim/scenarios/s1.txt, f8.txt (docs/scenarios.md); Raft's figure 8"), (
                 Rule(say("a match index never decreases (late or duplicated responses)"),
                      _leader_case({"A": 3, "B": 3, "C": 0}, "B", 1, 3, 1, [1, 1, 1], 3, want_match=3, majority=3)),
                 Rule(say("the HWM advances when a majority holds an entry of the current generation"),
                      _leader_case({"A": 3, "B": 0, "C": 0}, "B", 2, 0, 1, [1, 1, 1], 2, want_match=2, majority=2)),
                 Rule(say("the HWM does not advance without a majority"),
                      _leader_case({"A": 3, "B": 0, "C": 0, "D": 0, "E": 0}, "B", 3, 0, 1, [1, 1, 1], 0, majority=0)),
                 Rule(say("the HWM only advances over an entry of the leader's current generation (F8)"),
                      _leader_case({"A": 2, "B": 0, "C": 0}, "B", 2, 0, 3, [1, 2], 0, majority=2)),
                 Rule(say("older entries are committed together with an entry of the current generation"),
                      _leader_case({"A": 2, "B": 0, "C": 0}, "B", 2, 0, 3, [1, 3], 2, majority=2)),
                 Rule(say("the HWM never moves back"),
                      _leader_case({"A": 3, "B": 1, "C": 1}, "B", 1, 3, 1, [1, 1, 1], 3, majority=1)),
                 Rule(say("the majority is counted over the whole cluster, even-sized too"),
                      _leader_case({"A": 7, "B": 0, "C": 5, "D": 3}, "B", 7, 3, 1, [1] * 7, 5, majority=5)),
             ), (("s1", "generation"), ("f8", "generation"))),
    Exercise(3, say("the follower's handling of a replication request"),
             say("scenarios S1 and K2: lab/sim/scenarios/s1.txt, k2.txt; the article's 'Log Truncation'"), (
                 Rule(say("refuse when prev_index is beyond the log, and retry from the log end + 1 at most"),
                      _follower_case([1], 3, 1, [_e(4, 1)], lambda r: "" if not r.success and
                                     1 <= r.conflict_index <= 2 else say("expected a refusal with conflict_index 2"))),
                 Rule(say("refuse when the entry at prev_index is of another generation"),
                      _follower_case([1, 1], 2, 2, [_e(3, 2)], lambda r: "" if not r.success and
                                     1 <= r.conflict_index <= 2 else say("expected a refusal"))),
                 Rule(say("append new entries after a matching prev entry"),
                      _follower_case([], 0, 0, [_e(1, 1)], lambda r: "" if r.success and r.append == (_e(1, 1),)
                                     and r.truncate_from is None else say("expected success appending index 1"))),
                 Rule(say("entries already held are kept: appends are idempotent"),
                      _follower_case([1, 1], 0, 0, [_e(1, 1)], lambda r: "" if r.success and r.append == ()
                                     and r.truncate_from is None else say("expected success, nothing removed or added"))),
                 Rule(say("a late request never truncates matching entries"),
                      _follower_case([1, 1, 1], 1, 1, [_e(2, 1)], lambda r: "" if r.success and
                                     r.truncate_from is None else say("entry 2 matches: nothing may be removed"))),
                 Rule(say("truncate from the first conflicting entry, keep what precedes it"),
                      _follower_case([1, 1, 1, 1], 2, 1, [_e(3, 1), _e(4, 2, "e5")], lambda r: "" if r.success and
                                     r.truncate_from == 4 and r.append == (_e(4, 2, "e5"),)
                                     else say("expected truncate_from 4 and append the generation-2 entry"))),
                 Rule(say("answer match_index = prev_index + len(entries), not the log end"),
                      _follower_case([1, 1, 1], 0, 0, [_e(1, 1)], lambda r: "" if r.success and r.match_index == 1
                                     else say("expected match_index 1: entries 2-3 are not known to match the leader"))),
                 Rule(say("an empty request (heartbeat) after a matching entry is accepted"),
                      _follower_case([1], 1, 1, [], lambda r: "" if r.success and r.match_index == 1
                                     else say("expected success with match_index 1"))),
             ), (("s1", "generation"), ("k2", "generation"))),
    Exercise(4, say("read gating"),
             say("scenario S1, step 3: lab/sim/scenarios/s1.txt; the article's readEntry"), (
        Rule(say("serve entries at or below the HWM"), lambda impl: _read_case(3, 3, None)(impl) or
             _read_case(1, 3, None)(impl)),
        Rule(say("refuse above the HWM, naming the index and the HWM"),
             _read_case(4, 3, str(Reason(ABOVE_HWM, index=4, hwm=3)))),  # the lab's own sentence
        Rule(say("refuse an index below 1"), _read_case(0, 3, "not available")),
    ), (("s1", "generation"),)),
    Exercise(5, say("write-ahead log truncation across segments"),
             say("scenario S2: lab/sim/scenarios/s2.txt; lab/ports/wal.py; the article's WALSegment.truncate"), (
                 Rule(say("cut the segment that holds the index at that entry's offset, delete every later segment"),
                      _plan_case(2, ["seg-4", "seg-6"], ("seg-1", 30))),
                 Rule(say("an index at a segment's start removes that segment whole"),
                      _plan_case(4, ["seg-6"], ("seg-4", 0))),
                 Rule(say("segments before the index are kept"), _plan_case(5, ["seg-6"], ("seg-4", 30))),
                 Rule(say("reopening the log after truncation shows the same entries"), _wal_round_trip),
             ), (("s2", "generation"),)),
    Exercise(6, say("restart recovery with leader epochs (KIP-101)"),
             say("scenarios K1, K2: lab/sim/scenarios/k1.txt, k2.txt (try --truncation high-water-mark); KIP-101"), (
                 Rule(say("the leader answers the last index of a generation <= the one asked"),
                      lambda impl: _epoch_end_case([1, 1, 2, 2, 4], 2, 4)(impl)
                      or _epoch_end_case([1, 1, 2, 2, 4], 3, 4)(impl)
                      or _epoch_end_case([1, 1, 2, 2, 4], 4, 5)(impl), LEADER_EPOCH_END),
                 Rule(say("a generation older than the whole log ends at 0"),
                      _epoch_end_case([2, 2], 1, 0), LEADER_EPOCH_END),
                 Rule(say("the follower truncates what it holds after the leader's end"),
                      _epoch_cut_case(5, 3, 4), EPOCH_TRUNCATION_POINT),
                 Rule(say("the follower keeps everything when the leader's end is at or past its log end"),
                      lambda impl: _epoch_cut_case(5, 5, None)(impl) or _epoch_cut_case(5, 7, None)(impl),
                      EPOCH_TRUNCATION_POINT),
             ), (("k1", "leader-epoch"), ("k2", "leader-epoch"))),
)


def exercise(number: int) -> Exercise:
    for ex in EXERCISES:
        if ex.number == number:
            return ex
    raise ValueError(say("no exercise {number}; there are exercises 1 to {count}", number=number, count=len(EXERCISES)))


def check_rules(ex: Exercise, impl: Impl, limit: float = DEFAULT_LIMIT) -> tuple[str, list[RuleResult]]:
    """Each rule of the exercise on the student's functions, every call timed and its result's type checked."""
    impl = guarded(impl, limit)
    results, started, hung = [], False, set()
    for rule in ex.rules:
        function = rule.function or ex.functions[0]
        fault = None
        if function in hung:  # each rule would wait out the limit again: one wait says it
            results.append(RuleResult(rule.text, False, say("not run: {function} did not return in an earlier rule",
                                                            function=function), function))
            continue
        uses = getattr(rule.check, "uses", None)
        if uses is not None:
            uses.clear()
        try:
            problem = rule.check(impl)
            started = True
        except NotStarted as exc:
            results.append(RuleResult(rule.text, False, say("not implemented yet: {hint}", hint=hint(str(exc))), function,
                                      unwritten=True))
            continue
        except Exception as exc:  # a student's code may raise anything: report it, do not crash
            started = True
            found = fault_of(exc)
            fault = found.as_dict() if found else None
            problem = fault_text(found) if found else say(
                "raised {error}", error=traceback.format_exception_only(type(exc), exc)[-1].strip())
        results.append(RuleResult(rule.text, problem is None, problem or "", function, fault,
                                  uses=uses[0] if uses else None))
        if fault and fault["kind"] == IMPORT:  # every other rule would fail the same way
            break
        if fault and fault["kind"] == TIMEOUT:
            hung.add(fault["function"])
    if not started:
        return "not started", results
    return ("passing" if all(r.ok for r in results) else "failing"), results


def package_dir(impl_name: str) -> Path:
    """Where the code of an implementation (`exercises`, `solutions`, `MODULE:f1,f2`) lives."""
    module = importlib.import_module(impl_name.split(":", 1)[0])
    return Path(module.__file__).parent


def files_sha256(impl_name: str, exercises=None) -> dict[str, str]:
    """sha256 of each exercise's file in that implementation, keyed by its handout path (exercises/NAME.py)."""
    root = package_dir(impl_name)
    hashes = {}
    for ex in exercises or EXERCISES:
        path = root / Path(ex.module).name
        if path.exists():
            hashes[ex.module] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def run_check(number: int, impl_name: str, *, out_root: str | Path, seed: int = 7, real: bool = False,
              scenarios: bool = True, progress: Callable[[str], None] = lambda s: None,
              limit: float = DEFAULT_LIMIT, explore: bool = True) -> CheckReport:
    """Exercise `number`'s rules, then its scenarios (each call of the student's code limited to `limit` s), then
    a short exploration for the smallest run that breaks a rule: those two only when every function they need is
    written (the student's, or the reference's where the course's repository has it); the report says which
    exercises they wait for."""
    from lab.student import runs

    ex = exercise(number)
    impl = load_impl(impl_name)
    with machinery_log(out_root, number):
        status, rules = check_rules(ex, impl, limit)
        report = CheckReport(ex, status, rules)
        if status == "not started" or not scenarios or report.does_not_import():
            return report
        mixed = cluster_impl(ex, impl_name)
        yours = student_functions(mixed)
        report.missing = {f: why for f, why in runs.waiting(impl).items() if f in yours}
        # Each run records the files of every exercise whose code of the student's it ran: this exercise's in the
        # course's repository (the rest is the reference's), all of them in a handout, which has no reference. The
        # grader reproduces a run with exactly those files (docs/grading.md).
        ran = [e for e in EXERCISES if any(f in yours for f in e.functions)]
        runs.run_scenarios(report, impl_name, out_root=out_root, seed=seed, real=real, progress=progress,
                           limit=limit, mixed=mixed, missing=report.missing, files=files_sha256(impl_name, ran))
        if explore:
            fault = report.first_fault()
            if fault is None:
                runs.run_exploration(report, mixed, out_root, progress, report.missing)
            else:  # a fault is already the story: no search to tell it again, and the report says so
                report.exploration = runs.not_explored(report)
        if explore:  # a whole check: what `exercise list` and the students' tests say of these same files
            runs.save_verdict(out_root, number, report.status, files_sha256(impl_name))
    return report


@contextlib.contextmanager
def machinery_log(out_root, number: int):
    """The lab's own warnings while a check runs (a write-ahead log the check reopens on purpose, a node process that
    stopped mid-request) go to `ex<N>-check.log` beside the traces, not to the student's screen: what a check finds is
    in its report."""
    lab_log = logging.getLogger("lab")
    kept = lab_log.propagate, lab_log.handlers[:]
    try:
        Path(out_root).mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(Path(out_root) / f"ex{number}-check.log", mode="w", encoding="utf-8",
                                      delay=True)
    except OSError:
        handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    lab_log.handlers, lab_log.propagate = [handler], False
    try:
        yield
    finally:
        lab_log.handlers, lab_log.propagate = kept[1], kept[0]
        handler.close()


def last_verdict(number: int, impl_name: str, out_root=None) -> str | None:
    """The status the last whole `check N` gave the student's files as they are now (None: none did)."""
    from lab.student.runs import last_verdict as saved

    try:
        root = out_root or package_dir(impl_name).resolve().parent / ".hwm-lab" / "checks"
        return saved(root, number, files_sha256(impl_name))
    except Exception:  # the package does not import: no check ran on it
        return None


def cluster_impl(ex: Exercise, impl_name: str) -> str:
    """The cluster runs this exercise's functions from the student's code and the rest from `solutions` (in a
    handout, which has none, from the student's code too)."""
    return impl_name if impl_name == "solutions" else f"{impl_name}:{','.join(ex.functions)}"
