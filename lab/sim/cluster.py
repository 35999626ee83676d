"""A seeded, tick-driven cluster that drives real `Replica` objects over a simulated network.

Each node is a replica and the same driver as a node process (lab.ports.driver), with in-memory twins for its
ports: a MemoryLog (the write-ahead log's segments, and what a power cut loses), a MemoryState, a transport onto
the simulated network, and the trace kept in memory (and written to a trace directory when asked).
Faults (lab.ports.fault_vocabulary): kill (optionally losing the unsynced tail), restart, pause, resume, one-way and
two-way cuts, delay and drop per link; and, the simulator's own, duplicate, reorder and drop the Nth message of a type.
A node whose step raises (a student's function, a truncation plan that leaves entries) stops, as a node process
would. Same seed, same run, byte for byte (trace files included).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import random
import traceback
from pathlib import Path
from typing import Callable, Iterable

from lab.ports.fault_vocabulary import check_delay, check_rate
from lab.core import guard
from lab.core import impl as impl_module
from lab.core.judges import Call, judged
from lab.core.config import FSYNC_POLICIES, PRE_VOTE, TIMING, Timing, check_choice, node_names
from lab.core.messages import (
    NODE_DOWN, NOT_LEADER, TIMEOUT, Answer, ClientRead, ClientWrite, Entry, Event, answer_fields, digest)
from lab.core.replica import Replica
from lab.ports.driver import ReadyDriver
from lab.ports.disk_faults import DiskFaults, failure
from lab.ports.memlog import MemoryLog
from lab.ports.state import MemoryState
from lab.ports.trace import CLUSTER, TraceFile, TraceMemory, TraceTee, write_meta
from lab.ports.segments import SEGMENT_BYTES
from lab.core import reasons
from lab.core.reasons import Reason
from lab.core.events import (
    CLIENT_ANSWER, CLIENT_READ, CLIENT_WRITE, CLUSTER_STARTED, CLUSTER_STOPPED, DISK_FULL, DISK_OK, FSYNC_FAIL,
    LINK_CUT, LINK_HEALED, LOG_SNAPSHOT, NODE_EXITED, NODE_KILLED, NODE_PAUSED, NODE_RESTARTED, NODE_RESUMED, STEP)

log = logging.getLogger("lab.sim")


class SimTransport:
    """The transport port of one simulated node: onto the cluster's network queue and answer book."""

    def __init__(self, cluster: "SimCluster", node: str):
        self.cluster = cluster
        self.node = node

    def send(self, dst: str, message) -> None:
        self.cluster._send(self.node, dst, message)

    def answer(self, answer: Answer) -> None:
        self.cluster.answered(answer, self.node)

    def flush(self) -> None:
        pass


class SimClock:
    def __init__(self, cluster: "SimCluster"):
        self.cluster = cluster

    def now(self) -> float:
        return self.cluster.now * self.cluster.tick_seconds


class SimCluster:
    defer_sync = False  # a leader's sync completes in the step that wrote (the explorer's world: as a choice)

    def __init__(
        self,
        nodes: int | Iterable[str] = 3,
        *,
        seed: int = 0,
        truncation: str = "generation",
        fsync: str | dict[str, str] = "always",
        impl: str = "solutions",
        trace_dir: str | Path | None = None,
        timing: Timing = TIMING,
        delay_ms: float = 0.0,
        flush_ticks: int = 50,
        segment_bytes: int = SEGMENT_BYTES,
        pre_vote: bool = PRE_VOTE,
        meta: dict | None = None,
        limit: float = guard.DEFAULT_LIMIT,
        judge: bool = False,  # each call of the student's functions judged (lab.core.judges): see _heard
    ):
        self.names = node_names(nodes) if isinstance(nodes, int) else list(nodes)
        self.seed = seed
        self.rng = random.Random(f"{seed}-network")
        self.truncation = truncation
        self.impl = guard.guarded(impl_module.load(impl), limit)  # a student's function is timed and checked
        self.wrong_calls: list[tuple[str, int, Call]] = []  # (node, step, call), the first few
        self.unwritten: set[str] = set()
        self.current = ""  # the node stepping now
        self.impl = judged(self.impl, impl_module.student_functions(impl), self._heard) if judge else self.impl
        self.timing = timing
        self.tick_seconds = timing.tick_ms / 1000.0
        self.flush_ticks = flush_ticks
        self.segment_bytes = segment_bytes
        self.pre_vote = pre_vote
        policies = fsync if isinstance(fsync, dict) else {n: fsync for n in self.names}
        for name, policy in policies.items():
            check_choice(f"fsync policy of {name}", policy, FSYNC_POLICIES)
        self.logs = {n: MemoryLog(fsync=policies.get(n, "always"), segment_bytes=segment_bytes, impl=self.impl)
                     for n in self.names}
        self.states_on_disk = {n: MemoryState() for n in self.names}
        self.disks = {n: DiskFaults() for n in self.names}  # storage faults: disk-full, fsync-fail
        for n in self.names:
            self.logs[n].faults = self.states_on_disk[n].faults = self.disks[n]
        self.replicas: dict[str, Replica | None] = {n: None for n in self.names}
        self.drivers: dict[str, ReadyDriver] = {}
        self.states = {n: "killed" for n in self.names}
        self.exit_reasons: dict[str, str] = {}
        self.faults: dict[str, dict] = {}  # node -> the fault of the student's code that stopped it
        self.stopped_unwritten: dict[str, str] = {}  # node -> the unwritten function it stopped on
        self.step = 0  # the scenario's step under way (1-based; 0 before the first), for a fault's report
        self.boots = {n: 0 for n in self.names}
        self.now = 0
        self._queue: list = []
        self._held: dict[str, list] = {n: [] for n in self.names}  # messages to a paused node
        self._order = itertools.count()
        self.cuts: set[tuple[str, str]] = set()
        self.delays: dict[tuple[str, str], int] = {}
        self.default_delay = self._ticks(check_delay(delay_ms))
        self.drops: dict[tuple[str, str], float] = {}
        self.drop_rate = 0.0
        self.duplicate_rate = 0.0
        self.reorder_ticks = 0
        self._drop_nth: dict[tuple[str, str], int] = {}
        self.requests = 0  # the clients' requests so far: w1, r2, w3, ... (an int, so that a copy counts on)
        self.answers, self._forwarding, self._hops = {}, {}, []  # (the last two: linearizable reads, ask_read)
        self.events: list[dict] = []
        self.listeners: list[Callable[[dict], None]] = []
        self.trace_dir = Path(trace_dir) if trace_dir else None
        self._traces: dict[str, object] = {}
        self.meta = {
            "run": (meta or {}).get("run", f"sim-seed{seed}"), "source": "sim", "scenario": None, "seed": seed,
            "nodes": self.names, "truncation": truncation, "fsync": policies, "impl": impl,
            "liveness_bound": 5.0, "started": None, **(meta or {}),
        }
        if self.trace_dir:
            self.trace_dir.mkdir(parents=True, exist_ok=True)
            for stale in self.trace_dir.glob("events-*.jsonl"):  # a simulated run is always a fresh one
                stale.unlink()
            write_meta(self.trace_dir, **self.meta)
        self._cluster_event(CLUSTER_STARTED, nodes=self.names, truncation=truncation, fsync=policies, impl=impl)
        for name in self.names:
            self._boot(name)

    # ---- nodes -----------------------------------------------------------------------------------------------

    def _trace(self, who: str):
        if who not in self._traces:
            memory = TraceMemory(who, self.events, self.listeners)
            self._traces[who] = TraceTee(memory, TraceFile(self.trace_dir, who, to_os=False)) if self.trace_dir else memory
        return self._traces[who]

    def _view(self):
        """The cluster as its nodes' ports hold it (the explorer's worlds hand out a weak reference: lab.sim.world)."""
        return self

    def _boot(self, name: str) -> None:
        storage, state = self.logs[name], self.states_on_disk[name]
        if storage.fsync != "never":  # the write-ahead log syncs what it recovers when it opens (lab.ports.wal)
            storage.synced = storage.log_end
        self.boots[name] += 1
        timing = self.timing
        self.replicas[name] = Replica(
            node_id=name, nodes=self.names, impl=self.impl,
            rng=random.Random(f"{self.seed}-{name}-{self.boots[name]}"),
            hard_state=state.load(), log=list(storage.entries()), high_water_mark=state.load_high_water_mark(),
            truncation=self.truncation, election_ticks=timing.election_ticks,
            heartbeat_ticks=timing.heartbeat_ticks, write_timeout_ticks=timing.write_timeout_ticks,
            max_batch=timing.max_batch, pre_vote=self.pre_vote,
        )
        me = self._view()
        self.drivers[name] = ReadyDriver(name, log=storage, state=state, transport=SimTransport(me, name),
                                         trace=self._trace(name), clock=SimClock(me), boot=self.boots[name],
                                         replica=self.replicas[name], defer_sync=self.defer_sync)
        self.states[name] = "running"
        if self.disks[name].full:  # a node process cannot even write its boot counter
            self._step(name, self.disks[name].before_write, "writing the boot counter")
            return
        self._step(name, self.replicas[name].start)

    def _heard(self, call: Call) -> None:
        """With `judge`: the calls that broke their exercise's rule go to `wrong_calls`, and the functions not
        written yet that a node reached to `unwritten`."""
        if call.unwritten:
            self.unwritten.add(call.function)
        elif call.why is not None and len(self.wrong_calls) < 20:
            self.wrong_calls.append((self.current, self.step, call))

    def _step(self, name: str, step, *args) -> None:
        """One step of a node's replica, applied by its driver. A step that raises stops the node (fail-stop)."""
        self.current = name
        try:
            ready = step(*args)
            self.drivers[name].apply([ready])
        except Exception as exc:  # what a node process does: say why, and stop
            storage = failure(exc)  # a disk fault: stop at once, never retry an fsync (lab.ports.disk_faults)
            fault = None if storage else guard.fault_of(exc)  # the student's code: which call, with what
            reason = storage[0] if storage else fault.sentence() if fault else \
                traceback.format_exception_only(type(exc), exc)[-1].strip()
            log.debug("node %s stopped: %s", name, reason, exc_info=True)
            self._stopped(name, reason, exc, storage, fault)
        while self._hops:
            node, read = self._hops.pop(0)
            if self.states[node] == "running":
                self._step(node, self.replicas[node].read, read)
            else:
                self.answered(Answer(request=read.request, ok=False, index=read.index, refusal=NODE_DOWN,
                                     error=Reason(reasons.NODE_IS, node=node, state=self.states[node])), None)

    def _stopped(self, name: str, reason, exc: BaseException, storage, fault) -> None:
        """A node's step raised: it stops, as a node process would, and the trace says why."""
        self.replicas[name] = None
        self.states[name] = "exited"
        self.exit_reasons[name] = reason
        self._held[name].clear()
        extra = {}
        if isinstance(exc, NotImplementedError):  # an exercise not started: the scenario says so, not "timeout"
            self.stopped_unwritten.setdefault(name, _raising_function(exc))
        if fault:
            extra = {"fault": fault.as_dict(), "step": self.step, "scenario": self.meta.get("scenario")}
            self.faults.setdefault(name, extra["fault"])
        self._cluster_event(NODE_EXITED, target=name, code=storage[1] if storage else 70, reason=reason,
                            **extra)

    def kill(self, node: str, *, lose_unsynced: bool = False) -> None:
        """Crash a node: its volatile state is gone; with lose_unsynced, so is what was never synced."""
        self._check(node)
        lost = self.logs[node].lose_unsynced_tail() if lose_unsynced else 0
        self.replicas[node] = None
        self.states[node] = "killed"
        self._held[node].clear()
        self._cluster_event(NODE_KILLED, target=node, lost_entries=lost)

    def restart(self, node: str) -> None:
        self._check(node)
        if self.states[node] not in ("killed", "exited"):
            self.kill(node)
        self._cluster_event(NODE_RESTARTED, target=node)
        self._boot(node)

    def pause(self, node: str) -> None:
        self._check(node)
        if self.states[node] == "running":
            self.states[node] = "paused"
            self._cluster_event(NODE_PAUSED, target=node)

    def resume(self, node: str) -> None:
        self._check(node)
        if self.states[node] == "paused":
            self.states[node] = "running"
            self._cluster_event(NODE_RESUMED, target=node)
            held, self._held[node] = self._held[node], []
            for src, dst, message in held:
                self._deliver(src, dst, message)

    def campaign(self, node: str) -> None:
        self._check(node)
        if self.states[node] == "running":
            self._step(node, self.replicas[node].campaign)

    def flush(self, node: str) -> None:
        self.logs[node].flush()

    def disk_full(self, node: str) -> None:
        """The node's disk is full: its next write fails with ENOSPC (and so on, until disk_ok)."""
        self._check(node)
        self.disks[node].full = True
        self._cluster_event(DISK_FULL, target=node)

    def disk_ok(self, node: str) -> None:
        self._check(node)
        self.disks[node].full = self.disks[node].fsync_fail = False
        self._cluster_event(DISK_OK, target=node)

    def fsync_fail(self, node: str) -> None:
        """The node's next fsync fails with EIO, and what it was to sync is lost."""
        self._check(node)
        self.disks[node].fsync_fail = True
        self._cluster_event(FSYNC_FAIL, target=node)

    # ---- network ---------------------------------------------------------------------------------------------

    def cut(self, src: str, dst: str, *, one_way: bool = False) -> None:
        pairs = [(src, dst)] if one_way else [(src, dst), (dst, src)]
        for a, b in pairs:
            self._check(a), self._check(b)
            if (a, b) not in self.cuts:
                self.cuts.add((a, b))
                self._cluster_event(LINK_CUT, src=a, dst=b)

    def isolate(self, node: str) -> None:
        for other in self.names:
            if other != node:
                self.cut(node, other)

    def heal(self, src: str | None = None, dst: str | None = None, *, one_way: bool = False) -> None:
        for a, b in sorted(self.cuts):
            if src is None or (a, b) == (src, dst) or (not one_way and (a, b) == (dst, src)):
                self.cuts.discard((a, b))
                self._cluster_event(LINK_HEALED, src=a, dst=b)

    def delay(self, ms: float, src: str | None = None, dst: str | None = None) -> None:
        ticks = self._ticks(check_delay(ms))
        if src is None:
            self.default_delay = ticks
            self.delays.clear()
        else:
            self._check(src), self._check(dst)
            self.delays[(src, dst)] = ticks

    def drop(self, rate: float, src: str | None = None, dst: str | None = None) -> None:
        rate = check_rate(rate)
        if src is None:
            self.drop_rate = rate
            self.drops.clear()
        else:
            self._check(src), self._check(dst)
            self.drops[(src, dst)] = rate

    def set_faults(self, *, drop: float = 0.0, duplicate: float = 0.0, reorder: int = 0) -> None:
        """The simulator's own faults, on every link: drop and duplicate rates, reorder by up to N ticks."""
        self.drop(drop)
        self.duplicate_rate, self.reorder_ticks = duplicate, reorder

    def drop_nth(self, message_type: str, dst: str, n: int) -> None:
        """Drop the n-th message of that type (e.g. "ReplicationRequest") sent to dst from now on."""
        self._drop_nth[(message_type, dst)] = n

    def _ticks(self, ms: float) -> int:
        return round(ms / 1000.0 / self.tick_seconds)

    def _send(self, src: str, dst: str, message) -> None:
        key = (type(message).__name__, dst)
        if key in self._drop_nth:
            self._drop_nth[key] -= 1
            if self._drop_nth[key] == 0:
                del self._drop_nth[key]
                return
        if (src, dst) in self.cuts or self.rng.random() < self.drops.get((src, dst), self.drop_rate):
            return
        copies = 2 if self.rng.random() < self.duplicate_rate else 1
        for _ in range(copies):
            delay = self.delays.get((src, dst), self.default_delay)
            if self.reorder_ticks:
                delay += self.rng.randrange(self.reorder_ticks + 1)
            heapq.heappush(self._queue, (self.now + max(delay, 1), next(self._order), (src, dst, message)))

    def _deliver(self, src: str, dst: str, message) -> None:
        state = self.states[dst]
        if state == "paused":
            self._held[dst].append((src, dst, message))
        elif state == "running" and (src, dst) not in self.cuts:
            self._step(dst, self.replicas[dst].receive, src, message)

    # ---- clients ---------------------------------------------------------------------------------------------

    def write(self, payload: str, node: str | None = None, *, client: str | None = None) -> str:
        """Send a client write to `node` (default: the current leader, else the first node); returns the request id.
        A node that is not running answers NODE_DOWN at once. `client`: the session it belongs to (the history's)."""
        target = node or self.leader() or self.names[0]
        self._check(target)
        request = self._request("w")
        self._cluster_event(CLIENT_WRITE, payload=payload, digest=digest(payload), target=target, request=request,
                            **({"client": client} if client else {}))
        if self.states[target] != "running":
            self.answered(Answer(request=request, ok=False, refusal=NODE_DOWN,
                                 error=Reason(reasons.NODE_IS, node=target, state=self.states[target])), None)
        else:
            self._step(target, self.replicas[target].propose, [ClientWrite(request=request, payload=payload)])
        return request

    def read(self, index: int, node: str, *, client: str | None = None) -> Answer:
        """Read `index` from `node`: its answer, or NODE_DOWN when it is not running (or stopped on the read)."""
        request = self.ask_read(index, node, client=client)
        answer = self.answers.pop(request, None)
        if answer is None:  # held behind the node's pending sync (a manual sync): it leaves with that sync
            answer = Answer(request=request, ok=False, index=index, refusal=TIMEOUT,
                            error=Reason(reasons.ANSWER_AFTER_SYNC, node=node))
        return answer

    def ask_read(self, index: int, node: str, *, linearizable: bool = False, client: str | None = None) -> str:
        """Send a read to `node`; its answer comes to `answers` under the request id returned: at once for a plain
        read (or none, when the node is not running), after a round of messages for a linearizable one."""
        self._check(node)
        request = self._request("r")
        if linearizable:
            self._forwarding[request] = (index, 0)
        self._cluster_event(CLIENT_READ, index=index, target=node, request=request,
                            **({"client": client} if client else {}),
                            **({"linearizable": True} if linearizable else {}))
        if self.states[node] == "running":
            self._step(node, self.replicas[node].read, ClientRead(request=request, index=index,
                                                                  linearizable=linearizable))
        if request not in self.answers and self.states[node] != "running":  # not running, or stopped on the read
            self.answered(Answer(request=request, ok=False, index=index, refusal=NODE_DOWN,
                                 error=Reason(reasons.NODE_IS, node=node, state=self.states[node])), None)
        return request

    def answered(self, answer: Answer, node: str | None) -> None:
        """A client gets its answer (from `node`, None when no node gave it): kept, and traced as the clients'
        history reads it (lab.harness.history)."""
        hop = self._forwarding.pop(answer.request, None)
        if hop is not None and answer.refusal == NOT_LEADER and answer.leader not in (None, node) and \
                answer.leader in self.states and hop[1] < len(self.names):
            self._forwarding[answer.request] = (hop[0], hop[1] + 1)
            self._hops.append((answer.leader, ClientRead(request=answer.request, index=hop[0], linearizable=True)))
            return
        self.answers[answer.request] = answer
        self._cluster_event(CLIENT_ANSWER, **answer_fields(answer, node))

    def _request(self, kind: str) -> str:
        self.requests += 1
        return f"{kind}{self.requests}"

    # ---- time ------------------------------------------------------------------------------------------------

    def tick(self) -> None:
        self.now += 1
        while self._queue and self._queue[0][0] <= self.now:
            _, _, (src, dst, message) = heapq.heappop(self._queue)
            self._deliver(src, dst, message)
        for name in self.names:
            if self.states[name] == "running":
                self._step(name, self.replicas[name].tick)
            if self.logs[name].fsync == "never" and self.now % self.flush_ticks == 0:
                self.logs[name].flush()

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
        return self.replicas[name] if self.states[name] not in ("killed", "exited") else None

    def log_of(self, name: str) -> list[Entry]:
        replica = self.node(name)
        return list(replica.log) if replica else list(self.logs[name].entries())

    def status(self) -> dict:
        nodes = []
        for name in self.names:
            replica = self.node(name)
            state = self.states_on_disk[name]
            info = replica.status() if replica else {
                "id": name, "role": None, "generation": state.load().generation, "leader": None,
                "log_end": self.logs[name].log_end,
                "hwm": min(state.load_high_water_mark(), self.logs[name].log_end),
                "match_index": {}, "next_index": {}}
            info["state"] = self.states[name]
            if name in self.exit_reasons and self.states[name] == "exited":
                reason = info["exit_reason"] = self.exit_reasons[name]
                if isinstance(reason, Reason):  # which reason, for a reader in another language (as the supervisor)
                    info["exit_because"] = reason.as_record()
                if name in self.faults:
                    info["fault"] = self.faults[name]
            info["log"] = [[e.index, e.generation, e.payload] for e in self.log_of(name)]
            info["on_disk"] = min(self.durable_end(name), len(info["log"]))
            nodes.append(info)
        return {"nodes": nodes, "leader": self.leader(), "time": self.now * self.tick_seconds,
                "links": [{"src": a, "dst": b, "cut": True} for a, b in sorted(self.cuts)]}

    def durable_end(self, name: str) -> int:
        """How far a node's log would survive a power cut: its synced entries (a node with fsync `never` is taken
        at its word: its lesson is its own, K2). The rule of the high-water mark counts these (World.holders)."""
        storage = self.logs[name]
        return storage.log_end if storage.fsync == "never" else storage.synced

    # ---- plumbing --------------------------------------------------------------------------------------------

    def _cluster_event(self, kind: str, **fields) -> None:
        trace = self._trace(CLUSTER)
        trace.emit([Event(kind, fields)], time=self.now * self.tick_seconds, boot=0)

    def note(self, kind: str, **fields) -> None:
        """A line of the cluster's own in the trace (a scenario's step, an expectation)."""
        if kind == STEP:
            self.step = int(fields.get("index", 0)) + 1
        self._cluster_event(kind, **fields)

    def _check(self, name: str) -> None:
        if name not in self.names:
            raise ValueError(Reason(reasons.NO_NODE_IN_CLUSTER, node=repr(name), nodes=list(self.names)))

    def close(self, extra_meta: dict | None = None) -> None:
        """End the run: a final log snapshot of every live node, then flush the trace."""
        for name in self.names:
            replica = self.node(name)
            if replica is not None:
                self.drivers[name].emit(Event(LOG_SNAPSHOT, {
                    "gen": replica.generation, "hwm": replica.high_water_mark, "log_end": replica.log.log_end,
                    "entries": [e.as_trace() for e in replica.log]}))
        self._cluster_event(CLUSTER_STOPPED)
        for trace in self._traces.values():
            trace.close()
        if self.trace_dir:
            self.meta.update(extra_meta or {})
            write_meta(self.trace_dir, **self.meta)


def _raising_function(exc: BaseException) -> str:
    """The name of the function that raised `exc`: its traceback's last frame."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_name if tb is not None else type(exc).__name__
