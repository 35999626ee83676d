"""One driver under the node process and the simulator: it applies a replica's output in the documented order,
and a fault scenario run through both gives the same persisted records."""

from __future__ import annotations

import json

import pytest

from lab.core.messages import (Answer, Entry, Envelope, Event, HardState, ReplicationRequest, ReplicationResponse,
                               WriteAcked)
from lab.core.replica import Ready
from lab.ports.driver import ReadyDriver
from lab.ports.wal import WriteAheadLog
from lab.harness.realdriver import run_real
from lab.harness.scenario import simulate


class Recorder:
    """Every port at once, writing down each call in order."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.log_end = 0

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.calls.append((name, *args))

    def now(self) -> float:
        return 1.5


def test_the_driver_persists_then_sends_then_traces_then_answers():
    ports = Recorder()
    driver = ReadyDriver("A", log=ports, state=ports, transport=ports, trace=ports, clock=ports)
    ready = Ready()
    ready.append = (Entry(1, 2, "x"),)
    ready.hard_state = HardState(generation=2, voted_for="A")
    request = ReplicationRequest(generation=2, leader="A", prev_index=0, prev_generation=0, entries=ready.append)
    response = ReplicationResponse(generation=2, follower="A", success=True, match_index=1)
    ready.early_messages = (Envelope("A", "B", request),)
    ready.messages = (Envelope("A", "C", response),)
    ready.answers = (Answer("w1", True, 1, 2, "x"),)
    ready.events = (WriteAcked(2, "w1", 1, 2, "d"),)
    driver.apply([ready])
    kinds = [call[0] for call in ports.calls]
    assert kinds == ["write", "save", "send", "flush", "sync", "send", "flush", "emit", "flush", "answer",
                     "flush"]
    # The replication request (it promises nothing) left before the sync; the follower's answer (a promise)
    # and the client's acknowledgement only after it.
    sends = [call for call in ports.calls if call[0] == "send"]
    assert sends[0][2] is request and sends[1][2] is response


class Persisted:
    """A replica that only hears how far its log is durable, and answers with a write acknowledged."""

    def __init__(self, calls):
        self.calls = calls

    def persisted(self, log_end, generation):
        self.calls.append(("persisted", log_end, generation))
        ready = Ready()
        ready.answers = (Answer("w1", True, 1, 2, "x"),)
        ready.events = (Event("log_persisted", {"gen": 2, "index": log_end, "generation": generation}),)
        return ready.done()


def test_after_the_sync_the_replica_hears_how_far_its_log_is_durable():
    ports = Recorder()
    driver = ReadyDriver("A", log=ports, state=ports, transport=ports, trace=ports, clock=ports,
                         replica=Persisted(ports.calls))
    ready = Ready()
    ready.append = (Entry(1, 2, "x"), Entry(2, 2, "y"))
    driver.apply([ready.done()])
    kinds = [call[0] for call in ports.calls]
    assert kinds.index("sync") < kinds.index("persisted") < kinds.index("answer")
    assert ("persisted", 2, 2) in ports.calls
    driver.apply([Ready().done()])  # nothing written since: nobody is told again
    assert kinds.count("persisted") == [c[0] for c in ports.calls].count("persisted") == 1


def test_a_deferred_sync_holds_what_promises_durability_until_it_is_done():
    ports = Recorder()
    driver = ReadyDriver("A", log=ports, state=ports, transport=ports, trace=ports, clock=ports,
                         replica=Persisted(ports.calls), defer_sync=True)
    request = ReplicationRequest(generation=2, leader="A", prev_index=0, prev_generation=0,
                                 entries=(Entry(1, 2, "x"),))
    ready = Ready()
    ready.append = request.entries
    ready.early_messages = (Envelope("A", "B", request),)
    driver.apply([ready.done()])
    later = Ready()  # a later step's promise (a vote) waits behind the pending sync
    vote = Envelope("A", "C", ReplicationResponse(generation=2, follower="A", success=False))
    later.messages = (vote,)
    driver.apply([later.done()])
    kinds = [call[0] for call in ports.calls]
    assert driver.sync_pending and "sync" not in kinds and [c[2] for c in ports.calls if c[0] == "send"] == [request]
    after = driver.finish_sync()
    kinds = [call[0] for call in ports.calls]
    assert not driver.sync_pending and kinds.index("sync") < kinds.index("persisted")
    assert [c[2] for c in ports.calls if c[0] == "send"] == [request, vote.message]
    assert after.answers[0].ok  # the replica's answer on hearing of the sync, for the caller to apply


def test_nothing_to_sync_means_no_sync():
    ports = Recorder()
    driver = ReadyDriver("A", log=ports, state=ports, transport=ports, trace=ports, clock=ports)
    ready = Ready()
    ready.events = (Event("became_follower", {"gen": 1}),)
    driver.apply([ready])
    assert "sync" not in [call[0] for call in ports.calls]


def persisted(run_dir, events) -> dict:
    """Per node: every truncation its log storage made (wal_truncated, without time and numbering)."""
    out: dict[str, list] = {}
    for event in events:
        if event["type"] == "wal_truncated":
            out.setdefault(event["node"], []).append(
                (event["boot"], event["from_index"], event["log_end"], event["segments"], event["deleted"]))
    return out


def read_events(run_dir) -> list[dict]:
    events = []
    for path in sorted(run_dir.glob("events-*.jsonl")):
        events += [json.loads(line) for line in path.read_text().splitlines()]
    return events


@pytest.mark.processes
def test_a_fault_scenario_persists_the_same_records_on_the_simulator_and_as_processes(tmp_path):
    sim = simulate("s2", seed=7, out=tmp_path / "sim")
    real, _ = run_real("s2", seed=7, out=tmp_path / "real")
    assert sim.passed and real.passed
    sim_truncations = persisted(tmp_path / "sim", read_events(tmp_path / "sim"))
    real_truncations = persisted(tmp_path / "real", read_events(tmp_path / "real"))
    # A restarted A truncates from index 4 across segments: the memory log and the file log did the same.
    assert sim_truncations == real_truncations == {"A": [(2, 4, 3, [1, 4], [7])]}
    # And each node's write-ahead log on disk holds what the simulator's memory log holds.
    final = {e["node"]: e["entries"] for e in read_events(tmp_path / "sim") if e["type"] == "log_snapshot"}
    for node, entries in final.items():
        with WriteAheadLog(tmp_path / "real" / "data" / node / "wal", fsync="never") as wal:
            assert [e.as_trace() for e in wal.entries()] == entries
