"""The runs of an exercise's check (lab/student/runs.py): what each scenario needs is what the reference calls in it,
seed after seed; a failure is laid on the exercise whose function failed or broke its rule; the functions that
cannot run yet are found; and the last whole check's verdict is what `exercise list` says of the same files."""

from __future__ import annotations

import json
import os

import pytest

from lab.core.guard import Fault
from lab.core.impl import load
from lab.core.interface import EXERCISE_OF
from lab.core.judges import Call
from lab.core.reasons import Reason
from lab.harness.scenario import simulate
from lab.student import runs
from lab.student.checks import EXERCISES, files_sha256
from tests.studentcode import StudentCode
import tests.spy_impl as spy


@pytest.mark.parametrize("scenario", sorted(runs.SCENARIO_NEEDS), ids=lambda s: f"{s[0]}-{s[1]}")
def test_each_scenario_needs_no_more_than_it_declares(scenario, tmp_path, monkeypatch):
    name, strategy = scenario
    called = set()
    for seed in (0, 7, 11):
        where = tmp_path / str(seed)
        where.mkdir()
        monkeypatch.setitem(os.environ, "HWM_SPY_DIR", str(where))
        simulate(name, seed=seed, truncation=strategy, impl="tests.spy_impl")
        called |= {EXERCISE_OF[f] for f in spy.calls(where)}
    assert called <= set(runs.SCENARIO_NEEDS[scenario]), (called, runs.SCENARIO_NEEDS[scenario])
    assert {1, 2, 3} <= called  # (the spy counts: a scenario replicates)


def test_every_exercise_scenario_has_its_needs_declared():
    assert {pair for ex in EXERCISES for pair in ex.scenarios} <= set(runs.SCENARIO_NEEDS)
    for ex in EXERCISES:  # an exercise's own scenarios reach its functions
        assert all(ex.number in runs.SCENARIO_NEEDS[pair] for pair in ex.scenarios), ex.number


def _call(function, why="wrong", used=None):
    return Call(function, (), None, 0, why, used=used)


def test_a_failure_lands_on_the_exercise_whose_function_failed_or_broke_its_rule():
    own = ("on_replication_response",)
    fault = Fault("raised", "high_water_mark", "[1]", "IndexError: x", "exercises/high_water_mark.py", 3).as_dict()
    status, found = runs.blame(2, own, fault, [])
    assert status == runs.ELSEWHERE and found["exercise"] == 1
    assert str(found["text"]).startswith("exercise 2 uses your exercise 1, which failed in this run: high_water_mark(")
    # a call of exercise 2 handed a wrong answer of exercise 1 is exercise 1's
    wrong_one = _call("high_water_mark", why=Reason("hwm_not_held", index=2, holders=1, size=3, majority=2))
    status, found = runs.blame(2, own, None, [("A", 1, wrong_one), ("A", 1, _call(own[0], used=wrong_one))])
    assert status == runs.ELSEWHERE and found["exercise"] == 1 and "only 1 of the 3 match indexes reaches index 2" in found["text"]
    # its own call first, whatever else broke
    status, found = runs.blame(2, own, fault, [("A", 1, _call(own[0]))])
    assert status == runs.FAILED and found["call"].function == own[0]
    assert runs.blame(1, ("high_water_mark",), fault, []) == (runs.FAILED, None)
    assert runs.blame(2, own, None, []) == (runs.PASSED, None)


def test_the_functions_that_cannot_run_yet_are_found(tmp_path):
    assert runs.waiting(load("solutions")) == {}
    stubs = runs.waiting(load("exercises"))
    assert sorted(stubs) == sorted(EXERCISE_OF) and {str(w) for w in stubs.values()} == {"not written yet"}
    code = StudentCode(tmp_path, name="waiting_code")
    code.edit("reads.py", "    if index < 1:", "    if index < 1 (:")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        found = runs.waiting(load(code.name))
    finally:
        sys.path.remove(str(tmp_path))
    assert {f: str(w) for f, w in found.items()} == {"check_read": "its file does not import"}


def test_exercise_list_says_what_the_last_whole_check_of_the_same_files_said(tmp_path):
    code = StudentCode(tmp_path)
    checks = tmp_path / code.name / ".." / ".hwm-lab" / "checks"

    def listed():
        result = code.cli("exercise", "list", "--impl", code.name, "--json", cwd=tmp_path)
        return [row["status"] for row in json.loads(result.stdout)]

    assert listed() == ["passing"] * len(EXERCISES)
    done = code.cli("exercise", "check", "4", "--impl", code.name, cwd=tmp_path)
    assert done.returncode == 0 and json.loads(runs.verdict_path(checks, 4).read_text())["status"] == "passing"
    # A check that found more than the rules (here written by hand: its scenario failed) is what list says ...
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        files = files_sha256(code.name)
    finally:
        sys.path.remove(str(tmp_path))
    runs.save_verdict(checks, 4, "failing", files)
    assert listed() == ["passing"] * 3 + ["failing"] + ["passing"] * (len(EXERCISES) - 4)
    # ... of those same files only: once a file changes, the rules speak again until the next check
    code.edit("reads.py", "    if index < 1:", "    if index < 1:  # edited")
    assert listed() == ["passing"] * len(EXERCISES)
