"""Storage faults (lab.ports.disk_faults): a full disk and a failed fsync, in the write-ahead log, the durable state,
the trace and the simulator. A node stops with its reason, never retries an fsync, acknowledges nothing unsynced, and a
restart recovers what was synced."""

from __future__ import annotations

import errno
import json
import os

import pytest

from lab.core.invariants import safety_violations
from lab.core.messages import Entry, HardState, digest
from lab.ports.disk_faults import DiskFaults, FsyncFailed, failure, mark
from lab.ports.memlog import MemoryLog
from lab.ports.state import FileState
from lab.ports.trace import TraceFile
from lab.ports.wal import WriteAheadLog
from lab.sim.cluster import SimCluster
from lab.harness.scenario import simulate

EXERCISES_NEEDED = (5,)


def entries(first: int, count: int) -> list[Entry]:
    return [Entry(index=i, generation=1, payload=f"e{i}") for i in range(first, first + count)]


def faulty_wal(path, fsync: str) -> tuple[WriteAheadLog, DiskFaults]:
    wal = WriteAheadLog(path, fsync=fsync)
    wal.faults = DiskFaults()
    return wal, wal.faults


# ---- naming the fault ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("exc, reason, code", [
    (mark(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), "appending to the write-ahead log"),
     "disk full: appending to the write-ahead log (No space left on device)", 73),
    (OSError(errno.EDQUOT, os.strerror(errno.EDQUOT)), "disk full: a write to disk (Disk quota exceeded)", 73),
    (mark(FsyncFailed(errno.EIO, os.strerror(errno.EIO)), "fsync of the write-ahead log"),
     "fsync failed: fsync of the write-ahead log (Input/output error)", 74),
    (FsyncFailed(errno.ENOSPC, os.strerror(errno.ENOSPC)), "fsync failed: a write to disk (No space left on device)",
     74),
    (OSError(errno.EROFS, os.strerror(errno.EROFS)), "disk read-only: a write to disk (Read-only file system)", 75),
])
def test_a_storage_error_is_named_with_its_exit_code(exc, reason, code):
    assert failure(exc) == (reason, code)


def test_other_errors_are_not_storage_faults_but_a_cause_is_found():
    assert failure(OSError(errno.EBADF, "bad file descriptor")) is None
    assert failure(ValueError("a bug")) is None
    try:
        try:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        except OSError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert failure(outer)[0].startswith("disk full:")


# ---- the write-ahead log ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fsync", ["always", "batch"])
def test_a_failed_fsync_drops_what_it_was_to_sync_and_a_reopened_log_holds_the_synced_prefix(tmp_path, fsync):
    wal, faults = faulty_wal(tmp_path / "wal", fsync)
    wal.append(entries(1, 3))
    wal.sync()
    faults.fsync_fail = True
    with pytest.raises(FsyncFailed) as caught:
        wal.append(entries(4, 2))
        wal.sync()
    assert failure(caught.value) == ("fsync failed: fsync of the write-ahead log (Input/output error)", 74)
    assert not faults.fsync_fail  # it fails once: a retry would find the disk fine, and report success
    for retry in (wal.sync, lambda: wal.append(entries(6, 1)), wal.flush):  # so the log takes nothing more
        with pytest.raises(FsyncFailed):
            retry()
    wal.abandon()
    reopened = WriteAheadLog(tmp_path / "wal", fsync=fsync)
    # the unsynced tail is gone, as a kernel may drop it; cut at a record boundary: nothing torn to repair
    assert [e.payload for e in reopened.entries()] == ["e1", "e2", "e3"]
    assert reopened.recovery is None
    reopened.close()


def test_a_full_disk_fails_appends_with_enospc_and_writes_nothing(tmp_path):
    wal, faults = faulty_wal(tmp_path / "wal", "always")
    wal.append(entries(1, 2))
    faults.full = True
    with pytest.raises(OSError) as caught:
        wal.append(entries(3, 1))
    assert caught.value.errno == errno.ENOSPC
    assert failure(caught.value)[0] == "disk full: appending to the write-ahead log (No space left on device)"
    assert wal.log_end == 2
    faults.full = False  # disk-ok
    wal.append(entries(3, 1))
    wal.close()
    assert [e.payload for e in WriteAheadLog(tmp_path / "wal").entries()] == ["e1", "e2", "e3"]


def test_the_durable_state_names_its_failures(tmp_path):
    state = FileState(tmp_path)
    state.faults = DiskFaults(full=True)
    with pytest.raises(OSError) as caught:
        state.save(HardState(generation=2, voted_for="A"))
    assert failure(caught.value)[0] == "disk full: saving the generation and vote (No space left on device)"
    state.faults.full = False
    state.faults.fsync_fail = True
    with pytest.raises(FsyncFailed) as caught:
        state.save(HardState(generation=2, voted_for="A"))
    assert failure(caught.value)[0] == "fsync failed: saving the generation and vote (Input/output error)"


def test_a_trace_write_that_fails_leaves_whole_lines_and_says_so(tmp_path, monkeypatch):
    from lab.core.messages import Event

    trace = TraceFile(tmp_path, "A")
    trace.emit([Event("node_started", {"log_end": 0})], time=0.0, boot=1)
    trace.flush()
    before = (tmp_path / "events-A.jsonl").read_bytes()
    real_write = os.write

    def half_then_enospc(fd, data):  # a disk that fills in the middle of the write
        if len(data) > 10:
            real_write(fd, bytes(data[:10]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    trace.emit([Event("node_stopped", {"reason": "x"})], time=1.0, boot=1)
    monkeypatch.setattr(os, "write", half_then_enospc)
    with pytest.raises(OSError) as caught:
        trace.flush()
    monkeypatch.setattr(os, "write", real_write)
    assert failure(caught.value)[0] == "disk full: writing the trace (No space left on device)"
    assert (tmp_path / "events-A.jsonl").read_bytes() == before  # no torn line left behind
    trace.emit([Event("node_stopped", {"reason": "y"})], time=2.0, boot=1)
    trace.close()
    lines = (tmp_path / "events-A.jsonl").read_text().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1, 2]  # numbering goes on, without a gap


# ---- the in-memory twin and the simulator -------------------------------------------------------------------


def test_the_memory_log_loses_the_unsynced_tail_on_a_failed_fsync():
    log = MemoryLog(fsync="batch")
    log.faults = DiskFaults()
    log.append(entries(1, 2))
    log.sync()
    log.append(entries(3, 2))
    log.faults.fsync_fail = True
    with pytest.raises(FsyncFailed):
        log.sync()
    assert [e.payload for e in log.entries()] == ["e1", "e2"] and log.synced == 2


def leader_of(cluster: SimCluster) -> str:
    assert cluster.run_until(lambda: cluster.leader() is not None, 500)
    return cluster.leader()


@pytest.mark.parametrize("nodes, fsync", [(3, "batch"), (4, "batch"), (5, "batch"), (3, "always"), (5, "always")])
def test_sim_fsync_fail_on_the_leader_under_writes(nodes, fsync):
    """The leader stops at its failed fsync (its requests already sent: it syncs while they travel), acknowledges
    nothing after it, another node leads, and a restart recovers what was synced and catches up; no acknowledged
    write is lost."""
    cluster = SimCluster(nodes, seed=5, fsync=fsync)
    old = leader_of(cluster)
    for i in range(20):
        cluster.write(f"w{i}")
        cluster.run(3)
    cluster.fsync_fail(old)
    failed_at = len(cluster.events)
    for i in range(20, 60):
        cluster.write(f"w{i}")
        cluster.run(5)
    assert cluster.states[old] == "exited"
    assert cluster.exit_reasons[old] == "fsync failed: fsync of the write-ahead log (Input/output error)"
    after = [e for e in cluster.events[failed_at:] if e["type"] == "write_acked" and e["node"] == old]
    assert after == []
    exited = [e for e in cluster.events if e["type"] == "node_exited"]
    assert [(e["target"], e["code"]) for e in exited] == [(old, 74)]
    new = leader_of(cluster)
    assert new != old
    cluster.restart(old)
    cluster.run(300)
    acked = {e["digest"] for e in cluster.events if e["type"] == "write_acked"}
    assert len(acked) > 40
    for name in cluster.names:  # every acknowledged write is on every node
        assert acked <= {digest(e.payload) for e in cluster.log_of(name)}
    assert safety_violations(cluster.events, cluster.status()) == []
    logs = {n: [e.payload for e in cluster.log_of(n)] for n in cluster.names}
    assert all(log == logs[new] for log in logs.values())  # the restarted node caught up


def test_sim_disk_full_stops_the_node_until_disk_ok():
    cluster = SimCluster(3, seed=2)
    leader = leader_of(cluster)
    follower = next(n for n in cluster.names if n != leader)
    cluster.disk_full(follower)
    cluster.write("x1")
    cluster.run(20)
    assert cluster.states[follower] == "exited"
    assert cluster.exit_reasons[follower].startswith("disk full: appending to the write-ahead log")
    cluster.restart(follower)  # still full: it cannot even count its boot
    assert cluster.states[follower] == "exited"
    assert cluster.exit_reasons[follower] == "disk full: writing the boot counter (No space left on device)"
    cluster.disk_ok(follower)
    cluster.restart(follower)
    cluster.write("x2")
    cluster.run(100)
    assert cluster.states[follower] == "running"
    assert [e.payload for e in cluster.log_of(follower)] == ["x1", "x2"]


@pytest.mark.parametrize("truncation", ["generation", "high-water-mark", "leader-epoch"])
def test_scenario_d1_passes_on_the_simulator(truncation, impl):
    verdict = simulate("d1", seed=1, truncation=truncation, impl=impl.name)
    assert verdict.passed, verdict.summary()
    names = [o.name for o in verdict.outcomes]
    assert "expect stopped A fsync failed" in names and "expect not-acked d2" in names


def test_a_replay_of_d1_shows_the_leader_stopped_with_its_reason_then_running_again(tmp_path):
    from web.fold import Replay

    assert simulate("d1", seed=2, out=tmp_path / "d1").passed
    replay = Replay(tmp_path / "d1")
    exited_at = next(i for i in range(len(replay)) if replay.event(i)["type"] == "node_exited")
    node = next(n for n in replay.fold_at(exited_at + 1).status()["nodes"] if n["id"] == "A")
    assert node["state"] == "exited"
    assert node["exit_reason"] == "fsync failed: fsync of the write-ahead log (Input/output error)"
    last = next(n for n in replay.fold_at(len(replay)).status()["nodes"] if n["id"] == "A")
    assert last["state"] == "running" and [e[2] for e in last["log"]] == ["d1", "d2", "d3"]
