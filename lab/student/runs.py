"""The runs of an exercise's check: its scenarios (simulator, and processes with --real) and its short exploration,
each run only when every function it needs is written, and each failure laid where it is: on this exercise, or on
the student's other exercise that broke its own rule in the run ("exercise 2 uses your exercise 1, which ...")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

from lab.core.guard import IMPORT, StudentFault, fault_of, guarded
from lab.core.interface import (
    CHECK_READ, EPOCH_TRUNCATION_POINT, EXERCISE_OF, FOLLOWER_APPEND, FUNCTIONS, HIGH_WATER_MARK, LEADER_EPOCH_END,
    ON_REPLICATION_RESPONSE, PLAN_TRUNCATION, SegmentInfo)
from lab.core.impl import Impl, student_functions
from lab.core.replica import Log
from lab.harness import scenario as scenario_module
from lab.harness.script import load as load_script
from lab.i18n import Joined, Listed, Text, say
from lab.i18n import scenarios as scenario_words
from lab.i18n.scenarios import command_text
from lab.student.faults import fault_text, scenario_fault_text

# The segments exercise 5's probe and rules plan over: three of them, the first index of each its name.
SEGMENTS = (
    SegmentInfo(path="seg-1", first_index=1, offsets={1: 0, 2: 30, 3: 60}, size=90),
    SegmentInfo(path="seg-4", first_index=4, offsets={4: 0, 5: 30}, size=60),
    SegmentInfo(path="seg-6", first_index=6, offsets={6: 0}, size=30),
)

# What each run may call, by exercise: a scenario (with its truncation strategy) and the exploration (by strategy).
# tests/test_student_runs.py holds these against the calls the reference makes, seed after seed.
SCENARIO_NEEDS = {
    ("n4", "generation"): (1, 2, 3, 4),
    ("s1", "generation"): (1, 2, 3, 4, 5),
    ("f8", "generation"): (1, 2, 3, 4, 5),
    ("k2", "generation"): (1, 2, 3, 5),
    ("s2", "generation"): (1, 2, 3, 4, 5),
    ("k1", "leader-epoch"): (1, 2, 3, 5, 6),
    ("k2", "leader-epoch"): (1, 2, 3, 5, 6),
}
EXPLORE_NEEDS = {"generation": (1, 2, 3, 4, 5), "leader-epoch": (1, 2, 3, 4, 5, 6)}

PASSED, FAILED, WAITS, ELSEWHERE, NOT_RUN = "passed", "failed", "waits", "elsewhere", "not run"  # a run's status


# A call of each function that any written one answers at once: a function that raises NotImplementedError here
# is not written yet.
PROBES = {
    HIGH_WATER_MARK: lambda: ([0],),
    ON_REPLICATION_RESPONSE: lambda: ({"A": 0}, "A", 0, 0, 1, lambda i: 0, lambda match: 0),
    FOLLOWER_APPEND: lambda: (Log(), 0, 0, ()),
    CHECK_READ: lambda: (1, 1),
    PLAN_TRUNCATION: lambda: (list(SEGMENTS), 2),
    LEADER_EPOCH_END: lambda: (Log(), 1),
    EPOCH_TRUNCATION_POINT: lambda: (Log(), 0),
}


def waiting(impl: Impl) -> dict[str, Text]:
    """The functions of `impl` that cannot run in a cluster yet: function -> why (not written, or its file does not
    import)."""
    checked, found = guarded(impl, 0.2), {}
    for function in FUNCTIONS:
        try:
            getattr(checked, function)(*PROBES[function]())
        except NotImplementedError:
            found[function] = say("not written yet")
        except StudentFault as exc:
            if exc.fault.kind == IMPORT:
                found[function] = say("its file does not import")
        except Exception:  # written, and wrong on this input: the rules say so
            pass
    return found


def exercises_text(numbers) -> Text:
    """`your exercise 2`, or `your exercises 2, 3`."""
    numbers = sorted(numbers)
    if len(numbers) == 1:
        return say("your exercise {number}", number=numbers[0])
    return say("your exercises {numbers}", numbers=Listed(map(str, numbers)))


def waits_for(needs, missing: dict[str, str]) -> list[int]:
    """The exercises among `needs` with a function that cannot run yet (`missing`: function -> why)."""
    return sorted({EXERCISE_OF[f] for f in missing if EXERCISE_OF[f] in needs})


def blame(number: int, own: tuple[str, ...], fault: dict | None, wrong_calls) -> tuple[str, dict | None]:
    """Whose failure a run shows: (FAILED, own fault or call) when exercise `number`'s own function failed or broke
    its rule, (ELSEWHERE, {exercise, text}) when another exercise of the student's did, else (PASSED-or-verdict, None).
    A call of exercise 2 handed a wrong answer of exercise 1 is exercise 1's."""
    def whose(function: str) -> int:
        return EXERCISE_OF.get(function, number)

    if fault and whose(fault["function"]) == number:
        return FAILED, None
    for node, step, call in wrong_calls:
        if call.used is None and call.function in own:
            return FAILED, {"call": call, "node": node, "step": step}
    if fault:
        other = whose(fault["function"])
        return ELSEWHERE, {"exercise": other, "text": say(
            "exercise {number} uses your exercise {other}, which failed in this run: {fault}", number=number,
            other=other, fault=fault_text(fault))}
    for _, _, call in wrong_calls:
        culprit = call.used or call
        if culprit.function not in own:
            other = whose(culprit.function)
            return ELSEWHERE, {"exercise": other, "text": say(
                "exercise {number} uses your exercise {other}, which broke its rule in this run: {call}",
                number=number, other=other, call=culprit.sentence())}
    return PASSED, None


def run_scenarios(report, impl_name: str, *, out_root: str | Path, seed: int, real: bool,
                  progress: Callable[[Text], None], limit: float, mixed: str, missing: dict[str, str],
                  files: dict[str, str]) -> None:
    """The exercise's scenarios on the simulator (and as processes), their results added to the report; `files`: the
    sha256 of each of the student's files the cluster runs (the exercise's, and in a handout every exercise's),
    recorded by each run so that a submission packs no stale run and the grader reproduces it with the same code."""
    ex, number = report.exercise, report.exercise.number
    own = ex.functions
    meta = {"exercise": number, "files_sha256": files}
    failed = None  # the function of this exercise whose failure stopped a node: the next scenarios would stop there
    for name, strategy in ex.scenarios:
        base = {"scenario": name, "truncation": strategy, "seed": seed, "exercise": number,
                "files_sha256": meta["files_sha256"], "fault": None}
        if failed is not None:
            report.scenarios.append({**base, "source": "sim", "status": NOT_RUN, "passed": False, "out": None,
                                     "explain": say("your {function} failed in the run above, and this run would "
                                                    "stop at it too: fix it first", function=failed)})
            continue
        waiting = waits_for(SCENARIO_NEEDS[(name, strategy)], missing)
        if waiting:
            report.scenarios.append({**base, "source": "sim", "status": WAITS, "passed": False, "out": None,
                                     "waits": waiting, "explain": ""})
            continue
        sim = None
        for source in ["sim"] + (["real"] if real else []):
            if sim is not None and sim["status"] == ELSEWHERE:  # the same code: the same story, told once
                break
            out = Path(out_root) / f"ex{number}-{name}-{strategy}-{source}-seed{seed}"
            progress(say("exercise {number}: scenario {name} ({strategy}) on the simulator", number=number, name=name,
                         strategy=strategy) if source == "sim" else
                     say("exercise {number}: scenario {name} ({strategy}) as real processes", number=number,
                         name=name, strategy=strategy))
            run = _run_one(name, strategy, source, out, seed, mixed, meta, limit, number, own)
            report.scenarios.append({**base, **run, "source": source, "out": str(out)})
            sim = sim or report.scenarios[-1]
            if run["status"] == FAILED and run.get("fault") and run["fault"].get("function") in own:
                failed = run["fault"]["function"]
    if any(s["status"] == FAILED for s in report.scenarios):
        report.status = "failing"


def _run_one(name, strategy, source, out, seed, mixed, meta, limit, number, own) -> dict:
    if out.exists():
        shutil.rmtree(out)
    wrong, waiting = [], set()
    try:
        if source == "sim":
            verdict = scenario_module.simulate(name, seed=seed, truncation=strategy, impl=mixed, out=out, meta=meta,
                                               limit=limit, judge=True)
            wrong, waiting = verdict.wrong_calls, verdict.unwritten
        else:
            from lab.harness.realdriver import run_real  # (real processes: not imported where only sims run)

            verdict, _ = run_real(name, impl=mixed, out=out, seed=seed, truncation=strategy, meta=meta, limit=limit)
        explain, passed, fault = _explain(load_script(name), verdict), verdict.passed, verdict.fault
    except Exception as exc:  # the student's code crashed inside the cluster
        found = fault_of(exc)
        fault = {"node": "", "step": "", "scenario": name, **found.as_dict()} if found else None
        passed, explain = False, say("the run crashed: {error}", error=f"{type(exc).__name__}: {exc}")
    if waiting:  # a node reached a function not written yet (the needs above are declared too narrow)
        return {"status": WAITS, "passed": False, "waits": sorted({EXERCISE_OF[f] for f in waiting}),
                "explain": "", "fault": None}
    status, found = blame(number, own, fault, wrong)
    if status == ELSEWHERE:
        return {"status": ELSEWHERE, "passed": False, "elsewhere": found, "explain": found["text"], "fault": None}
    if status == FAILED and found is not None:  # a call of the student's broke its rule; the run may have passed
        said = say("a call of your function broke its exercise's rule in this run: {call}",
                   call=found["call"].sentence())
        return {"status": FAILED, "passed": False, "fault": None,
                "explain": Joined([said, _call_steps(load_script(name), found) if passed else explain], "\n")}
    return {"status": PASSED if passed else FAILED, "passed": passed, "explain": explain, "fault": fault}


def run_exploration(report, mixed: str, out_root, progress, missing: dict[str, str]) -> None:
    """A short search for the smallest run that breaks a rule (lab.explore); one found that the exercise's own code
    breaks fails the exercise, one that another exercise of the student's breaks is said as its."""
    from lab.explore.check import explore_check

    number = report.exercise.number
    strategy = "leader-epoch" if number == 6 else "generation"
    waiting = waits_for(EXPLORE_NEEDS[strategy], missing)
    if waiting:
        report.exploration = {"found": False, "status": WAITS, "waits": waiting, "text": say(
            "explore: it needs {exercises}", exercises=exercises_text(waiting))}
        return
    progress(say("exercise {number}: a short exploration", number=number))
    found = explore_check(number, mixed, out_root)
    culprit = found.get("function")
    if found["found"] and culprit and culprit not in report.exercise.functions \
            and culprit in student_functions(mixed):
        other = EXERCISE_OF[culprit]
        found = {**found, "found": False, "status": ELSEWHERE, "elsewhere": {"exercise": other}, "text": Joined([
            say("exercise {number} uses your exercise {other}, which breaks a rule in the run below", number=number,
                other=other), found["text"]], "\n")}
    report.exploration = found
    if found["found"]:
        report.status = "failing"


def _call_steps(script, found: dict) -> Text:
    """A run that passed though a call broke its exercise's rule: which rule broke where, and the steps up to it."""
    call, step = found["call"], found["step"]
    total = len(script.steps)
    step = step if isinstance(step, int) and 1 <= step <= total else total
    lines = [say("broken: the rule of exercise {number} ({function}), by {node}'s call in step {step}",
                 number=EXERCISE_OF[call.function], function=call.function, node=found["node"], step=step),
             say("steps that show it ({count} of {total}):", count=step, total=total)]
    lines += [Joined([f"  {n}. ", text], "") for n, text in enumerate(scenario_words.steps(script)[:step], start=1)]
    return Joined(lines, "\n")


def not_explored(report) -> dict:
    """The exploration a check leaves out when the exercise's own code already failed (it raised, looped, returned a
    wrong type): a search would stop at that same call. Said, so that the report's last line is not missing."""
    fault = next((r.fault for r in report.rules if r.fault), None) or \
        next((s["fault"] for s in report.scenarios if s.get("fault") and s.get("status") == FAILED), None)
    function = (fault or {}).get("function") or report.exercise.functions[0]
    return {"found": False, "status": "not run", "text": say(
        "explore: your {function} failed above, and every search would stop at that call: fix it first",
        function=function)}


def _explain(script, verdict) -> Text:
    """The smallest step list that shows the failure: the steps up to the first broken expectation."""
    if verdict.fault:  # the student's code stopped a node: that, and the steps up to it
        step = verdict.fault["step"]
        lines = [scenario_fault_text(verdict.fault),
                 say("steps that show it ({count} of {total}):", count=step, total=len(script.steps))]
        lines += [Joined([f"  {n}. ", text], "") for n, text in
                  enumerate(scenario_words.steps(script)[:step], start=1)]
        return Joined(lines, "\n")
    failures = verdict.failures()
    if not failures:
        return verdict.aborted
    first = failures[0]
    name = command_text(first.name)
    broken = (say("broken: {name} -- {detail}", name=name, detail=first.detail) if first.detail
              else say("broken: {name}", name=name))
    lines = [broken, say("steps that show it ({count} of {total}):", count=first.step + 1, total=len(script.steps))]
    for number, text in enumerate(scenario_words.steps(script)[: first.step + 1], start=1):
        lines.append(Joined([f"  {number}. ", text], ""))
    return Joined(lines, "\n")


# ---- the last check's verdict, for `exercise list` and the students' tests -----------------------------------------


def verdict_path(out_root, number: int) -> Path:
    return Path(out_root) / f"ex{number}-verdict.json"


def save_verdict(out_root, number: int, status: str, files: dict[str, str]) -> None:
    """What `check N` concluded, and from which files (every exercise's: in a handout they all run together)."""
    path = verdict_path(out_root, number)
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(path.name + ".tmp")
    aside.write_text(json.dumps({"exercise": number, "status": status, "files_sha256": files}), encoding="utf-8")
    aside.replace(path)


def last_verdict(out_root, number: int, files: dict[str, str]) -> str | None:
    """The status the last `check N` gave these same files, if it ran on them."""
    try:
        saved = json.loads(verdict_path(out_root, number).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return saved.get("status") if isinstance(saved, dict) and saved.get("files_sha256") == files else None
