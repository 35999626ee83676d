"""Linearizable reads (ReadIndex, Raft thesis 6.4), one input at a time and on the simulator: the leader serves only
after a majority answered a round it sent once the read had arrived, and only once its mark covers an entry of its
own generation; anyone else refuses with a typed reason; and no run, whatever its faults, has a stale one."""

from __future__ import annotations

import random

import pytest

from lab.core import events as ev
from lab.core.messages import (
    LEADERSHIP_LOST, NOT_LEADER, TIMEOUT, ClientRead, ClientWrite, ReadIndexRequest, ReadIndexResponse,
    ReplicationResponse, VoteResponse)
from lab.core.reasons import GENERATION_UNCOMMITTED, READ_LEADERSHIP_LOST, READ_UNCONFIRMED, Reason
from lab.harness.history import STALE, check
from lab.harness.scenario import SimDriver
from lab.ports import codec
from lab.sim.cluster import SimCluster
from tests.test_replica import make, propose

EXERCISES_NEEDED = (1, 2, 3, 4)

NODES = ("A", "B", "C", "D", "E")


def leader_with_entry(impl, nodes=NODES):
    """A, leader of generation 1 over `nodes`, with e1 of its generation committed on A, B and C."""
    replica = make(impl, generation=0, nodes=nodes)
    replica.campaign()
    for voter in nodes[1:3]:
        replica.receive(voter, VoteResponse(generation=1, voter=voter, granted=True))
    assert replica.role == "leader"
    propose(replica, [ClientWrite(request="w1", payload="e1")])  # appended, and durable on A
    for follower in nodes[1:3]:
        replica.receive(follower, ReplicationResponse(generation=1, follower=follower, success=True, match_index=1,
                                                      log_end=1, prev_index=0))
    assert replica.high_water_mark == 1
    return replica


def lin(request="r1", index=1):
    return ClientRead(request=request, index=index, linearizable=True)


def rounds(ready) -> list[tuple[str, int]]:
    return [(m.dst, m.message.round) for m in ready.messages if isinstance(m.message, ReadIndexRequest)]


def test_the_leader_serves_only_once_a_majority_answered_a_round_sent_after_the_read(impl):
    a = leader_with_entry(impl)
    first = a.read(lin("r1"))
    assert first.answers == () and rounds(first) == [(p, 1) for p in "BCDE"]
    assert [e.type for e in first.events] == [ev.READ_INDEX]
    assert first.events[0].fields["read_index"] == 1
    second = a.read(lin("r2"))  # a second read: its own round, 2
    assert rounds(second) == [(p, 2) for p in "BCDE"]
    # Answers to round 1 confirm r1, never r2, which arrived after round 1 was sent.
    assert a.receive("B", ReadIndexResponse(generation=1, follower="B", round=1)).answers == ()
    done = a.receive("C", ReadIndexResponse(generation=1, follower="C", round=1))
    assert [(x.request, x.ok, x.payload, x.leader) for x in done.answers] == [("r1", True, "e1", "A")]
    assert [e.type for e in done.events] == [ev.READ_SERVED] and done.events[0].fields["linearizable"] is True
    assert a.receive("D", ReadIndexResponse(generation=1, follower="D", round=1)).answers == ()
    assert a.receive("B", ReadIndexResponse(generation=1, follower="B", round=2)).answers == ()
    late = a.receive("E", ReadIndexResponse(generation=1, follower="E", round=2))
    assert [(x.request, x.ok) for x in late.answers] == [("r2", True)]


def test_above_the_leaders_mark_a_confirmed_read_is_refused_by_exercise_4(impl):
    a = leader_with_entry(impl, NODES[:3])
    a.read(lin("r1", index=7))
    done = a.receive("B", ReadIndexResponse(generation=1, follower="B", round=1))
    (answer,) = done.answers
    assert not answer.ok and answer.refusal == "above_hwm" and answer.high_water_mark == 1
    assert [e.type for e in done.events] == [ev.READ_REFUSED]


def test_a_follower_refuses_naming_the_leader_and_a_leader_without_its_own_entry_refuses_too(impl):
    b = make(impl, node="B", generation=1)
    b.receive("A", ReadIndexRequest(generation=1, leader="A", round=1))  # B now follows A
    (refused,) = b.read(lin()).answers
    assert (refused.ok, refused.refusal, refused.leader) == (False, NOT_LEADER, "A")
    fresh = make(impl, generation=0, nodes=NODES[:3], log=[(0, "old")], hwm=1)
    fresh.campaign()
    fresh.receive("B", VoteResponse(generation=1, voter="B", granted=True))
    ready = fresh.read(lin())
    (answer,) = ready.answers
    assert answer.refusal == GENERATION_UNCOMMITTED and ready.messages == ()
    assert [e.type for e in ready.events] == [ev.READ_FAILED]


def test_a_leader_that_hears_no_majority_refuses_when_its_time_runs_out(impl):
    a = leader_with_entry(impl, NODES[:3])
    a.read(lin())
    for _ in range(a.write_timeout_ticks - 1):
        assert not [x for x in a.tick().answers if x.request == "r1"]
    (answer,) = [x for x in a.tick().answers if x.request == "r1"]
    assert answer.refusal == TIMEOUT
    assert answer.error == Reason(READ_UNCONFIRMED, leader="A", nodes=["A"], size=3)


def test_a_leader_that_steps_down_fails_the_reads_it_held(impl):
    a = leader_with_entry(impl, NODES[:3])
    a.read(lin())
    ready = a.receive("B", ReadIndexResponse(generation=2, follower="B", round=1))  # B is in generation 2
    (answer,) = ready.answers
    assert a.role == "follower" and answer.refusal == LEADERSHIP_LOST
    assert answer.error == Reason(READ_LEADERSHIP_LOST)


def test_a_follower_answers_with_its_own_generation_and_hears_the_leader(impl):
    b = make(impl, node="B", generation=3)
    b.election_elapsed = 20
    old = b.receive("A", ReadIndexRequest(generation=2, leader="A", round=5))
    assert [m.message for m in old.messages] == [ReadIndexResponse(generation=3, follower="B", round=5)]
    assert b.election_elapsed == 20  # an old leader is no leader
    current = b.receive("C", ReadIndexRequest(generation=3, leader="C", round=6))
    assert [m.message for m in current.messages] == [ReadIndexResponse(generation=3, follower="B", round=6)]
    assert (b.leader, b.election_elapsed) == ("C", 0)


def test_the_new_messages_and_a_linearizable_read_cross_the_wire():
    for message in (ReadIndexRequest(generation=2, leader="A", round=7),
                    ReadIndexResponse(generation=2, follower="B", round=7), lin("c.r9", 4)):
        assert codec.decode_frame(codec.encode(message)[4:]) == message
    with pytest.raises(codec.MalformedFrame):
        codec.decode_frame(b'{"type":"ClientRead","request":"r","index":1,"linearizable":"yes"}')


# ---- on the simulator -----------------------------------------------------------------------------------------


def test_a_deposed_leader_never_serves_a_linearizable_read_of_the_old_mark():
    """A leads, is cut off, and B is elected and commits e2; A still believes it leads. A linearizable read asked
    of A finds no majority (the cut) and times out; once the cut heals, A hears of the newer generation, steps
    down and fails the read it held. Either way the client is refused, never served A's stale view."""
    cluster = SimCluster(3, seed=2)
    driver = SimDriver(cluster)
    cluster.campaign("A")
    cluster.run_until(lambda: cluster.leader() == "A")
    assert driver.write("e1").ok
    cluster.isolate("A")
    cluster.campaign("B")
    cluster.run_until(lambda: cluster.replicas["B"].role == "leader")
    assert driver.write("e2", "B").ok and cluster.replicas["A"].role == "leader"
    request = cluster.ask_read(2, "A", linearizable=True)
    cluster.run_until(lambda: request in cluster.answers, max_ticks=400)
    assert cluster.answers[request].refusal == TIMEOUT
    again = cluster.ask_read(2, "A", linearizable=True)
    cluster.heal()
    cluster.run_until(lambda: again in cluster.answers, max_ticks=400)
    answer = cluster.answers[again]
    assert answer.refusal == LEADERSHIP_LOST and cluster.replicas["A"].role == "follower"
    assert [op.verdict for op in check(cluster.events).reads] == ["unanswered", "unanswered"]


@pytest.mark.parametrize("seed", range(6))
def test_no_linearizable_read_is_stale_whatever_the_faults(seed):
    """Writes and linearizable reads of every node under random kills, restarts, cuts and heals: the history has no
    stale read and is linearizable; plain reads in the same runs do go stale (the contrast is real)."""
    rng = random.Random(seed)
    cluster = SimCluster(5, seed=seed)
    cluster.run_until(lambda: cluster.leader() is not None)
    acked, asked = [], []
    for step in range(60):
        leader = cluster.leader()
        if leader:
            request = cluster.write(f"v{step}", leader, client="writer")
            cluster.run_until(lambda: request in cluster.answers, max_ticks=60)
            answer = cluster.answers.get(request)
            if answer is not None and answer.ok:
                acked.append(answer.index)
        if acked:
            asked.append(cluster.ask_read(rng.choice(acked), rng.choice(cluster.names), linearizable=True,
                                          client="lin"))
            cluster.read(rng.choice(acked), rng.choice(cluster.names), client="plain")
        fault = rng.random()
        running = [n for n in cluster.names if cluster.states[n] == "running"]
        if fault < 0.1 and len(running) > 3:
            cluster.kill(rng.choice(running))
        elif fault < 0.2:
            for name in cluster.names:
                if cluster.states[name] == "killed":
                    cluster.restart(name)
        elif fault < 0.3:
            cluster.cut(*rng.sample(cluster.names, 2), one_way=rng.random() < 0.5)
        elif fault < 0.4:
            cluster.heal()
        cluster.run(rng.randrange(1, 12))
    cluster.heal()
    cluster.run(400)
    found = check(cluster.events)
    linearizable = [op for op in found.reads if op.linearizable]
    assert len([op for op in linearizable if op.ok]) >= 10
    assert [op.request for op in linearizable if op.verdict == STALE] == []
    assert [op for op in found.reads if op.client == "plain" and op.verdict == STALE]  # the same runs, plain reads
    for index in found.not_linearizable():  # a broken index is the plain reads' doing, never a linearizable one's
        assert not [op for op in linearizable if op.index == index and op.verdict == STALE]
    without_plain = check([e for e in cluster.events if e.get("client") != "plain" and e.get("request") not in
                           {op.request for op in found.reads if op.client == "plain"}])
    assert without_plain.linearizable is True


def test_a_clone_of_a_leader_holding_reads_keeps_its_own(impl):
    """The explorer's copy-on-write worlds copy a replica: one holding a linearizable read gives its copy its own."""
    from lab.sim.copies import _copy_replica

    a = leader_with_entry(impl, NODES[:3])
    a.read(lin())
    copy = _copy_replica(a)
    copy.receive("B", ReadIndexResponse(generation=1, follower="B", round=1))
    assert copy.pending_reads == [] and [p.confirmed for p in a.pending_reads] == [{"A"}]
