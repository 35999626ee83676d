"""The grader's rules checked as a run goes (lab/core/monitor.py), on hand-made events: each rule reports what it
must and stays quiet on the correct case, in the trace's own words. The explorer, chaos and `expect rules` share it."""

from __future__ import annotations

import pytest

from lab.core.messages import digest
from lab.core.monitor import Monitor, check_trace
from lab.harness.commands import ScenarioError
from lab.harness.scenario import simulate
from lab.harness.script import parse


def ev(kind, node="A", boot=1, gen=1, **fields):
    return {"type": kind, "node": node, "boot": boot, "gen": gen, **fields}


def raise_to(k, node="A", before=0, entry_generation=1):
    return ev("hwm_changed", node, hwm=k, from_hwm=before, role="leader", entry_generation=entry_generation,
              committed=[[i, 1, f"d{i}"] for i in range(before + 1, k + 1)])


def checks(events, size=3):
    return [v.check for v in check_trace(events, size)]


def test_a_leader_may_raise_its_mark_only_over_what_a_majority_acknowledged():
    acked_by_b = ev("match_index_updated", follower="B", match_index=2)
    assert checks([acked_by_b, raise_to(2)]) == []
    assert checks([raise_to(2)]) == ["hwm-majority"]  # the leader alone: 1 of 3
    assert checks([acked_by_b, raise_to(2)], size=4) == ["hwm-majority"]  # 2 of 4 is no majority
    # another generation's acknowledgements do not count
    assert checks([{**acked_by_b, "gen": 0}, raise_to(2)]) == ["hwm-majority"]
    assert checks([acked_by_b, raise_to(2, entry_generation=0)]) == ["hwm-majority"]  # figure 8


def test_holders_from_the_logs_replace_the_acknowledgements_when_given():
    monitor = Monitor(3, holders=lambda leader, k: ["A", "B"])
    assert monitor.feed(raise_to(1)) == []
    monitor = Monitor(3, holders=lambda leader, k: ["A"])
    assert [v.check for v in monitor.feed(raise_to(1))] == ["hwm-majority"]


def test_reads_the_mark_monotonic_and_committed_entries():
    served = ev("read_served", index=3, hwm=2)
    assert checks([served]) == ["read-above-hwm"]
    assert checks([ev("read_refused", index=2, hwm=2)]) == ["read-gate-strict"]
    assert checks([ev("read_refused", index=3, hwm=2), ev("read_served", index=2, hwm=2)]) == []
    moved_back = ev("hwm_changed", hwm=1, from_hwm=3, role="follower", committed=[])
    assert checks([ev("node_started", hwm=3), moved_back]) == ["hwm-monotonic"]
    first = ev("hwm_changed", "B", hwm=1, from_hwm=0, role="follower", committed=[[1, 1, "x"]])
    other = ev("hwm_changed", "C", hwm=1, from_hwm=0, role="follower", committed=[[1, 2, "y"]])
    assert checks([first, other]) == ["committed-never-change"]
    acked = ev("write_acked", index=1, digest="x", generation=1, request="w1")
    assert checks([first, acked, other]) == ["acked-in-final-logs"]


def test_truncations_and_the_epoch_answers():
    committed = ev("hwm_changed", "B", hwm=1, from_hwm=0, role="follower", committed=[[1, 1, "x"]])
    removed = ev("truncated", "C", from_index=1, removed=[[1, 1, "x"]], conflicting_generation=None, hwm=0)
    assert checks([committed, removed]) == ["truncation-safe"]
    same_generation = ev("truncated", "C", from_index=1, removed=[[1, 2, "z"]], conflicting_generation=2, hwm=0)
    assert checks([same_generation]) == ["truncation-safe"]
    assert checks([ev("truncated", "C", from_index=1, removed=[[1, 1, "z"]], conflicting_generation=2)]) == []
    assert checks([ev("wal_truncated", from_index=3, log_end=4)]) == ["wal-truncation"]
    assert checks([ev("wal_truncated", from_index=3, log_end=2)]) == []
    assert checks([ev("epoch_answer", generation=1, end_index=2, log_end=4, end_generation=1,
                      next_generation=1)]) == ["epoch-end"]
    assert checks([ev("epoch_answer", generation=1, end_index=3, log_end=4, end_generation=1,
                      next_generation=2)]) == []
    assert checks([ev("epoch_truncation", end_index=2, log_end=4, cut=2)]) == ["epoch-truncation"]
    assert checks([ev("epoch_truncation", end_index=2, log_end=4, cut=3),
                   ev("epoch_truncation", end_index=4, log_end=4, cut=None)]) == []


def test_the_logs_as_they_are_agree_below_the_marks():
    monitor = Monitor(3)
    monitor.feed(ev("hwm_changed", "B", hwm=1, from_hwm=0, role="follower",
                    committed=[[1, 1, digest("a")]]))
    agree = {"A": ([(1, 1, "a"), (2, 1, "b")], 1), "B": ([(1, 1, "a")], 1)}
    assert monitor.check_logs(agree) == []
    differ = {"A": ([(1, 1, "a"), (2, 1, "b")], 2), "B": ([(1, 1, "a"), (2, 2, "c")], 2)}
    assert [v.check for v in monitor.check_logs(differ)] == ["logs-agree"]
    changed = {"A": ([(1, 2, "z")], 1)}
    assert [v.check for v in monitor.check_logs(changed)] == ["committed-never-change"]


def test_the_invariants_find_what_the_monitor_finds_over_the_same_facts():
    """`expect safety` (lab.core.invariants) and the monitor share each rule's one implementation: over the same
    commits, truncation and logs they name the same breaches, the invariants every one, the monitor its first."""
    from lab.core import reasons
    from lab.core.invariants import safety_violations

    committed = ev("hwm_changed", "A", hwm=2, from_hwm=0, role="follower",
                   committed=[[1, 1, digest("a")], [2, 1, digest("b")]])
    recommitted = ev("hwm_changed", "B", hwm=1, from_hwm=0, role="follower", committed=[[1, 2, digest("z")]])
    truncated = ev("truncated", "C", removed=[[2, 1, digest("b")]])
    logs = {"A": ([(1, 1, "a"), (2, 1, "b")], 2), "B": ([(1, 1, "a"), (2, 2, "c")], 2), "C": ([(1, 1, "a")], 3)}
    status = {"nodes": [{"id": n, "state": "running", "log": [list(e) for e in log], "hwm": hwm}
                        for n, (log, hwm) in logs.items()]}
    said = safety_violations([committed, recommitted, truncated], status)
    assert [(r.kind, r.values.get("node"), r.values.get("index")) for r in said] == [
        (reasons.COMMITTED_CHANGED, "B", 1), (reasons.TRUNCATED_COMMITTED, "C", 2),
        (reasons.HOLDS_OTHER_GENERATION, "B", 2), (reasons.RULE_HWM_BEYOND_LOG, "C", 3),
        (reasons.LOGS_DISAGREE, "B", 2)]
    monitor = Monitor(3)
    found = [v for e in (committed, recommitted, truncated) for v in monitor.feed(e)]
    assert [(v.check, v.node, v.index) for v in found] == [("committed-never-change", "B", 1),
                                                           ("truncation-safe", "C", 2)]
    assert [(v.check, v.node, v.index) for v in monitor.check_logs(logs)] == [("committed-never-change", "B", 2)]
    assert safety_violations([committed], {"nodes": status["nodes"][:1]}) == []


def test_the_explorers_commands_need_the_manual_network(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text('nodes 3\nstep "x"\n  deliver A->B VoteRequest\n')
    with pytest.raises(ScenarioError, match="network manual"):
        simulate(str(path))
    script = parse('nodes 3\nnetwork manual\nrules hwm-majority\nstep "x"\n  campaign A\n', "s")
    assert script.network == "manual" and script.rules == ("hwm-majority",)
    with pytest.raises(ScenarioError, match="bad header"):
        parse('network sometimes\nstep "x"\n  campaign A\n', "s")
