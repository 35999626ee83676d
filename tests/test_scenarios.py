"""The teaching scenarios on the simulator, under each restart truncation strategy."""

import pytest

from lab.harness.commands import ScenarioError
from lab.harness.scenario import simulate
from lab.harness.script import load, parse
from lab.ports.trace import read_trace

SAFE = ["generation", "leader-epoch"]


def failed(verdict):
    return [o.name for o in verdict.failures()]


@pytest.mark.parametrize("seed", [1, 7])
@pytest.mark.parametrize("truncation", SAFE + ["high-water-mark"])
def test_s1_leader_fails_after_a_local_only_append(impl, truncation, seed, tmp_path):
    verdict = simulate("s1", seed=seed, truncation=truncation, impl=impl.name, out=tmp_path)
    assert verdict.passed, verdict.summary()
    trace = read_trace(tmp_path)
    truncations = trace.of_type("truncated")
    assert [(e["node"], e["from_index"]) for e in truncations] == [("A", 4)]
    refused = trace.of_type("read_refused")
    assert {e["node"] for e in refused if e["index"] == 4} == {"A", "B", "C"}
    assert all(e["hwm"] == 3 for e in refused if e["index"] == 4)


@pytest.mark.parametrize("truncation", SAFE)
def test_f8_older_generation_entry_is_not_committed_by_counting(impl, truncation):
    verdict = simulate("f8", seed=3, truncation=truncation, impl=impl.name)
    assert verdict.passed, verdict.summary()


@pytest.mark.parametrize("truncation", SAFE + ["high-water-mark"])
def test_n4_even_cluster_majority(impl, truncation):
    verdict = simulate("n4", seed=2, truncation=truncation, impl=impl.name)
    assert verdict.passed, verdict.summary()


@pytest.mark.parametrize("truncation", SAFE)
def test_k1_safe_strategies_keep_the_acknowledged_write(impl, truncation):
    verdict = simulate("k1", seed=5, truncation=truncation, impl=impl.name)
    assert verdict.passed, verdict.summary()


def test_k1_high_water_mark_strategy_loses_m2(impl):
    verdict = simulate("k1", seed=5, truncation="high-water-mark", impl=impl.name)
    assert not verdict.passed
    assert "expect acked-survive" in failed(verdict)
    assert "expect log m1 m2 m3 on A,C" in failed(verdict)


@pytest.mark.parametrize("truncation", SAFE)
def test_k2_safe_strategies_make_the_logs_agree(impl, truncation):
    verdict = simulate("k2", seed=5, truncation=truncation, impl=impl.name)
    assert verdict.passed, verdict.summary()


def test_k2_high_water_mark_strategy_diverges(impl):
    verdict = simulate("k2", seed=5, truncation="high-water-mark", impl=impl.name)
    assert failed(verdict) == ["expect logs-agree", "expect log m1 m3 m4 on A,B,C"]
    detail = verdict.failures()[0].detail
    assert "A: [m1, m2, m4]; B: [m1, m3, m4]" in detail  # the lab's list, not Python's repr


@pytest.mark.parametrize("truncation", SAFE)
def test_l1_leader_killed_mid_stream(impl, truncation):
    verdict = simulate("l1", seed=11, truncation=truncation, impl=impl.name)
    assert verdict.passed, verdict.summary()
    acked = [o for o in verdict.outcomes if o.name == "expect acked-survive"][0]
    assert int(acked.detail.split()[0]) > 50  # the stream really wrote


def test_script_errors_name_the_line():
    with pytest.raises(ScenarioError, match="line 3: unknown command 'explode'"):
        parse('nodes 3\nstep "x"\n  explode A\n')
    with pytest.raises(ScenarioError, match="no scenario 'nope'"):
        load("nope")


def test_every_shipped_scenario_parses_with_narration():
    for name in ["s1", "n4", "k1", "k2", "f8", "l1"]:
        scenario = load(name)
        assert scenario.steps and all(len(step.text) > 20 for step in scenario.steps)
