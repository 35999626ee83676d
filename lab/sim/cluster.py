"""A seeded, tick-driven cluster that drives real `Replica` objects over a simulated network.

Faults: per-link delay, drop, duplicate, reorder, one-way and two-way cuts, drop the Nth message of a type to
a node, pause, crash (volatile state lost) and restart from the durable twin, optionally losing the unsynced tail.
Same seed, same run, byte for byte (trace files included).
"""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from lab.core import impl as impl_module
from lab.core.messages import Answer, ClientRead, ClientWrite, Entry, Event, HardState, Ready, digest
from lab.core.replica import Replica
from lab.ports.trace import CLUSTER, TraceWriter, write_meta

TICK_SECONDS = 0.01
FSYNC_POLICIES = ("always", "batch", "never")


def node_names(count: int) -> list[str]:
    if not 1 <= count <= 26:
        raise ValueError(f"a cluster has 1 to 26 nodes, not {count}")
    return [chr(ord("A") + i) for i in range(count)]


@dataclass
class Disk:
    """The durable twin of a node's write-ahead log and state file."""

    fsync: str = "always"
    entries: list[Entry] = field(default_factory=list)
    synced: int = 0  # entries[:synced] survive a power loss
    hard_state: HardState = HardState(generation=0, voted_for=None)
    high_water_mark: int = 0

    def apply(self, ready: Ready) -> None:
        if ready.truncate_from is not None:
            del self.entries[ready.truncate_from - 1 :]
            self.synced = min(self.synced, len(self.entries))
        self.entries.extend(ready.append)
        if ready.hard_state is not None:
            self.hard_state = ready.hard_state  # written atomically and fsynced whatever the policy
        if ready.high_water_mark is not None:
            self.high_water_mark = ready.high_water_mark
        if self.fsync != "never":
            self.synced = len(self.entries)

    def flush(self) -> None:
        """The OS writing back on its own (fsync `never`): everything so far is now on disk."""
        self.synced = len(self.entries)

    def lose_unsynced_tail(self) -> int:
        lost = len(self.entries) - self.synced
        del self.entries[self.synced :]
        return lost


class SimCluster:
    def __init__(
        self,
        nodes: int | Iterable[str] = 3,
        *,
        seed: int = 0,
        truncation: str = "generation",
        fsync: str | dict[str, str] = "always",
        impl: str = "solutions",
        trace_dir: str | Path | None = None,
        election_ticks: int = 10,
        heartbeat_ticks: int = 2,
        delay: int = 1,
        flush_ticks: int = 50,
        write_timeout_ticks: int = 100,
        meta: dict | None = None,
    ):
        self.names = node_names(nodes) if isinstance(nodes, int) else list(nodes)
        self.seed = seed
        self.rng = random.Random(f"{seed}-network")
        self.truncation = truncation
        self.impl = impl_module.load(impl)
        self.election_ticks = election_ticks
        self.heartbeat_ticks = heartbeat_ticks
        self.write_timeout_ticks = write_timeout_ticks
        self.flush_ticks = flush_ticks
        policies = fsync if isinstance(fsync, dict) else {n: fsync for n in self.names}
        for name, policy in policies.items():
            if policy not in FSYNC_POLICIES:
                raise ValueError(f"unknown fsync policy {policy!r} for {name}; choose one of {FSYNC_POLICIES}")
        self.disks = {n: Disk(fsync=policies.get(n, "always")) for n in self.names}
        self.replicas: dict[str, Replica | None] = {n: None for n in self.names}
        self.states = {n: "killed" for n in self.names}
        self.boots = {n: 0 for n in self.names}
        self.now = 0
        self._queue: list = []
        self._held: dict[str, list] = {n: [] for n in self.names}  # messages to a paused node
        self._order = itertools.count()
        self.cuts: set[tuple[str, str]] = set()
        self.delays: dict[tuple[str, str], int] = {}
        self.default_delay = delay
        self.drop_rate = 0.0
        self.duplicate_rate = 0.0
        self.reorder_ticks = 0
        self._drop_nth: dict[tuple[str, str], int] = {}
        self._requests = itertools.count(1)
        self.answers: dict[str, Answer] = {}
        self.events: list[dict] = []
        self.listeners: list[Callable[[dict], None]] = []
        self.trace_dir = Path(trace_dir) if trace_dir else None
        self._writers: dict[str, TraceWriter] = {}
        self.meta = {
            "run": (meta or {}).get("run", f"sim-seed{seed}"), "source": "sim", "scenario": None, "seed": seed,
            "nodes": self.names, "truncation": truncation, "fsync": policies, "impl": impl,
            "liveness_bound": 5.0, "started": None, **(meta or {}),
        }
        if self.trace_dir:
            self.trace_dir.mkdir(parents=True, exist_ok=True)
            write_meta(self.trace_dir, **self.meta)
        self._cluster_event("cluster_started", nodes=self.names, truncation=truncation, fsync=policies, impl=impl)
        for name in self.names:
            self._boot(name)

    # ---- nodes -----------------------------------------------------------------------------------------------

    def _boot(self, name: str) -> None:
        disk = self.disks[name]
        self.boots[name] += 1
        self.replicas[name] = Replica(
            node_id=name, nodes=self.names, impl=self.impl,
            rng=random.Random(f"{self.seed}-{name}-{self.boots[name]}"),
            hard_state=disk.hard_state, log=list(disk.entries), high_water_mark=disk.high_water_mark,
            truncation=self.truncation, election_ticks=self.election_ticks, heartbeat_ticks=self.heartbeat_ticks,
            write_timeout_ticks=self.write_timeout_ticks,
        )
        self.states[name] = "running"
        self._apply(name, self.replicas[name].start())

    def kill(self, name: str, *, lose_unsynced: bool = False) -> None:
        """Crash a node: its volatile state is gone; with lose_unsynced, so is what was never flushed."""
        self._check(name)
        lost = self.disks[name].lose_unsynced_tail() if lose_unsynced else 0
        self.replicas[name] = None
        self.states[name] = "killed"
        self._held[name].clear()
        self._cluster_event("node_killed", target=name, lost_entries=lost)

    def restart(self, name: str) -> None:
        self._check(name)
        if self.states[name] != "killed":
            self.kill(name)
        self._cluster_event("node_restarted", target=name)
        self._boot(name)

    def pause(self, name: str) -> None:
        self._check(name)
        if self.states[name] == "running":
            self.states[name] = "paused"
            self._cluster_event("node_paused", target=name)

    def resume(self, name: str) -> None:
        self._check(name)
        if self.states[name] == "paused":
            self.states[name] = "running"
            self._cluster_event("node_resumed", target=name)
            held, self._held[name] = self._held[name], []
            for envelope in held:
                self._deliver(envelope)

    def campaign(self, name: str) -> None:
        self._check(name)
        if self.states[name] == "running":
            self._apply(name, self.replicas[name].campaign())

    def flush(self, name: str) -> None:
        self.disks[name].flush()

    # ---- network ---------------------------------------------------------------------------------------------

    def cut(self, src: str, dst: str, *, one_way: bool = True) -> None:
        pairs = [(src, dst)] if one_way else [(src, dst), (dst, src)]
        for a, b in pairs:
            self._check(a), self._check(b)
            if (a, b) not in self.cuts:
                self.cuts.add((a, b))
                self._cluster_event("link_cut", src=a, dst=b)

    def isolate(self, name: str) -> None:
        for other in self.names:
            if other != name:
                self.cut(name, other, one_way=False)

    def heal(self, src: str | None = None, dst: str | None = None, *, one_way: bool = False) -> None:
        for a, b in sorted(self.cuts):
            if (src is None or {a, b} == {src, dst} and (not one_way or (a, b) == (src, dst))):
                self.cuts.discard((a, b))
                self._cluster_event("link_healed", src=a, dst=b)

    def set_delay(self, ticks: int, src: str | None = None, dst: str | None = None) -> None:
        if src is None:
            self.default_delay = ticks
            self.delays.clear()
        else:
            self.delays[(src, dst)] = ticks

    def set_faults(self, *, drop: float = 0.0, duplicate: float = 0.0, reorder: int = 0) -> None:
        self.drop_rate, self.duplicate_rate, self.reorder_ticks = drop, duplicate, reorder

    def drop_nth(self, message_type: str, dst: str, n: int) -> None:
        """Drop the n-th message of that type (e.g. "ReplicationRequest") sent to dst from now on."""
        self._drop_nth[(message_type, dst)] = n

    def _send(self, envelope) -> None:
        key = (type(envelope.message).__name__, envelope.dst)
        if key in self._drop_nth:
            self._drop_nth[key] -= 1
            if self._drop_nth[key] == 0:
                del self._drop_nth[key]
                return
        if (envelope.src, envelope.dst) in self.cuts or self.rng.random() < self.drop_rate:
            return
        copies = 2 if self.rng.random() < self.duplicate_rate else 1
        for _ in range(copies):
            delay = self.delays.get((envelope.src, envelope.dst), self.default_delay)
            if self.reorder_ticks:
                delay += self.rng.randrange(self.reorder_ticks + 1)
            heapq.heappush(self._queue, (self.now + max(delay, 1), next(self._order), envelope))

    def _deliver(self, envelope) -> None:
        state = self.states[envelope.dst]
        if state == "paused":
            self._held[envelope.dst].append(envelope)
        elif state == "running" and (envelope.src, envelope.dst) not in self.cuts:
            self._apply(envelope.dst, self.replicas[envelope.dst].receive(envelope.src, envelope.message))

    # ---- clients ---------------------------------------------------------------------------------------------

    def write(self, payload: str, node: str | None = None) -> str:
        """Send a client write to `node` (default: the current leader, else the first node); returns the request id."""
        target = node or self.leader() or self.names[0]
        request = f"w{next(self._requests)}"
        self._cluster_event("client_write", payload=payload, digest=digest(payload), target=target, request=request)
        if self.states[target] != "running":
            self.answers[request] = Answer(request=request, ok=False, error=f"node {target} is {self.states[target]}")
        else:
            self._apply(target, self.replicas[target].propose([ClientWrite(request=request, payload=payload)]))
        return request

    def read(self, index: int, node: str) -> Answer:
        request = f"r{next(self._requests)}"
        self._cluster_event("client_read", index=index, target=node, request=request)
        if self.states[node] != "running":
            return Answer(request=request, ok=False, error=f"node {node} is {self.states[node]}")
        self._apply(node, self.replicas[node].read(ClientRead(request=request, index=index)))
        return self.answers[request]

    # ---- time ------------------------------------------------------------------------------------------------

    def tick(self) -> None:
        self.now += 1
        while self._queue and self._queue[0][0] <= self.now:
            _, _, envelope = heapq.heappop(self._queue)
            self._deliver(envelope)
        for name in self.names:
            if self.states[name] == "running":
                self._apply(name, self.replicas[name].tick())
            if self.disks[name].fsync == "never" and self.now % self.flush_ticks == 0:
                self.disks[name].flush()

    def run(self, ticks: int) -> None:
        for _ in range(ticks):
            self.tick()

    def run_until(self, predicate: Callable[[], bool], max_ticks: int = 2000) -> bool:
        for _ in range(max_ticks):
            if predicate():
                return True
            self.tick()
        return predicate()

    # ---- observation -----------------------------------------------------------------------------------------

    def leader(self) -> str | None:
        """The running leader of the highest generation, if any."""
        leaders = [(r.generation, n) for n, r in self.replicas.items()
                   if r is not None and self.states[n] == "running" and r.role == "leader"]
        return max(leaders)[1] if leaders else None

    def node(self, name: str) -> Replica | None:
        return self.replicas[name] if self.states[name] != "killed" else None

    def log_of(self, name: str) -> list[Entry]:
        replica = self.node(name)
        return list(replica.log) if replica else list(self.disks[name].entries)

    def status(self) -> dict:
        nodes = []
        for name in self.names:
            replica = self.node(name)
            info = replica.status() if replica else {"id": name, "role": None, "generation":
                                                     self.disks[name].hard_state.generation, "leader": None,
                                                     "log_end": len(self.disks[name].entries),
                                                     "hwm": self.disks[name].high_water_mark,
                                                     "match_index": {}, "next_index": {}}
            info["state"] = self.states[name]
            info["log"] = [[e.index, e.generation, e.payload] for e in self.log_of(name)]
            nodes.append(info)
        return {"nodes": nodes, "leader": self.leader(), "time": self.now * TICK_SECONDS,
                "links": [{"src": a, "dst": b, "cut": True} for a, b in sorted(self.cuts)]}

    # ---- plumbing --------------------------------------------------------------------------------------------

    def _apply(self, name: str, ready: Ready) -> None:
        """The order of duties (lab.core.messages.Ready): persist, then send, then answer."""
        self.disks[name].apply(ready)
        for event in ready.events:
            self._record(name, event, self.boots[name])
        for envelope in ready.messages:
            self._send(envelope)
        for answer in ready.answers:
            self.answers[answer.request] = answer

    def _cluster_event(self, kind: str, **fields) -> None:
        self._record(CLUSTER, Event(type=kind, fields=fields), 0)

    def _record(self, who: str, event: Event, boot: int) -> None:
        time = self.now * TICK_SECONDS
        if self.trace_dir:
            if who not in self._writers:
                self._writers[who] = TraceWriter(self.trace_dir, who, flush_each=False)
            record = self._writers[who].emit(event, time=time, boot=boot)
        else:
            fields = dict(event.fields)
            record = {"time": time, "node": who, "boot": boot, "gen": fields.pop("gen", 0), "type": event.type,
                      **fields}
        self.events.append(record)
        for listener in self.listeners:
            listener(record)

    def _check(self, name: str) -> None:
        if name not in self.names:
            raise ValueError(f"no node {name!r} in this cluster (nodes: {', '.join(self.names)})")

    def close(self, extra_meta: dict | None = None) -> None:
        """End the run: a final log snapshot of every live node, then flush the trace."""
        for name in self.names:
            replica = self.node(name)
            if replica is not None:
                self._record(name, Event(type="log_snapshot", fields={
                    "gen": replica.generation, "hwm": replica.high_water_mark, "log_end": replica.log.log_end,
                    "entries": [e.as_trace() for e in replica.log]}), self.boots[name])
        self._cluster_event("cluster_stopped")
        for writer in self._writers.values():
            writer.close()
        if self.trace_dir:
            self.meta.update(extra_meta or {})
            write_meta(self.trace_dir, **self.meta)
