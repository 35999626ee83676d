"""Points follow the lesson (pure Python, no Spark): a run that does not advance earns an exercise's other checks
nothing, so that an answer that is safe but idle loses most of the exercise; a scenario's skip concerns the index it
names and nothing else."""

import pytest

from lab.grade import rubric as rubric_module
from lab.grade.rubric import RubricError, load, parse, score

DEFAULT = load(None)
RUNS = [("grader-a", 1, "n4"), ("grader-b", 1, "n4"), ("submitted", 1, "n4")]


def exercise_1(violations, rules=(3, 3), probes=None):
    s = score(DEFAULT, RUNS, violations, {1: rules}, probes)
    return s.by_exercise[1], {c.check: c for c in s.checks if c.exercise == 1}


def test_every_exercise_of_the_default_rubric_is_gated_by_progress():
    assert all(ex.progress == ("progress",) for ex in DEFAULT.exercises)
    assert all(ex.max_points == 10 for ex in DEFAULT.exercises)


def test_an_idle_answer_that_breaks_no_safety_rule_earns_at_most_three_of_ten():
    # min(match_indexes): the HWM stays where every node is; the scenario's waits are not met in any run, its
    # expectations fail, and one rule of three holds (it does not modify its argument)
    idle = {(r, c): 1 for r, _, _ in RUNS for c in ("progress", "scenario")}
    points, checks = exercise_1(idle, rules=(1, 3))
    assert points <= 3
    assert checks["hwm-majority"].points == 0 and checks["hwm-majority"].idle_runs == [r for r, _, _ in RUNS]
    assert checks["hwm-majority"].failed and not checks["hwm-majority"].failed_runs
    assert checks["progress"].progress and checks["progress"].max_points == 0 and checks["progress"].failed


def test_a_run_that_does_not_advance_withholds_only_its_own_share():
    points, checks = exercise_1({("grader-a", "progress"): 1, ("grader-a", "scenario"): 1})
    # hwm-majority 4, committed-never-change 2, acked-in-final-logs 1: two runs of three earn them
    assert checks["hwm-majority"].points == pytest.approx(4 * 2 / 3, abs=0.01)
    assert checks["scenario"].points == pytest.approx(2 * 2 / 3, abs=0.01) and not checks["scenario"].idle_runs
    assert checks["rules"].points == 1  # the rules are run on the function itself, not on the runs
    assert checks["hwm-majority"].idle_runs == ["grader-a"]


def test_a_safety_violation_still_costs_what_it_cost_and_progress_adds_nothing_to_it():
    unsafe = {(r, "hwm-majority"): 2 for r, _, _ in RUNS}
    points, checks = exercise_1(unsafe)
    assert checks["hwm-majority"].points == 0 and checks["hwm-majority"].idle_runs == []
    assert points == 6  # the rest earned in full: every run advanced


def test_a_probe_earns_the_share_of_the_runs_that_advanced():
    runs = [("grader-a", 3, "s1"), ("grader-b", 3, "k2")]
    s = score(DEFAULT, runs, {("grader-a", "progress"): 1}, {3: (8, 8)}, {(3, "match-acknowledged"): True})
    probe = next(c for c in s.checks if c.check == "match-acknowledged")
    assert probe.points == 1.5 and probe.idle_runs == ["grader-a"] and probe.failed
    s = score(DEFAULT, runs, {}, {3: (8, 8)}, {(3, "match-acknowledged"): True})
    assert s.by_exercise[3] == 10


def test_k2_skips_only_the_index_of_the_entry_its_lesson_loses():
    skip = DEFAULT.skip["k2"]
    assert skip.indexes == {2} and "truncation-safe" in skip.checks
    assert not DEFAULT.grades(6, "k2", "truncation-safe", 2)  # m2, lost in the power cut: the lesson
    assert DEFAULT.grades(6, "k2", "truncation-safe", 1)  # m1, committed, removed by a wrong walk: the student's
    assert DEFAULT.grades(6, "k2", "truncation-safe") and DEFAULT.grades(6, "k2", "epoch-end", 2)


def test_a_k2_run_counts_against_a_check_it_breaks_elsewhere_and_never_for_it():
    runs = [("k1", 6, "k1"), ("k2", 6, "k2")]
    clean = score(DEFAULT, runs, {}, {6: (4, 4)})
    wrong_walk = score(DEFAULT, runs, {("k2", "truncation-safe"): 1}, {6: (4, 4)})
    safe = next(c for c in clean.checks if c.exercise == 6 and c.check == "truncation-safe")
    broken = next(c for c in wrong_walk.checks if c.exercise == 6 and c.check == "truncation-safe")
    assert (safe.runs, safe.points) == (1, 2)  # K2 cannot show it holds: K1 alone says so
    assert (broken.runs, broken.failed_runs, broken.points) == (2, ["k2"], 1)
    # the rubric of before (K2 skipped whole) gave the wrong walk the full 2 points
    whole = parse(rubric_module.default_text().replace("index = 2\n", ""))
    assert next(c for c in score(whole, runs, {("k2", "truncation-safe"): 1}, {6: (4, 4)}).checks
                if c.exercise == 6 and c.check == "truncation-safe").points == 2


@pytest.mark.parametrize("text, said", [
    ('[scenarios.k2]\nskip = ["truncation-safe"]\nindex = 0\n', "index must be an index"),
    ('[scenarios.k2]\nskip = ["truncation-safe"]\nindex = "2"\n', "index must be an index"),
    ('[exercises.1]\npoints = { scenario = 1 }\nprogress = ["moving"]\n', r"unknown checks \['moving'\]"),
    ('[exercises.1]\npoints = { scenario = 1 }\nprogress = "progress"\n', "progress must be a list"),
])
def test_a_bad_skip_or_progress_is_a_clear_error(text, said):
    base = "" if "[exercises" in text else '[exercises.1]\npoints = { scenario = 1 }\n'
    with pytest.raises(RubricError, match=said):
        parse(base + text)
