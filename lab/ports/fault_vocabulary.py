"""The fault vocabulary, declared once: what any cluster of the lab can be asked to do, with one meaning and one
set of defaults. The simulated cluster (lab.sim.cluster.SimCluster), the supervisor of real processes
(lab.processes.supervisor.Supervisor) and the remote control client (lab.processes.client.ControlClient, which the
CLI, the dashboard and the scenario driver use) all implement it.

- kill: the node's process dies (SIGKILL). What it wrote survives, as after a process crash; with
  lose_unsynced, what it had not synced is lost too, as after a power cut (an fsync `never` node's tail).
- restart: a new process on the same disk (a running node is killed first).
- pause / resume: the node stops taking steps (SIGSTOP) and goes on (SIGCONT); its messages wait.
- cut: messages from src to dst are dropped; both ways unless one_way. isolate: cut a node from every other.
- heal: every cut (or the one between src and dst; only src -> dst with one_way).
- delay: every message (or those from src to dst) arrives `ms` milliseconds late; 0 restores normal timing.
- drop: every message (or those from src to dst) is lost with probability `rate`; 0 stops dropping.
- campaign: the node starts an election now. flush: the node writes out what fsync `never` buffered.
- disk-full: every write of the node fails with ENOSPC (its write-ahead log, its durable state; a restart too) until
  disk-ok (which also calls off an fsync-fail not yet met). fsync-fail: the node's next fsync fails with EIO, and what it was to sync is lost, as a kernel drops the
  pages it could not write (a node with fsync `never` makes no fsync). Either way the node stops with the reason
  (`disk full: ...`, `fsync failed: ...`), never retries the fsync, and a restart recovers what it had synced.
"""

from __future__ import annotations

from typing import Protocol

MAX_DELAY_MS = 60_000.0  # a delay beyond a minute makes a cluster that never elects; refused


def check_delay(ms) -> float:
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 <= ms <= MAX_DELAY_MS:
        raise ValueError(f"a delay is 0 to {MAX_DELAY_MS:g} ms, not {ms!r}")
    return float(ms)


def check_rate(rate) -> float:
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
        raise ValueError(f"a drop rate is between 0 and 1, not {rate!r}")
    return float(rate)


class Cluster(Protocol):
    names: list[str]

    def kill(self, node: str, *, lose_unsynced: bool = False) -> None: ...
    def restart(self, node: str) -> None: ...
    def pause(self, node: str) -> None: ...
    def resume(self, node: str) -> None: ...
    def cut(self, src: str, dst: str, *, one_way: bool = False) -> None: ...
    def isolate(self, node: str) -> None: ...
    def heal(self, src: str | None = None, dst: str | None = None, *, one_way: bool = False) -> None: ...
    def delay(self, ms: float, src: str | None = None, dst: str | None = None) -> None: ...
    def drop(self, rate: float, src: str | None = None, dst: str | None = None) -> None: ...
    def campaign(self, node: str) -> None: ...
    def flush(self, node: str) -> None: ...
    def disk_full(self, node: str) -> None: ...
    def disk_ok(self, node: str) -> None: ...
    def fsync_fail(self, node: str) -> None: ...
