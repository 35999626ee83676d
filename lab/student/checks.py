"""The exercises and their checks: each rule of the pattern a student's function must keep, in words.

`hwm-lab exercise check N` runs exercise N's rules (pure calls with small, hand-picked or smallest-first inputs)
and then its scenarios on the simulator (and, with --real, as processes), writing traces for `hwm-lab submit`.
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import shutil
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from lab.core.impl import Impl
from lab.core.impl import load as load_impl
from lab.core.interface import AppendResult, SegmentInfo
from lab.core.messages import Entry
from lab.core.replica import Log
from lab.ports.wal import WriteAheadLog
from lab.sim import scenario as scenario_module
from lab.sim.realdriver import run_real


class NotStarted(Exception):
    pass


@dataclass(frozen=True)
class Rule:
    text: str  # the rule, as the pattern states it
    check: Callable[[Impl], str | None]  # None when it holds, else what went wrong on the smallest example
    function: str = ""  # the student's function it tests (default: the exercise's only function)


@dataclass(frozen=True)
class Exercise:
    number: int
    title: str
    module: str
    read: str
    rules: tuple[Rule, ...]
    scenarios: tuple[tuple[str, str], ...] = ()  # (scenario, truncation strategy)
    functions: tuple[str, ...] = ()  # what the student writes; the rest of a checked cluster runs `solutions`


@dataclass
class RuleResult:
    rule: str
    ok: bool
    detail: str = ""
    function: str = ""


@dataclass
class CheckReport:
    exercise: Exercise
    status: str  # "not started", "failing", "passing"
    rules: list[RuleResult] = field(default_factory=list)
    scenarios: list[dict] = field(default_factory=list)

    def text(self) -> str:
        ex = self.exercise
        lines = [f"Exercise {ex.number}: {ex.title} ({ex.module}) -- {self.status.upper()}"]
        for r in self.rules:
            lines.append(f"  [{'ok' if r.ok else 'BROKEN'}] {r.function}: {r.rule}")
            if not r.ok:
                lines.extend(f"      {line}" for line in r.detail.splitlines())
        for s in self.scenarios:
            lines.append(f"  [{'ok' if s['passed'] else 'FAIL'}] scenario {s['scenario']} ({s['truncation']}, "
                         f"{s['source']}, seed {s['seed']}) -> {s['out']}")
            if not s["passed"]:
                lines.extend(f"      {line}" for line in s["explain"].splitlines())
        if self.status == "not started":
            lines.append(f"  Start with the docstring of {ex.module}; read {ex.read}.")
        return "\n".join(lines)


def _call(fn, *args):
    try:
        return fn(*args)
    except NotImplementedError as exc:
        raise NotStarted(str(exc)) from exc


def _entries(*generations: int, payload: str = "e") -> list[Entry]:
    return [Entry(index=i, generation=g, payload=f"{payload}{i}") for i, g in enumerate(generations, start=1)]


# ---- exercise 1 -------------------------------------------------------------------------------------------


def _majority_index(match):
    return max(k for k in range(max(match) + 1) if sum(m >= k for m in match) > len(match) // 2)


def _hwm_rule(sizes):
    def check(impl):
        for size in sizes:
            for match in itertools.product(range(4), repeat=size):  # smallest lists first
                got = _call(impl.high_water_mark, list(match))
                want = _majority_index(match)
                if got != want:
                    return (f"match indexes {list(match)} ({size} nodes, a majority is {size // 2 + 1}): "
                            f"got {got}, expected {want}")
        return None
    return check


def _hwm_does_not_mutate(impl):
    match = [1, 3, 2]
    _call(impl.high_water_mark, match)
    return None if match == [1, 3, 2] else f"high_water_mark([1, 3, 2]) changed its argument to {match}"


# ---- exercise 2 -------------------------------------------------------------------------------------------


def _leader_case(match, follower, acked, hwm, generation, generations, want_hwm, want_match=None):
    def check(impl):
        table = dict(match)
        got = _call(impl.on_replication_response, table, follower, acked, hwm, generation,
                    lambda i: 0 if i == 0 else generations[i - 1],
                    load_impl("solutions").high_water_mark)  # judge exercise 2 alone
        where = (f"match_index {match}, {follower} acknowledges {acked}, current HWM {hwm}, leader generation "
                 f"{generation}, entry generations {generations}")
        if want_match is not None and table[follower] != want_match:
            return f"{where}: match_index[{follower}] became {table[follower]}, expected {want_match}"
        if got != want_hwm:
            return f"{where}: returned HWM {got}, expected {want_hwm}"
        return None
    return check


# ---- exercise 3 -------------------------------------------------------------------------------------------


def _follower_case(log_generations, prev_index, prev_generation, entries, expect: Callable[[AppendResult], str]):
    def check(impl):
        log = Log(_entries(*log_generations))
        result = _call(impl.follower_append, log, prev_index, prev_generation, tuple(entries))
        problem = expect(result)
        if problem:
            shown = [(e.index, e.generation) for e in entries]
            return (f"log generations {list(log_generations)}, request prev=({prev_index}, {prev_generation}) "
                    f"entries (index, generation) {shown}: {problem}; got {result}")
        return None
    return check


def _e(index, generation, payload=None):
    return Entry(index=index, generation=generation, payload=payload or f"e{index}")


# ---- exercise 4 -------------------------------------------------------------------------------------------


def _read_case(index, hwm, want):
    def check(impl):
        got = _call(impl.check_read, index, hwm)
        if want is None and got is not None:
            return f"check_read({index}, hwm={hwm}) refused ({got!r}) but index {index} is at or below the HWM"
        if want is not None and (got is None or not got.startswith(want)):
            return f"check_read({index}, hwm={hwm}) returned {got!r}, expected {want!r}"
        return None
    return check


# ---- exercise 5 -------------------------------------------------------------------------------------------

SEGMENTS = (
    SegmentInfo(path="seg-1", first_index=1, offsets={1: 0, 2: 30, 3: 60}, size=90),
    SegmentInfo(path="seg-4", first_index=4, offsets={4: 0, 5: 30}, size=60),
    SegmentInfo(path="seg-6", first_index=6, offsets={6: 0}, size=30),
)


def _plan_case(index, must_delete, cut):
    def check(impl):
        plan = _call(impl.plan_truncation, list(SEGMENTS), index)
        deleted = set(plan.delete)
        kept_whole = {s.path for s in SEGMENTS if s.first_index < index}
        where = f"segments seg-1 (1-3), seg-4 (4-5), seg-6 (6); truncate from {index}"
        if not set(must_delete) <= deleted:
            return f"{where}: deleted {sorted(deleted)}, but {sorted(set(must_delete) - deleted)} start after it"
        if deleted & kept_whole:
            return f"{where}: deleted {sorted(deleted & kept_whole)}, which hold entries before {index}"
        if cut and (plan.cut_path, plan.cut_offset) != cut and not (cut[1] == 0 and cut[0] in deleted):
            return f"{where}: cut {plan.cut_path} at {plan.cut_offset}, expected {cut[0]} at offset {cut[1]}"
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
    return None if got == [1, 2, 3] else f"10 entries in segments of 120 bytes, truncate_from(4), reopen: {got}"


# ---- exercise 6 -------------------------------------------------------------------------------------------


def _epoch_end_case(generations, of_generation, want):
    def check(impl):
        got = _call(impl.leader_epoch_end, Log(_entries(*generations)), of_generation)
        if got != want:
            return f"leader log generations {list(generations)}, asked for generation {of_generation}: got {got}, " \
                   f"expected {want}"
        return None
    return check


def _epoch_cut_case(log_end, end_index, want):
    def check(impl):
        got = _call(impl.epoch_truncation_point, Log(_entries(*([1] * log_end))), end_index)
        if got != want:
            return f"follower log end {log_end}, leader's end {end_index}: got {got}, expected {want}"
        return None
    return check


EXERCISES: tuple[Exercise, ...] = (
    Exercise(1, "the high-water mark from the match indexes", "exercises/high_water_mark.py",
             "scenario N4: lab/sim/scenarios/n4.txt (docs/scenarios.md); the article's computeHighwaterMark", (
                 Rule("the HWM is the largest index a majority (n // 2 + 1) holds: odd cluster sizes",
                      _hwm_rule((1, 3, 5))),
                 Rule("the HWM is the largest index a majority (n // 2 + 1) holds: even cluster sizes (N4)",
                      _hwm_rule((2, 4, 6))),
                 Rule("computing the HWM does not modify the match indexes", _hwm_does_not_mutate),
             ), (("n4", "generation"),), ("high_water_mark",)),
    Exercise(2, "the leader's handling of a replication response", "exercises/leader.py",
             "scenarios S1 and F8: lab/sim/scenarios/s1.txt, f8.txt (docs/scenarios.md); Raft's figure 8", (
                 Rule("a match index never decreases (late or duplicated responses)",
                      _leader_case({"A": 3, "B": 3, "C": 0}, "B", 1, 3, 1, [1, 1, 1], 3, want_match=3)),
                 Rule("the HWM advances when a majority holds an entry of the current generation",
                      _leader_case({"A": 3, "B": 0, "C": 0}, "B", 2, 0, 1, [1, 1, 1], 2, want_match=2)),
                 Rule("the HWM does not advance without a majority",
                      _leader_case({"A": 3, "B": 0, "C": 0, "D": 0, "E": 0}, "B", 3, 0, 1, [1, 1, 1], 0)),
                 Rule("the HWM only advances over an entry of the leader's current generation (F8)",
                      _leader_case({"A": 2, "B": 0, "C": 0}, "B", 2, 0, 3, [1, 2], 0)),
                 Rule("older entries are committed together with an entry of the current generation",
                      _leader_case({"A": 2, "B": 0, "C": 0}, "B", 2, 0, 3, [1, 3], 2)),
                 Rule("the HWM never moves back",
                      _leader_case({"A": 3, "B": 1, "C": 1}, "B", 1, 3, 1, [1, 1, 1], 3)),
                 Rule("the majority is counted over the whole cluster, even-sized too",
                      _leader_case({"A": 7, "B": 0, "C": 5, "D": 3}, "B", 7, 3, 1, [1] * 7, 5)),
             ), (("s1", "generation"), ("f8", "generation")), ("on_replication_response",)),
    Exercise(3, "the follower's handling of a replication request", "exercises/follower.py",
             "scenarios S1 and K2: lab/sim/scenarios/s1.txt, k2.txt; the article's 'Log Truncation'", (
                 Rule("refuse when prev_index is beyond the log, and retry from the log end + 1 at most",
                      _follower_case([1], 3, 1, [_e(4, 1)], lambda r: "" if not r.success and
                                     1 <= r.conflict_index <= 2 else "expected a refusal with conflict_index 2")),
                 Rule("refuse when the entry at prev_index is of another generation",
                      _follower_case([1, 1], 2, 2, [_e(3, 2)], lambda r: "" if not r.success and
                                     1 <= r.conflict_index <= 2 else "expected a refusal")),
                 Rule("append new entries after a matching prev entry",
                      _follower_case([], 0, 0, [_e(1, 1)], lambda r: "" if r.success and r.append == (_e(1, 1),)
                                     and r.truncate_from is None else "expected success appending index 1")),
                 Rule("entries already held are kept: appends are idempotent",
                      _follower_case([1, 1], 0, 0, [_e(1, 1)], lambda r: "" if r.success and r.append == ()
                                     and r.truncate_from is None else "expected success, nothing removed or added")),
                 Rule("a late request never truncates matching entries",
                      _follower_case([1, 1, 1], 1, 1, [_e(2, 1)], lambda r: "" if r.success and
                                     r.truncate_from is None else "entry 2 matches: nothing may be removed")),
                 Rule("truncate from the first conflicting entry, keep what precedes it",
                      _follower_case([1, 1, 1, 1], 2, 1, [_e(3, 1), _e(4, 2, "e5")], lambda r: "" if r.success and
                                     r.truncate_from == 4 and r.append == (_e(4, 2, "e5"),)
                                     else "expected truncate_from 4 and append the generation-2 entry")),
                 Rule("answer match_index = prev_index + len(entries), not the log end",
                      _follower_case([1, 1, 1], 0, 0, [_e(1, 1)], lambda r: "" if r.success and r.match_index == 1
                                     else "expected match_index 1: entries 2-3 are not known to match the leader")),
                 Rule("an empty request (heartbeat) after a matching entry is accepted",
                      _follower_case([1], 1, 1, [], lambda r: "" if r.success and r.match_index == 1
                                     else "expected success with match_index 1")),
             ), (("s1", "generation"), ("k2", "generation")), ("follower_append",)),
    Exercise(4, "read gating", "exercises/reads.py",
             "scenario S1, step 3: lab/sim/scenarios/s1.txt; the article's readEntry", (
        Rule("serve entries at or below the HWM", lambda impl: _read_case(3, 3, None)(impl) or
             _read_case(1, 3, None)(impl)),
        Rule("refuse above the HWM, naming the index and the HWM",
             _read_case(4, 3, "not available: index 4 is above the high-water mark 3")),
        Rule("refuse an index below 1", _read_case(0, 3, "not available")),
    ), (("s1", "generation"),), ("check_read",)),
    Exercise(5, "write-ahead log truncation across segments", "exercises/wal_truncation.py",
             "scenario S2: lab/sim/scenarios/s2.txt; lab/ports/wal.py; the article's WALSegment.truncate", (
                 Rule("cut the segment that holds the index at that entry's offset, delete every later segment",
                      _plan_case(2, ["seg-4", "seg-6"], ("seg-1", 30))),
                 Rule("an index at a segment's start removes that segment whole",
                      _plan_case(4, ["seg-6"], ("seg-4", 0))),
                 Rule("segments before the index are kept", _plan_case(5, ["seg-6"], ("seg-4", 30))),
                 Rule("reopening the log after truncation shows the same entries", _wal_round_trip),
             ), (("s2", "generation"),), ("plan_truncation",)),
    Exercise(6, "restart recovery with leader epochs (KIP-101)", "exercises/leader_epoch.py",
             "scenarios K1, K2: lab/sim/scenarios/k1.txt, k2.txt (try --truncation high-water-mark); KIP-101", (
                 Rule("the leader answers the last index of a generation <= the one asked",
                      lambda impl: _epoch_end_case([1, 1, 2, 2, 4], 2, 4)(impl)
                      or _epoch_end_case([1, 1, 2, 2, 4], 3, 4)(impl)
                      or _epoch_end_case([1, 1, 2, 2, 4], 4, 5)(impl), "leader_epoch_end"),
                 Rule("a generation older than the whole log ends at 0",
                      _epoch_end_case([2, 2], 1, 0), "leader_epoch_end"),
                 Rule("the follower truncates what it holds after the leader's end",
                      _epoch_cut_case(5, 3, 4), "epoch_truncation_point"),
                 Rule("the follower keeps everything when the leader's end is at or past its log end",
                      lambda impl: _epoch_cut_case(5, 5, None)(impl) or _epoch_cut_case(5, 7, None)(impl),
                      "epoch_truncation_point"),
             ), (("k1", "leader-epoch"), ("k2", "leader-epoch")), ("leader_epoch_end", "epoch_truncation_point")),
)


def exercise(number: int) -> Exercise:
    for ex in EXERCISES:
        if ex.number == number:
            return ex
    raise ValueError(f"no exercise {number}; there are exercises 1 to {len(EXERCISES)}")


def check_rules(ex: Exercise, impl: Impl) -> tuple[str, list[RuleResult]]:
    results, started = [], False
    for rule in ex.rules:
        function = rule.function or ex.functions[0]
        try:
            problem = rule.check(impl)
            started = True
        except NotStarted as exc:
            results.append(RuleResult(rule.text, False, f"not implemented yet: {exc}", function))
            continue
        except Exception as exc:  # a student's code may raise anything: report it, do not crash
            started = True
            tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
            problem = f"raised {tb}"
        results.append(RuleResult(rule.text, problem is None, problem or "", function))
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
              scenarios: bool = True, progress: Callable[[str], None] = lambda s: None) -> CheckReport:
    ex = exercise(number)
    impl = load_impl(impl_name)
    status, rules = check_rules(ex, impl)
    report = CheckReport(ex, status, rules)
    if status == "not started" or not scenarios:
        return report
    sources = ["sim"] + (["real"] if real else [])
    # The cluster runs this exercise's functions from the student's code and the rest from `solutions`.
    cluster_impl = impl_name if impl_name == "solutions" else f"{impl_name}:{','.join(ex.functions)}"
    # Each run records the exercise file it was made from, so that a submission packs no stale run.
    meta = {"exercise": number, "files_sha256": files_sha256(impl_name, [ex])}
    for name, strategy in ex.scenarios:
        for source in sources:
            out = Path(out_root) / f"ex{number}-{name}-{strategy}-{source}-seed{seed}"
            progress(f"exercise {number}: scenario {name} ({strategy}) on the {source}ulator"
                     if source == "sim" else f"exercise {number}: scenario {name} ({strategy}) as real processes")
            if out.exists():
                shutil.rmtree(out)
            try:
                if source == "sim":
                    verdict = scenario_module.simulate(name, seed=seed, truncation=strategy, impl=cluster_impl,
                                                       out=out, meta=meta)
                else:
                    verdict, _ = run_real(name, impl=cluster_impl, out=out, seed=seed, truncation=strategy,
                                          meta=meta)
                explain = _explain(scenario_module.load(name), verdict)
                passed = verdict.passed
            except Exception as exc:  # the student's code crashed inside the cluster
                passed, explain = False, f"the run crashed: {type(exc).__name__}: {exc}"
            report.scenarios.append({"scenario": name, "truncation": strategy, "source": source, "seed": seed,
                                     "passed": passed, "out": str(out), "explain": explain, "exercise": number,
                                     "files_sha256": meta["files_sha256"]})
    if any(not s["passed"] for s in report.scenarios):
        report.status = "failing"
    return report


def _explain(script, verdict) -> str:
    """The smallest step list that shows the failure: the steps up to the first broken expectation."""
    failures = verdict.failures()
    if not failures:
        return verdict.aborted
    first = failures[0]
    lines = [f"broken: {first.name}" + (f" -- {first.detail}" if first.detail else ""),
             f"steps that show it ({first.step + 1} of {len(script.steps)}):"]
    for number, step in enumerate(script.steps[: first.step + 1], start=1):
        lines.append(f"  {number}. {step.text}")
    return "\n".join(lines)

