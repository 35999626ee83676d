"""The grader's search of an exercise (lab.grade.sandbox.harness_box.counterexample): an exercise that lost points on a rule or a
probe is searched again, longer, when the first search found nothing, so that its student gets a run to watch."""

from pathlib import Path

from lab.grade.sandbox import harness_box as rerun

TASK = {"exercise": 3, "impl": "student-x", "explore": 20, "runs": [{"seed": 7}]}


def searches(monkeypatch, found_after: int) -> list[tuple[int, int]]:
    calls = []

    def explore(exercise, impl, budget, seed, out=None):
        calls.append((budget, seed))
        return "Rule broken: ..." if budget >= found_after else None

    monkeypatch.setattr(rerun, "explore_counterexample", explore)
    return calls


def test_a_rule_broken_and_nothing_found_searches_again_with_more_walks_from_the_same_seed(monkeypatch):
    calls = searches(monkeypatch, found_after=200)
    result = {"rules": [["a rule", True, ""], ["another", False, "input ..."]], "probes": {}}
    assert rerun.counterexample(TASK, result, Path("out")) == "Rule broken: ..."
    assert calls == [(20, 7), (20 * rerun.EXPLORE_AGAIN, 7)]


def test_a_probe_broken_searches_again_too(monkeypatch):
    calls = searches(monkeypatch, found_after=200)
    result = {"rules": [["a rule", True, ""]], "probes": {"match-acknowledged": [False, "the case ..."]}}
    assert rerun.counterexample(TASK, result, Path("out")) is not None
    assert len(calls) == 2


def test_nothing_lost_or_found_at_once_costs_one_search(monkeypatch):
    calls = searches(monkeypatch, found_after=200)
    held = {"rules": [["a rule", True, ""]], "probes": {"match-acknowledged": [True, ""]}}
    assert rerun.counterexample(TASK, held, Path("out")) is None and len(calls) == 1
    calls = searches(monkeypatch, found_after=20)
    lost = {"rules": [["a rule", False, "input"]], "probes": {}}
    assert rerun.counterexample(TASK, lost, Path("out")) is not None and len(calls) == 1
