"""The student's own code is what decides: in every exercise's scenarios, on the simulator and as real node
processes, a spy counts the calls of that exercise's functions, and of no other exercise's (a mixed
`--impl MODULE:functions` runs the reference for the rest)."""

from __future__ import annotations

import pytest

from lab.harness.realdriver import run_real
from lab.harness.scenario import simulate
from lab.student.checks import EXERCISES
from tests.spy_impl import calls

# One scenario per exercise that reaches every one of its functions (K1 never asks for a leader epoch: the
# restarted node becomes leader itself), run as real processes.
REAL = {1: ("n4", "generation"), 2: ("s1", "generation"), 3: ("s1", "generation"), 4: ("s1", "generation"),
        5: ("s2", "generation"), 6: ("k2", "leader-epoch")}


def spied(ex) -> str:
    return f"tests.spy_impl:{','.join(ex.functions)}"


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: f"exercise{ex.number}")
def test_the_exercises_functions_decide_in_its_simulated_scenarios(ex, tmp_path, monkeypatch):
    spies = tmp_path / "spies"
    spies.mkdir()
    monkeypatch.setenv("HWM_SPY_DIR", str(spies))
    for name, strategy in ex.scenarios:
        verdict = simulate(name, seed=7, truncation=strategy, impl=spied(ex), out=tmp_path / name)
        assert verdict.passed, verdict.summary()
    counts = calls(spies)
    for function in ex.functions:
        assert counts.get(function, 0) > 0, f"exercise {ex.number}: {function} was never called ({counts})"
    assert set(counts) <= set(ex.functions), f"exercise {ex.number}: the spy ran for {sorted(counts)}"


@pytest.mark.processes
@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: f"exercise{ex.number}")
def test_the_exercises_functions_decide_in_real_node_processes(ex, tmp_path, monkeypatch):
    spies = tmp_path / "spies"
    spies.mkdir()
    monkeypatch.setenv("HWM_SPY_DIR", str(spies))  # the node processes inherit it
    name, strategy = REAL[ex.number]
    verdict, _ = run_real(name, impl=spied(ex), out=tmp_path / "run", seed=7, truncation=strategy)
    assert verdict.passed, verdict.summary()
    counts = calls(spies)
    for function in ex.functions:
        assert counts.get(function, 0) > 0, f"exercise {ex.number}: {function} was never called ({counts})"
    assert set(counts) <= set(ex.functions), f"exercise {ex.number}: the spy ran for {sorted(counts)}"
