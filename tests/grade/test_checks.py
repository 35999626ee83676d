"""Every check on small inline traces: one that keeps the rule and one that breaks it (STYLE.md section 5)."""

import pytest

from lab.grade import checks
from lab.grade.schema import VIOLATIONS

from .helpers import Events, entry, rows, to_events_df

pytestmark = pytest.mark.spark


def run_check(spark, check, events: Events):
    out = check(events.df(spark))
    assert [(f.name, f.dataType) for f in out.schema] == [(f.name, f.dataType) for f in VIOLATIONS]
    return rows(out)


def leader_with_three_entries(ev: Events) -> Events:
    """A leads generation 1; B and C acknowledge e1..e3; everyone's HWM reaches 3."""
    for n in "ABC":
        ev.add(n, "node_started", 0.0, log_end=0, hwm=0)
    for i, p in enumerate(["e1", "e2", "e3"], 1):
        t = i * 0.1
        ev.add("A", "leader_append", t, gen=1, index=i, generation=1, digest=entry(i, 1, p)[2], payload=p)
        for f in "BC":
            ev.add(f, "follower_append", t, gen=1, index=i, generation=1, digest=entry(i, 1, p)[2], payload=p)
            ev.add("A", "match_index_updated", t, gen=1, follower=f, match_index=i)
        ev.add("A", "hwm_changed", t + 0.01, gen=1, from_hwm=i - 1, hwm=i, role="leader", entry_generation=1,
               committed=[entry(i, 1, p)])
        ev.add("A", "write_acked", t + 0.01, gen=1, request=f"w{i}", index=i, generation=1,
               digest=entry(i, 1, p)[2])
        for f in "BC":
            ev.add(f, "hwm_changed", t + 0.02, gen=1, from_hwm=i - 1, hwm=i, role="follower", entry_generation=1,
                   committed=[entry(i, 1, p)])
    return ev


def snapshots(ev: Events, logs: dict, t: float = 1.0, hwm: dict | None = None) -> Events:
    for node, entries in logs.items():
        ev.add(node, "log_snapshot", t, gen=1, hwm=(hwm or {}).get(node, len(entries)), log_end=len(entries),
               entries=entries)
    return ev


E123 = [entry(1, 1, "e1"), entry(2, 1, "e2"), entry(3, 1, "e3")]


# ---- 1 ------------------------------------------------------------------------------------------------------

def test_hwm_majority_passes_when_a_majority_held_the_index(spark):
    assert run_check(spark, checks.check_hwm_majority, leader_with_three_entries(Events())) == []


def test_hwm_majority_fails_when_the_leader_counts_only_itself(spark):
    ev = leader_with_three_entries(Events())
    ev.add("A", "leader_append", 0.5, gen=1, index=4, generation=1, digest=entry(4, 1, "e4")[2], payload="e4")
    ev.add("A", "hwm_changed", 0.6, gen=1, from_hwm=3, hwm=4, role="leader", entry_generation=1,
           committed=[entry(4, 1, "e4")])
    out = run_check(spark, checks.check_hwm_majority, ev)
    assert [(v["node"], v["index"]) for v in out] == [("A", 4)]
    assert "only 1 of 3 nodes held index 4 (a majority is 2)" in out[0]["detail"]


def test_hwm_majority_fails_when_an_older_generation_entry_is_committed_by_counting(spark):
    # Figure 8: the generation-4 leader re-replicates a generation-2 entry to a majority and commits it.
    ev = Events(cluster_size=5)
    for f in "BC":
        ev.add("A", "match_index_updated", 1.0, gen=4, follower=f, match_index=3)
    ev.add("A", "hwm_changed", 1.1, gen=4, from_hwm=2, hwm=3, role="leader", entry_generation=2,
           committed=[entry(3, 2, "x")])
    out = run_check(spark, checks.check_hwm_majority, ev)
    assert len(out) == 1 and "entry 3 is of generation 2" in out[0]["detail"]


def test_hwm_majority_ignores_acknowledgements_from_an_earlier_generation(spark):
    ev = Events()
    ev.add("A", "match_index_updated", 1.0, gen=1, follower="B", match_index=5)
    ev.add("A", "hwm_changed", 2.0, gen=2, from_hwm=0, hwm=5, role="leader", entry_generation=2,
           committed=[entry(5, 2, "x")])
    assert len(run_check(spark, checks.check_hwm_majority, ev)) == 1


# ---- 2 ------------------------------------------------------------------------------------------------------

def test_read_at_or_below_the_hwm_passes(spark):
    ev = leader_with_three_entries(Events())
    ev.add("B", "read_served", 1.0, gen=1, index=3, hwm=3, entry=entry(3, 1, "e3"), payload="e3")
    ev.add("B", "read_refused", 1.1, gen=1, index=4, hwm=3, reason="not available")
    assert run_check(spark, checks.check_read_above_hwm, ev) == []


def test_read_above_the_hwm_fails(spark):
    ev = leader_with_three_entries(Events())
    ev.add("A", "read_served", 1.0, gen=1, index=4, hwm=3, entry=entry(4, 1, "e4"), payload="e4")
    out = run_check(spark, checks.check_read_above_hwm, ev)
    assert [(v["node"], v["index"], v["detail"]) for v in out] == [
        ("A", 4, "A served a read of index 4 while its HWM was 3")]


def test_read_uses_the_hwm_of_the_current_boot(spark):
    ev = Events()
    ev.add("B", "hwm_changed", 0.1, from_hwm=0, hwm=5, role="follower", committed=[])
    ev.add("B", "node_started", 0.5, boot=2, hwm=0, log_end=5)
    ev.add("B", "read_served", 0.6, boot=2, index=5, hwm=5)  # says 5, but B restarted with HWM 0
    assert len(run_check(spark, checks.check_read_above_hwm, ev)) == 1


# ---- 3 ------------------------------------------------------------------------------------------------------

def test_hwm_that_only_grows_within_a_boot_passes(spark):
    ev = leader_with_three_entries(Events())
    ev.add("B", "node_started", 2.0, boot=2, hwm=0, log_end=3)  # a restart may start lower
    ev.add("B", "hwm_changed", 2.1, boot=2, from_hwm=0, hwm=3, role="follower", committed=[])
    assert run_check(spark, checks.check_hwm_monotonic, ev) == []


def test_hwm_moving_back_fails(spark):
    ev = leader_with_three_entries(Events())
    ev.add("C", "hwm_changed", 2.0, gen=1, from_hwm=3, hwm=2, role="follower", committed=[])
    out = run_check(spark, checks.check_hwm_monotonic, ev)
    assert [(v["node"], v["detail"]) for v in out] == [("C", "C's HWM moved back from 3 to 2 (boot 1)")]


# ---- 4 ------------------------------------------------------------------------------------------------------

def test_committed_entries_kept_everywhere_pass(spark):
    ev = snapshots(leader_with_three_entries(Events()), {n: E123 for n in "ABC"})
    assert run_check(spark, checks.check_committed_never_change, ev) == []


def test_a_stale_node_may_hold_a_conflicting_uncommitted_entry(spark):
    ev = leader_with_three_entries(Events())
    # A, deposed but unaware (generation 1), appends e4 after B committed e5 at index 4 in generation 2.
    ev.add("B", "hwm_changed", 1.0, gen=2, from_hwm=3, hwm=4, role="leader", committed=[entry(4, 2, "e5")])
    ev.add("A", "leader_append", 1.5, gen=1, index=4, generation=1, digest=entry(4, 1, "e4")[2])
    assert run_check(spark, checks.check_committed_never_change, ev) == []


def test_overwriting_a_committed_entry_fails(spark):
    ev = leader_with_three_entries(Events())
    # A "commits" e4 alone, then B leads generation 2 and writes e5 at index 4.
    ev.add("A", "hwm_changed", 0.5, gen=1, from_hwm=3, hwm=4, role="leader", committed=[entry(4, 1, "e4")])
    ev.add("B", "leader_append", 0.8, gen=2, index=4, generation=2, digest=entry(4, 2, "e5")[2])
    snapshots(ev, {"A": E123 + [entry(4, 1, "e4")], "B": E123 + [entry(4, 2, "e5")], "C": E123})
    out = run_check(spark, checks.check_committed_never_change, ev)
    details = sorted(v["detail"].split(" ")[1] for v in out)
    assert [(v["node"], v["index"]) for v in out] == [("B", 4), ("B", 4), ("C", 4)]
    assert details == ["final", "final", "wrote"]


# ---- 5 ------------------------------------------------------------------------------------------------------

def test_acknowledged_writes_in_every_final_log_pass(spark):
    ev = snapshots(leader_with_three_entries(Events()), {n: E123 for n in "ABC"})
    assert run_check(spark, checks.check_acked_in_final_logs, ev) == []


def test_a_node_dead_at_the_end_is_not_expected_to_hold_them(spark):
    ev = leader_with_three_entries(Events())
    ev.add("cluster", "node_killed", 0.9, target="C")
    snapshots(ev, {"A": E123, "B": E123, "C": E123[:1]})
    assert run_check(spark, checks.check_acked_in_final_logs, ev) == []


def test_an_acknowledged_write_missing_from_a_final_log_fails(spark):
    ev = snapshots(leader_with_three_entries(Events()), {"A": E123, "B": E123, "C": E123[:2]})
    out = run_check(spark, checks.check_acked_in_final_logs, ev)
    assert [(v["node"], v["index"]) for v in out] == [("C", 3)]
    assert "write w3, acknowledged by A at index 3" in out[0]["detail"]


# ---- 6 ------------------------------------------------------------------------------------------------------

def test_logs_that_agree_up_to_the_final_hwm_pass(spark):
    # C's log has an extra uncommitted entry above the HWM: allowed.
    ev = snapshots(Events(), {"A": E123, "B": E123, "C": E123 + [entry(4, 1, "e4")]}, hwm={"C": 3})
    assert run_check(spark, checks.check_logs_agree, ev) == []


def test_logs_that_differ_under_the_final_hwm_fail(spark):
    # K2 with the high-water-mark strategy: index 2 holds m2 on A but m3 on B and C.
    logs = {"A": [entry(1, 1, "m1"), entry(2, 1, "m2")], "B": [entry(1, 1, "m1"), entry(2, 2, "m3")],
            "C": [entry(1, 1, "m1"), entry(2, 2, "m3")]}
    out = run_check(spark, checks.check_logs_agree, snapshots(Events(), logs))
    assert [(v["node"], v["index"]) for v in out] == [("A", 2)]
    assert out[0]["detail"].startswith("at index 2 (final HWM 2) A holds [2, 1, ")
    assert out[0]["detail"].endswith("but 2 other nodes hold [2, 2, " + entry(2, 2, "m3")[2] + "]")


def test_an_hwm_beyond_the_log_end_fails(spark):
    out = run_check(spark, checks.check_logs_agree, snapshots(Events(), {"A": E123}, hwm={"A": 4}))
    assert [v["detail"] for v in out] == ["A's HWM 4 is beyond the end of its final log (3 entries)"]


# ---- 7 ------------------------------------------------------------------------------------------------------

def test_truncating_a_conflicting_uncommitted_entry_passes(spark):
    ev = leader_with_three_entries(Events())
    ev.add("A", "truncated", 2.0, gen=2, boot=2, from_index=4, removed=[entry(4, 1, "e4")], reason="conflict",
           conflicting_generation=2, hwm=3)
    assert run_check(spark, checks.check_truncation_safe, ev) == []


def test_truncating_a_committed_entry_fails(spark):
    # K1: A restarts and truncates to its own HWM 1, dropping m2, which B had already committed.
    ev = Events()
    ev.add("B", "hwm_changed", 1.0, gen=1, from_hwm=1, hwm=2, role="leader", committed=[entry(2, 1, "m2")])
    ev.add("A", "truncated", 2.0, gen=1, boot=2, from_index=2, removed=[entry(2, 1, "m2")], reason="restart-hwm",
           conflicting_generation=None, hwm=1)
    out = run_check(spark, checks.check_truncation_safe, ev)
    assert [(v["node"], v["index"]) for v in out] == [("A", 2)]
    assert "it had been committed at t=1.00" in out[0]["detail"]


def test_truncating_a_matching_entry_fails(spark):
    ev = Events()
    ev.add("C", "truncated", 2.0, gen=2, from_index=5, removed=[entry(5, 2, "x")], reason="conflict",
           conflicting_generation=2, hwm=4)
    out = run_check(spark, checks.check_truncation_safe, ev)
    assert len(out) == 1 and "same generation 2" in out[0]["detail"]


def test_losing_an_unflushed_tail_is_not_judged_here(spark):
    ev = Events()
    ev.add("B", "hwm_changed", 1.0, gen=1, from_hwm=1, hwm=2, role="leader", committed=[entry(2, 1, "m2")])
    ev.add("B", "truncated", 2.0, boot=2, from_index=2, removed=[entry(2, 1, "m2")], reason="lost-tail", hwm=2)
    assert run_check(spark, checks.check_truncation_safe, ev) == []


# ---- 8 ------------------------------------------------------------------------------------------------------

def liveness_run(c_catches_up: bool) -> Events:
    ev = leader_with_three_entries(Events(liveness_bound=5.0))
    ev.add("cluster", "link_cut", 0.5, src="A", dst="C")
    ev.add("cluster", "link_healed", 2.5, src="A", dst="C")
    ev.add("A", "leader_append", 2.6, gen=1, index=4, generation=1, digest=entry(4, 1, "e4")[2])
    ev.add("A", "hwm_changed", 2.7, gen=1, from_hwm=3, hwm=4, role="leader", committed=[entry(4, 1, "e4")])
    ev.add("A", "write_acked", 2.7, gen=1, request="w4", index=4, generation=1, digest=entry(4, 1, "e4")[2])
    ev.add("B", "hwm_changed", 2.8, gen=1, from_hwm=3, hwm=4, role="follower", committed=[entry(4, 1, "e4")])
    if c_catches_up:
        ev.add("C", "hwm_changed", 7.0, gen=1, from_hwm=3, hwm=4, role="follower", committed=[entry(4, 1, "e4")])
    ev.add("C", "node_stopped", 10.0, gen=1, reason="end")
    return ev


def test_hwm_reaching_the_last_acknowledged_write_in_time_passes(spark):
    assert run_check(spark, checks.check_liveness, liveness_run(c_catches_up=True)) == []


def test_hwm_stuck_after_the_last_fault_fails(spark):
    out = run_check(spark, checks.check_liveness, liveness_run(c_catches_up=False))
    assert [(v["node"], v["index"]) for v in out] == [("C", 4)]
    assert out[0]["detail"] == ("C's HWM was 3 at t=7.70, 5.0 s after the last fault or acknowledgement "
                                "(t=2.70); the last acknowledged write is at index 4")


# ---- 9 ------------------------------------------------------------------------------------------------------

def test_expectations_that_hold_pass(spark):
    ev = Events(scenario="k1")
    ev.add("cluster", "expectation", 1.0, name="m2 survives", ok=True, detail=None)
    assert run_check(spark, checks.check_scenario, ev) == []


def test_a_failed_expectation_fails(spark):
    ev = Events(scenario="k1")
    ev.add("cluster", "expectation", 1.0, name="m2 survives", ok=False, detail="A's log is [m1]")
    out = run_check(spark, checks.check_scenario, ev)
    assert [v["detail"] for v in out] == ["expectation 'm2 survives' failed: A's log is [m1]"]


def s1_ending(ev: Events, serve_e4: bool) -> Events:
    for p in ("e1", "e2", "e3", "e4", "e5"):
        ev.add("cluster", "client_write", 0.1, payload=p, digest=entry(0, 0, p)[2], target="A")
    if serve_e4:
        ev.add("A", "read_served", 0.5, gen=1, index=4, hwm=4, entry=entry(4, 1, "e4"), payload="e4")
    final = E123 + [entry(4, 2, "e5")]
    return snapshots(ev, {n: final for n in "ABC"})


def test_s1_as_the_scenario_expects_passes(spark):
    assert run_check(spark, checks.check_scenario, s1_ending(Events(scenario="s1"), serve_e4=False)) == []


def test_s1_serving_e4_fails(spark):
    out = run_check(spark, checks.check_scenario, s1_ending(Events(scenario="s1"), serve_e4=True))
    assert [v["detail"] for v in out] == ["A served e4 at index 4: scenario S1 says it must never be served"]


def test_s1_with_a_wrong_final_log_fails(spark):
    ev = Events(scenario="s1")
    for p in ("e1", "e2", "e3", "e4", "e5"):
        ev.add("cluster", "client_write", 0.1, payload=p, digest=entry(0, 0, p)[2], target="A")
    snapshots(ev, {"A": E123 + [entry(4, 1, "e4")], "B": E123 + [entry(4, 2, "e5")]})
    out = run_check(spark, checks.check_scenario, ev)
    assert [v["detail"] for v in out] == ["A's final log is [e1, e2, e3, e4]; scenario S1 expects [e1, e2, e3, e5]"]


def test_no_check_uses_python_udfs():
    import inspect

    source = inspect.getsource(checks)
    assert "udf" not in source.lower().replace("no python udfs", "")


# ---- 10 -----------------------------------------------------------------------------------------------------

def test_refusing_reads_above_the_hwm_or_of_no_index_passes(spark):
    ev = leader_with_three_entries(Events())
    ev.add("B", "read_refused", 1.0, gen=1, index=4, hwm=3, reason="not available: index 4 is above the HWM 3")
    ev.add("B", "read_refused", 1.1, gen=1, index=0, hwm=3, reason="not available: index 0 does not exist")
    assert run_check(spark, checks.check_read_gate_strict, ev) == []


def test_refusing_a_read_of_the_hwm_itself_fails(spark):
    ev = leader_with_three_entries(Events())
    ev.add("B", "read_refused", 1.0, gen=1, index=3, hwm=3, reason="not available: index 3 is above the HWM 3")
    out = run_check(spark, checks.check_read_gate_strict, ev)
    assert [(v["node"], v["index"], v["detail"]) for v in out] == [
        ("B", 3, "B refused a read of index 3 although its HWM was 3 (not available: index 3 is above the HWM 3)")]


# ---- 11 -----------------------------------------------------------------------------------------------------

def test_a_truncation_that_leaves_the_log_ending_before_the_cut_passes(spark):
    ev = Events()
    ev.add("A", "wal_truncated", 1.0, from_index=5, log_end=4, segments=[1], deleted=[5, 9])
    assert run_check(spark, checks.check_wal_truncation, ev) == []


def test_a_truncation_that_keeps_a_later_segment_fails(spark):
    ev = Events()
    ev.add("A", "wal_truncated", 1.0, from_index=5, log_end=12, segments=[1, 9], deleted=[5])
    out = run_check(spark, checks.check_wal_truncation, ev)
    assert [(v["node"], v["index"], v["detail"]) for v in out] == [
        ("A", 5, "A truncated its log from index 5, but its log then ends at 12, not 4 (segments left start at "
                 "[1, 9]; deleted [5])")]


# ---- 12 -----------------------------------------------------------------------------------------------------

def test_an_end_index_at_the_last_entry_of_the_generation_passes(spark):
    # The leader's log is generations [1, 1, 1, 2, 2]: generation 1 ends at index 3.
    ev = Events()
    ev.add("B", "epoch_answer", 1.0, gen=2, generation=1, end_index=3, log_end=5, end_generation=1,
           next_generation=2)
    ev.add("B", "epoch_answer", 1.1, gen=2, generation=2, end_index=5, log_end=5, end_generation=2,
           next_generation=None)
    ev.add("B", "epoch_answer", 1.2, gen=2, generation=1, end_index=3)  # a trace from before the new fields
    assert run_check(spark, checks.check_epoch_end, ev) == []


def test_an_end_index_one_short_or_beyond_the_log_fails(spark):
    ev = Events()
    ev.add("B", "epoch_answer", 1.0, gen=2, generation=1, end_index=2, log_end=5, end_generation=1,
           next_generation=1)
    ev.add("B", "epoch_answer", 1.1, gen=2, generation=2, end_index=6, log_end=5, end_generation=None,
           next_generation=None)
    out = run_check(spark, checks.check_epoch_end, ev)
    assert sorted(v["detail"] for v in out) == [
        "B answered end index 2 for generation 1: its entry 3 is of generation 1 too, so the end is further on",
        "B answered end index 6 for generation 2: its own log ends at 5"]


# ---- 13 -----------------------------------------------------------------------------------------------------

def test_cutting_just_after_the_end_index_or_not_at_all_passes(spark):
    ev = Events()
    ev.add("A", "epoch_truncation", 1.0, boot=2, end_index=3, log_end=5, cut=4)
    ev.add("C", "epoch_truncation", 1.0, boot=2, end_index=5, log_end=5, cut=None)
    assert run_check(spark, checks.check_epoch_truncation, ev) == []


def test_cutting_one_off_fails_on_either_side(spark):
    ev = Events()
    ev.add("A", "epoch_truncation", 1.0, boot=2, end_index=3, log_end=5, cut=3)
    ev.add("C", "epoch_truncation", 1.0, boot=2, end_index=4, log_end=4, cut=5)
    out = run_check(spark, checks.check_epoch_truncation, ev)
    assert [(v["node"], v["index"], v["detail"]) for v in out] == [
        ("A", 3, "A cut its log from index 3 and removes index 3, which the leader's log holds (it ends at 3)"),
        ("C", 5, "C cut its log from index 5, but it holds indexes 1 to 4: nothing is to be removed there")]


# ---- 14 -----------------------------------------------------------------------------------------------------

def test_a_run_that_gets_as_far_as_its_waits_passes(spark):
    ev = leader_with_three_entries(Events())
    ev.add("cluster", "expectation", 1.0, name="wait hwm 3 on A,B,C", ok=True, detail=None)
    ev.add("cluster", "expectation", 1.1, name="write e6 to A nowait", ok=False, detail="no answer")  # not waited
    ev.add("cluster", "expectation", 1.2, name="expect hwm 4 on A", ok=False, detail="A: 3")  # the scenario's own
    ev.add("B", "read_refused", 1.3, gen=1, index=3, hwm=3, reason="at the HWM: read-gate-strict's, not this")
    ev.add("B", "read_refused", 1.4, gen=1, index=4, hwm=3, reason="not available: index 4 is above the HWM 3")
    assert run_check(spark, checks.check_progress, ev) == []


def test_a_run_that_stops_at_a_wait_or_refuses_a_read_below_the_hwm_fails(spark):
    ev = leader_with_three_entries(Events())
    ev.add("cluster", "expectation", 1.0, name="wait hwm 5 on A", ok=False, detail="the HWM never reached 5")
    ev.add("cluster", "expectation", 1.1, name="write m1 to A", ok=False, detail="not acknowledged")
    ev.add("B", "read_refused", 1.2, gen=1, index=2, hwm=3, reason="refused")
    out = run_check(spark, checks.check_progress, ev)
    assert [(v["node"], v["index"], v["detail"]) for v in out] == [
        ("B", 2, "B refused a read of index 2, below its HWM 3 (refused)"),
        ("cluster", None, "the run stopped at 'wait hwm 5 on A': the cluster did not get there (the HWM never "
                          "reached 5)"),
        ("cluster", None, "the run stopped at 'write m1 to A': the cluster did not get there (not acknowledged)")]


# ---- the plan -----------------------------------------------------------------------------------------------

def test_every_check_runs_in_one_job_without_a_shuffle(spark, tmp_path):
    from lab.grade import job, session

    ev = snapshots(leader_with_three_entries(Events()), {n: E123 for n in "ABC"})
    other = snapshots(leader_with_three_entries(Events(run="r2")), {n: E123[:2] for n in "ABC"})
    # As the job hands them over: partitioned by run, cached.
    with session.settings(spark, 2):
        events = to_events_df(spark, ev.rows + other.rows).repartition(2, "submission", "run").cache()
        events.count()
        stats = job.write_violations(spark, events, str(tmp_path / "violations"))
    events.unpersist()
    assert stats["jobs"] == 1 and stats["shuffle_stages"] == 0, stats
    written = spark.read.parquet(str(tmp_path / "violations"))
    assert {r["check"] for r in written.collect()} == {"acked-in-final-logs", "committed-never-change"}
