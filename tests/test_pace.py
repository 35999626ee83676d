"""The classroom pace: election timers of seconds, not hundreds of milliseconds, on the simulator and on real node
processes, and the default of `hwm-lab demo`."""

from __future__ import annotations

import pytest
from procutil import running_cluster, wait_until

from lab.core.config import PACES, TIMING, pace_timing, wait_seconds
from lab.ports.trace import read_trace
from lab.sim.cluster import SimCluster
from lab.harness.scenario import simulate

CLASSROOM = pace_timing("classroom")


def test_the_classroom_pace_gives_election_timers_of_seconds():
    assert set(PACES) == {"normal", "classroom"} and pace_timing("normal") == TIMING
    shortest = CLASSROOM.election_ticks * CLASSROOM.tick_ms / 1000
    assert shortest >= 3.0  # "watch the followers' timers fill"
    assert CLASSROOM.heartbeat_ticks * CLASSROOM.tick_ms / 1000 <= shortest / 4  # a live leader still holds them
    assert TIMING.election_ticks * TIMING.tick_ms / 1000 < 1.0  # the normal pace is left as it was
    assert wait_seconds(CLASSROOM) == 100.0 and wait_seconds(TIMING) == 10.0
    with pytest.raises(ValueError, match="pace must be one of normal, classroom"):
        pace_timing("fast")


def first_election_after(events, since: float) -> float:
    return min(e["time"] for e in events if e["type"] in ("prevote_started", "election_started")
               and e["time"] >= since) - since


@pytest.mark.parametrize("name,timing", [("normal", TIMING), ("classroom", CLASSROOM)])
def test_on_the_simulator_a_follower_waits_seconds_before_it_campaigns(tmp_path, name, timing):
    sim = SimCluster(3, seed=4, trace_dir=tmp_path / "t", timing=timing)
    sim.campaign("A")
    assert sim.run_until(lambda: sim.leader() == "A", 500)
    sim.kill("A")
    assert sim.run_until(lambda: sim.leader() in ("B", "C"), 2000)
    sim.close()
    events = list(read_trace(tmp_path / "t").events)
    kill = next(e["time"] for e in events if e["type"] == "node_killed")
    waited = first_election_after(events, kill)
    if name == "classroom":
        assert waited >= 2.5, waited  # the room can watch B's and C's timers fill
    else:
        assert waited < 1.0, waited


def test_a_scenario_runs_at_the_classroom_pace_on_the_simulator(tmp_path):
    verdict = simulate("s1", seed=3, out=tmp_path / "s1", pace="classroom")
    assert verdict.passed, verdict.summary()
    events = list(read_trace(tmp_path / "s1").events)
    kill = next(e["time"] for e in events if e["type"] == "node_killed")
    assert first_election_after(events, kill) >= 2.5  # (its timer started at the last heartbeat, before the kill)
    assert read_trace(tmp_path / "s1").meta["pace"] == "classroom"


@pytest.mark.processes
def test_real_node_processes_at_the_classroom_pace_elect_after_seconds(tmp_path):
    with running_cluster(tmp_path, nodes=3, tick_ms=CLASSROOM.tick_ms) as sup:
        leader = wait_until(lambda: sup.wait_for_leader(1.0), 30, "a first leader at the classroom pace")
        sup.kill(leader)
        wait_until(lambda: sup.wait_for_leader(1.0) not in (None, leader), 30, "a new leader")
    events = list(read_trace(tmp_path).events)
    started = min(e["time"] for e in events if e["type"] == "node_started")
    assert first_election_after(events, started) >= 2.5  # (its timer starts as the node does)
    kill = next(e["time"] for e in events if e["type"] == "node_killed")
    assert first_election_after(events, kill) >= 2.5


def test_hwm_lab_demo_runs_at_the_classroom_pace_by_default():
    import argparse

    from web.args import register, to_argv

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(), run=None)
    args = parser.parse_args(["demo"])
    assert args.pace == "classroom" and to_argv(args)[-2:] == ["--pace", "classroom"]
    assert parser.parse_args(["demo", "--pace", "normal"]).pace == "normal"
