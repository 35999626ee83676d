"""The replica's rules, one input at a time: elections, replication, the HWM, truncation and reads."""

import random
from typing import MutableMapping

import pytest

from lab.core.messages import (ClientRead, ClientWrite, Entry, HardState, ReplicationRequest, ReplicationResponse,
                          VoteRequest)
from lab.core.replica import Replica
from lab.sim.cluster import SimCluster
from lab.core.reasons import ABOVE_HWM, ALREADY_VOTED, Reason

EXERCISES_NEEDED = (1, 2, 3, 4)  # with --impl exercises, skipped until these are started

NODES = ("A", "B", "C")


def make(impl, node="A", log=(), generation=1, hwm=0, truncation="generation", nodes=NODES):
    entries = [Entry(index=i, generation=g, payload=p) for i, (g, p) in enumerate(log, start=1)]
    replica = Replica(node_id=node, nodes=nodes, impl=impl, rng=random.Random(1), log=entries,
                      hard_state=HardState(generation=generation, voted_for=None), high_water_mark=hwm,
                      truncation=truncation)
    replica.start()
    return replica


def leader(impl, log=(), generation=1):
    replica = make(impl, log=log, generation=generation - 1)
    ready = replica.campaign()
    for voter in ("B", "C"):
        from lab.core.messages import VoteResponse
        replica.receive(voter, VoteResponse(generation=generation, voter=voter, granted=True))
    assert replica.role == "leader"
    return replica


def types(ready):
    return [e.type for e in ready.events]


def sent(ready):
    """Every message of a step: those that may leave before its sync, then those that wait for it."""
    return [*ready.early_messages, *ready.messages]


def propose(replica, writes):
    """A leader's proposal as its driver applies it: appended, then reported durable (`persisted`)."""
    ready = replica.propose(writes)
    replica.persisted(replica.log.log_end, replica.log.last_generation)
    return ready


def test_election_persists_generation_and_vote_before_asking(impl):
    replica = make(impl, generation=3)
    ready = replica.campaign()
    assert ready.hard_state == HardState(generation=4, voted_for="A")
    assert {m.dst for m in ready.messages} == {"B", "C"}
    assert all(isinstance(m.message, VoteRequest) and m.message.generation == 4 for m in ready.messages)


def test_one_vote_per_generation(impl):
    replica = make(impl, node="B", generation=1)
    first = replica.receive("A", VoteRequest(generation=2, candidate="A", last_index=0, last_generation=0))
    second = replica.receive("C", VoteRequest(generation=2, candidate="C", last_index=0, last_generation=0))
    assert first.messages[0].message.granted and first.hard_state.voted_for == "A"
    assert not second.messages[0].message.granted
    assert second.events[-1].fields["reason"] == Reason(ALREADY_VOTED, candidate="A", generation=2)


def test_vote_refused_to_a_candidate_with_an_older_log(impl):
    replica = make(impl, node="B", log=[(1, "a"), (2, "b")], generation=2)
    ready = replica.receive("A", VoteRequest(generation=3, candidate="A", last_index=5, last_generation=1))
    assert not ready.messages[0].message.granted
    assert "behind" in ready.events[-1].fields["reason"]


def test_leader_appends_replicates_and_acknowledges_only_at_majority(impl):
    replica = leader(impl)
    ready = propose(replica, [ClientWrite(request="w1", payload="e1")])
    assert ready.append == (Entry(index=1, generation=1, payload="e1"),)
    requests = [m.message for m in ready.early_messages]
    assert len(requests) == 2 and all(r.entries == ready.append and r.prev_index == 0 for r in requests)
    assert ready.answers == () and not ready.messages  # not yet acknowledged: only the leader holds it
    ack = replica.receive("B", ReplicationResponse(generation=1, follower="B", success=True, match_index=1,
                                                   log_end=1, prev_index=0))
    assert replica.high_water_mark == 1
    assert ack.answers[0].ok and ack.answers[0].index == 1 and ack.answers[0].generation == 1
    assert "hwm_changed" in types(ack) and "write_acked" in types(ack)


def test_the_leader_counts_itself_only_once_its_own_write_is_durable(impl):
    """Raft thesis 10.2.1: the leader sends before its fsync; an entry is committed when a majority has persisted
    it, which may or may not include the leader."""
    replica = leader(impl)
    ready = replica.propose([ClientWrite(request="w1", payload="e1")])
    assert ready.must_sync and {m.dst for m in ready.early_messages} == {"B", "C"}
    assert replica.match_index["A"] == 0  # written, not yet on the leader's disk
    response = ReplicationResponse(generation=1, follower="B", success=True, match_index=1, log_end=1, prev_index=0)
    assert replica.receive("B", response).answers == () and replica.high_water_mark == 0  # B alone: 1 of 3
    done = replica.persisted(1, 1)
    assert replica.match_index["A"] == 1 and replica.high_water_mark == 1  # A and B: a majority on disk
    assert "log_persisted" in types(done) and done.answers[0].ok and done.answers[0].request == "w1"
    assert replica.persisted(1, 1).events == ()  # told twice: nothing new


def test_two_followers_commit_without_the_leaders_disk(impl):
    replica = leader(impl)
    replica.propose([ClientWrite(request="w1", payload="e1")])
    for follower in ("B", "C"):
        ready = replica.receive(follower, ReplicationResponse(generation=1, follower=follower, success=True,
                                                              match_index=1, log_end=1, prev_index=0))
    assert replica.high_water_mark == 1 and ready.answers[0].ok and replica.match_index["A"] == 0


def test_a_report_about_a_log_that_changed_since_is_ignored(impl):
    replica = make(impl, node="A", log=[(1, "e1"), (1, "e2")], generation=1)
    # B leads generation 2 and replaces A's index 2: a report that index 2 of generation 1 is durable is stale.
    replica.receive("B", ReplicationRequest(generation=2, leader="B", prev_index=1, prev_generation=1,
                                            entries=(Entry(index=2, generation=2, payload="x"),)))
    assert replica.durable_end == 1
    assert replica.persisted(2, 1).events == () and replica.durable_end == 1
    assert types(replica.persisted(2, 2)) == ["log_persisted"] and replica.durable_end == 2


def test_a_new_leader_counts_itself_only_as_far_as_its_disk(impl):
    replica = make(impl, node="A", generation=1)
    replica.receive("B", ReplicationRequest(generation=1, leader="B", prev_index=0, prev_generation=0,
                                            entries=(Entry(index=1, generation=1, payload="x"),)))
    replica.campaign()  # before the driver reported index 1 durable
    for voter in ("B", "C"):
        from lab.core.messages import VoteResponse
        replica.receive(voter, VoteResponse(generation=2, voter=voter, granted=True))
    assert replica.role == "leader" and replica.match_index["A"] == 0
    replica.persisted(1, 1)
    assert replica.match_index["A"] == 1


def test_hwm_only_advances_over_the_current_generation(impl):
    # F8: entry 1 is from generation 1; the leader is in generation 3. A majority holding it is not enough.
    replica = leader(impl, log=[(1, "old")], generation=3)
    replica.receive("B", ReplicationResponse(generation=3, follower="B", success=True, match_index=1, log_end=1))
    assert replica.high_water_mark == 0
    propose(replica, [ClientWrite(request="w", payload="new")])
    replica.receive("B", ReplicationResponse(generation=3, follower="B", success=True, match_index=2, log_end=2))
    assert replica.high_water_mark == 2


def test_hwm_never_moves_back_on_a_late_response(impl):
    replica = leader(impl)
    propose(replica, [ClientWrite(request=f"w{i}", payload=f"e{i}") for i in range(3)])
    replica.receive("B", ReplicationResponse(generation=1, follower="B", success=True, match_index=3, log_end=3))
    replica.receive("B", ReplicationResponse(generation=1, follower="B", success=True, match_index=1, log_end=1))
    assert replica.high_water_mark == 3 and replica.match_index["B"] == 3


def test_follower_hwm_is_capped_by_what_matches_the_leader(impl):
    replica = make(impl, node="B", log=[(1, "a")], generation=1)
    replica.receive("A", ReplicationRequest(generation=1, leader="A", prev_index=0, prev_generation=0,
                                            entries=(Entry(index=1, generation=1, payload="a"),),
                                            high_water_mark=5))
    assert replica.high_water_mark == 1  # the leader says 5, but B only knows index 1 matches


def test_conflicting_entry_is_truncated_and_matching_ones_are_kept(impl):
    replica = make(impl, node="A", log=[(1, "e1"), (1, "e2"), (1, "e3"), (1, "e4")], generation=1, hwm=3)
    ready = replica.receive("B", ReplicationRequest(
        generation=2, leader="B", prev_index=2, prev_generation=1,
        entries=(Entry(index=3, generation=1, payload="e3"), Entry(index=4, generation=2, payload="e5")),
        high_water_mark=4))
    assert ready.truncate_from == 4
    assert ready.append == (Entry(index=4, generation=2, payload="e5"),)
    truncated = [e for e in ready.events if e.type == "truncated"][0].fields
    assert truncated["removed"][0][:2] == [4, 1] and truncated["conflicting_generation"] == 2
    assert [e.payload for e in replica.log] == ["e1", "e2", "e3", "e5"]
    assert ready.messages[0].message.success and ready.messages[0].message.match_index == 4


def test_duplicate_request_is_idempotent(impl):
    replica = make(impl, node="B", generation=1)
    request = ReplicationRequest(generation=1, leader="A", prev_index=0, prev_generation=0,
                                 entries=(Entry(index=1, generation=1, payload="x"),), high_water_mark=0)
    replica.receive("A", request)
    again = replica.receive("A", request)
    assert again.append == () and again.truncate_from is None and replica.log.log_end == 1


def test_mismatch_is_refused_with_where_to_retry(impl):
    replica = make(impl, node="B", log=[(1, "a"), (2, "b"), (2, "c")], generation=3)
    ready = replica.receive("A", ReplicationRequest(generation=3, leader="A", prev_index=3, prev_generation=3,
                                                    entries=(), high_water_mark=1))
    response = ready.messages[0].message
    assert not response.success and response.conflict_index == 2  # skip generation 2 as a whole


def test_reads_are_served_only_up_to_the_hwm(impl):
    replica = make(impl, node="B", log=[(1, "a"), (1, "b")], hwm=1)
    served = replica.read(ClientRead(request="r1", index=1)).answers[0]
    refused = replica.read(ClientRead(request="r2", index=2)).answers[0]
    assert served.ok and served.payload == "a"
    assert not refused.ok and refused.error == Reason(ABOVE_HWM, index=2, hwm=1)
    assert refused.error.kind == ABOVE_HWM and refused.refusal == ABOVE_HWM


def test_follower_redirects_writes_to_the_leader(impl):
    replica = make(impl, node="B", generation=1)
    replica.receive("A", ReplicationRequest(generation=1, leader="A", prev_index=0, prev_generation=0))
    answer = replica.propose([ClientWrite(request="w", payload="x")]).answers[0]
    assert not answer.ok and answer.leader == "A" and "not the leader" in answer.error


def test_high_water_mark_strategy_truncates_to_local_hwm_on_restart(impl):
    replica = Replica(node_id="A", nodes=NODES, impl=impl, rng=random.Random(1), high_water_mark=1,
                      log=[Entry(index=1, generation=1, payload="m1"), Entry(index=2, generation=1, payload="m2")],
                      truncation="high-water-mark")
    ready = replica.start()
    assert ready.truncate_from == 2 and replica.log.log_end == 1


def test_unknown_strategy_and_node_are_clear_errors(impl):
    with pytest.raises(ValueError, match="unknown truncation strategy"):
        make(impl, truncation="bogus")
    with pytest.raises(ValueError, match="not one of the cluster's nodes"):
        make(impl, node="Z")


def test_progress_is_one_record_per_node_and_match_stays_below_next(impl):
    replica = leader(impl)
    assert {n: (p.match, p.next) for n, p in replica.progress.items()} == {"A": (0, 1), "B": (0, 1), "C": (0, 1)}
    propose(replica, [ClientWrite(request=f"w{i}", payload=f"e{i}") for i in range(3)])
    replica.receive("B", ReplicationResponse(generation=1, follower="B", success=True, match_index=3, log_end=3))
    replica.receive("C", ReplicationResponse(generation=1, follower="C", success=False, prev_index=3,
                                             conflict_index=1, log_end=0))
    # Exercise 2 updated match_index in place: the records hold what it wrote.
    assert isinstance(replica.match_index, MutableMapping) and replica.match_index["B"] == 3
    assert (replica.progress["B"].match, replica.progress["B"].next) == (3, 4)
    assert replica.progress["C"].match == 0 and replica.progress["C"].next in (1, 4)  # backed up, then resent
    assert replica.status()["match_index"] == {"A": 3, "B": 3, "C": 0}
    assert set(replica.status()["next_index"]) == {"B", "C"}


def test_a_refusal_from_the_logs_start_waits_for_the_heartbeat_and_a_mismatch_is_retried_at_once(impl):
    """A follower that refuses a request from index 1 (it will not cut entries it saw committed) is asked again at
    the next heartbeat, not at once: at once, the same refusal came back at once, thousands of times a second."""
    replica = leader(impl)
    propose(replica, [ClientWrite(request=f"w{i}", payload=f"e{i}") for i in range(3)])
    refused = replica.receive("C", ReplicationResponse(generation=1, follower="C", success=False, prev_index=0,
                                                       conflict_index=1, log_end=3))
    assert "next_index_backed_up" in types(refused) and not sent(refused)
    assert replica.progress["C"].next == 1
    for _ in range(replica.heartbeat_ticks):
        beat = replica.tick()
    assert [m.message.prev_index for m in sent(beat) if m.dst == "C"] == [0]
    # A mismatch further on can be mended by an earlier index: retried at once, from there.
    mismatch = replica.receive("B", ReplicationResponse(generation=1, follower="B", success=False, prev_index=2,
                                                        conflict_index=2, log_end=3))
    assert [(m.dst, m.message.prev_index) for m in sent(mismatch)] == [("B", 1)]


@pytest.mark.parametrize("seed", range(4))
def test_every_leader_keeps_match_below_next_through_faults(impl, seed):
    cluster = SimCluster(5, seed=seed, impl=impl.name, fsync={n: "never" for n in "ABCDE"})
    cluster.set_faults(drop=0.1, duplicate=0.1, reorder=3)
    rng = random.Random(seed)
    checked = 0
    for step in range(120):
        roll = rng.random()
        if roll < 0.3:
            cluster.write(f"v{step}")
        elif roll < 0.35:
            cluster.kill(rng.choice(cluster.names), lose_unsynced=True)
        elif roll < 0.45:
            cluster.restart(rng.choice(cluster.names))
        cluster.run(3)
        for name in cluster.names:
            replica = cluster.node(name)
            if replica is not None and replica.role == "leader":
                checked += 1
                assert all(0 <= p.match < p.next for p in replica.progress.values()), (step, replica.progress)
    assert checked > 20  # the run had leaders to check
