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
  disk-ok (which also calls off an fsync-fail not yet met). fsync-fail: the node's next fsync fails with EIO, and
  what it was to sync is lost, as a kernel drops the pages it could not write (a node with fsync `never` makes no
  fsync). Either way the node stops with the reason (`disk full: ...`, `fsync failed: ...`), never retries the
  fsync, and a restart recovers what it had synced.

FAULTS is the table every interface reads: the control API's routes, the CLI's commands, the scripts' commands, the
nemesis of a chaos run and the dashboard's actions (tests/test_fault_table.py holds each to every word).
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from lab.core.reasons import DELAY_RANGE, RATE_RANGE, Reason

NODE, LINKS = "node", "links"  # what a word acts on: one node (POST /api/nodes/NODE/WORD), or links (/api/links/WORD)


class FaultWord(NamedTuple):
    """A word of the vocabulary, as the CLI, the scripts, the control API's paths and the dashboard spell it; its
    Cluster method is `method` (the word with underscores). `flags`: its yes-or-no options, keywords of that method
    on every cluster (a script and the CLI spell them with hyphens: lose-unsynced). `real_flags`: those only real
    processes take (restart's repair: only a real disk is damaged in the middle of a log). A `nudge` breaks nothing
    (campaign, flush): no nemesis picks one, and the dashboard does not offer it as a fault."""

    word: str
    on: str
    flags: tuple[str, ...] = ()
    real_flags: tuple[str, ...] = ()
    nudge: bool = False

    @property
    def method(self) -> str:
        return self.word.replace("-", "_")


FAULTS: dict[str, FaultWord] = {fault.word: fault for fault in (
    FaultWord("kill", NODE, flags=("lose_unsynced",)),
    FaultWord("restart", NODE, real_flags=("repair",)),
    FaultWord("pause", NODE),
    FaultWord("resume", NODE),
    FaultWord("campaign", NODE, nudge=True),
    FaultWord("flush", NODE, nudge=True),
    FaultWord("disk-full", NODE),
    FaultWord("disk-ok", NODE),
    FaultWord("fsync-fail", NODE),
    FaultWord("cut", LINKS, flags=("one_way",)),
    FaultWord("isolate", LINKS),
    FaultWord("heal", LINKS, flags=("one_way",)),
    FaultWord("delay", LINKS),
    FaultWord("drop", LINKS),
)}
# The words that name one node: the control API's actions at /api/nodes/NODE/WORD.
NODE_WORDS = tuple(word for word, fault in FAULTS.items() if fault.on == NODE)

MAX_DELAY_MS = 60_000.0  # a delay beyond a minute makes a cluster that never elects; refused


def _said(value):
    """A refused value as the sentence shows it: a number as it is, anything else as Python writes it."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else repr(value)


def check_delay(ms) -> float:
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 <= ms <= MAX_DELAY_MS:
        raise ValueError(Reason(DELAY_RANGE, most=int(MAX_DELAY_MS), ms=_said(ms)))  # in the reader's language
    return float(ms)


def check_rate(rate) -> float:
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
        raise ValueError(Reason(RATE_RANGE, rate=_said(rate)))
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
