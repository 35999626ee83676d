"""Issue 51: every explanation the explorer and the replay's feed give is true of the run as shown, and every
counterexample is 1-minimal for the rule it shows.

The counterexamples are those `bench/explore.py --skip-speed --save tests/explore_cases/bench` found (every wrong
variant and classic mistake, seeds 0 to 4, and KIP-101), kept as the scripts `hwm-lab simulate --script` replays;
each is replayed here, explained as `hwm-lab explore` explains it, and each number of the explanation and of the
feed checked against the run's own states (tests/explanations.py). The bench checks the same of the runs it finds
fresh. The handout's exercise 1 with the article's formula is searched here as a student searches it."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from lab.core.impl import student_functions
from lab.explore.counterexample import explore, tell
from lab.explore.explain import explanation
from lab.explore.search import CLUSTER_RULES, Config, Found, run
from lab.harness.scenario import simulate
from lab.harness.script import parse
from tests.explanations import check_explanation, check_feed, one_minimal, replay

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted((ROOT / "tests" / "explore_cases" / "bench").glob("*.txt"))


@pytest.fixture(scope="module")
def mistakes(tmp_path_factory):
    """The classic mistakes' modules (mistake_0, mistake_1, ...), written as the bench writes them."""
    spec = importlib.util.spec_from_file_location("bench_explore", ROOT / "bench" / "explore.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench.mistakes(tmp_path_factory.mktemp("mistakes"))


def counterexample(path: Path):
    """The script's cluster and its steps, as `simulate --script` reads them."""
    scenario = parse(path.read_text(encoding="utf-8"), path.stem)
    config = Config(scenario.nodes, scenario.truncation, scenario.impl, 1.0,
                    frozenset(scenario.rules) if scenario.rules else None, scenario.segment_bytes)
    return config, [tuple(step.commands[0].words) for step in scenario.steps]


def test_the_bench_left_its_counterexamples_here():
    names = {re.sub(r"-seed\d+$", "", p.stem) for p in CASES}
    assert len(CASES) >= 70 and len(names) >= 17, (len(CASES), sorted(names))  # (85 searches; a few find nothing in 40 s)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_every_explanation_of_a_bench_counterexample_is_true_of_its_run(path, mistakes, tmp_path):
    config, choices = counterexample(path)
    done, violation, _ = run(config, choices)
    assert violation is not None and len(done) == len(choices), "it replays to its rule at its last step"
    assert f"counterexample {violation.check}" in path.read_text().splitlines()  # (the script says its rule)
    steps, calls, story = tell(Found(config, done, violation, "bfs"))
    said = explanation(violation, steps, calls, students=bool(student_functions(config.impl)), story=story,
                       truncation=config.truncation)
    played = replay(config, choices)
    assert check_explanation(said, played, violation) == [], str(said)
    from web.fold import Replay

    simulate(str(path), out=tmp_path / "trace", file=True)
    feed = Replay(tmp_path / "trace")
    assert check_feed(feed.texts, feed.events, played) == []


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_every_bench_counterexample_is_one_minimal_for_the_rule_it_shows(path, mistakes):
    config, choices = counterexample(path)
    rule = run(config, choices)[1].check
    assert one_minimal(config, choices, rule) == []
    if rule in CLUSTER_RULES:  # shown with only the cluster's rules ending it: a call's rule on the way is named
        assert config.rules is not None and config.rules <= CLUSTER_RULES


SAMPLED = [p for p in CASES if p.stem.endswith("-seed0")][:6]


@pytest.mark.parametrize("path", SAMPLED, ids=[p.stem for p in SAMPLED])
def test_simulate_script_and_the_shrinker_agree_on_every_run_with_a_step_left_out(path, mistakes, tmp_path):
    config, choices = counterexample(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    starts = [k for k, line in enumerate(lines) if line == "step" or line.startswith("step ")]
    for position in range(len(choices)):
        _, shrinker, _ = run(config, choices[:position] + choices[position + 1:])
        cut = lines[:starts[position]] + lines[starts[position] + 2:]  # the step's line and its command
        (tmp_path / "left-out.txt").write_text("\n".join(cut) + "\n", encoding="utf-8")
        verdict = simulate(str(tmp_path / "left-out.txt"), file=True)
        assert (verdict.violation.check if verdict.violation else None) == \
            (shrinker.check if shrinker else None), f"step {position + 1} left out"


def test_the_handouts_exercise_1_with_the_articles_formula_shows_hwm_majority_broken_in_the_cluster(tmp_path):
    # As `hwm-lab explore --exercise 1` searches a handout (no reference: every function the student's), on the
    # default sizes: the counterexample breaks the cluster's rule, and its explanation is true of its run.
    result = explore("tests.wrong_variants.ex1_article_formula", sizes=(3, 4, 5), budget=30, seed=0, out=tmp_path)
    found = result.found
    assert found is not None and found.violation.check == "hwm-majority"
    played = replay(found.config, found.choices)
    said = result.explain()
    assert check_explanation(said, played, found.violation) == [], str(said)
    assert one_minimal(found.config, found.choices, "hwm-majority") == []
    english = str(said)
    assert "A rule of the cluster's state" in english and "match indexes reach index" in english
    assert "What the run did in that step: " in english and " raised its high-water mark from " in english
