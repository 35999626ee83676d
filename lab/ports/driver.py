"""The driver: applies a replica's output (lab.core.replica.Ready) through the ports, in the order written there.

Written once, for the node process and the simulator alike; only the ports differ:

| port        | node process                       | simulator                         |
|-------------|------------------------------------|-----------------------------------|
| log         | lab.ports.wal.WriteAheadLog        | lab.ports.memlog.MemoryLog        |
| state       | lab.ports.state.FileState          | lab.ports.state.MemoryState       |
| transport   | lab.ports.tcp.TcpTransport         | lab.sim.cluster.SimTransport      |
| trace       | lab.ports.trace.TraceFile (or off) | TraceMemory, and TraceFile        |
| clock       | wall time since the run started    | simulated ticks                   |

A transport offers send(dst, message), answer(answer) and flush(); a clock offers now() (seconds of trace time).
"""

from __future__ import annotations

from typing import Protocol, Sequence

from lab.core.messages import Answer, Event
from lab.core.replica import Ready
from lab.ports.segments import PlanLeftEntries, Truncation
from lab.core.events import WAL_TRUNCATED


class StorageError(Exception):
    """The log storage could not do what the replica asked (a truncation plan that left entries behind): the
    node stops rather than run on a disk that disagrees with its memory."""


class Transport(Protocol):
    def send(self, dst: str, message) -> None: ...
    def answer(self, answer) -> None: ...
    def flush(self) -> None: ...


class Clock(Protocol):
    def now(self) -> float: ...


class ReadyDriver:
    """Applies the outputs of one node's replica, in the order written beside Ready.

    A leader's replication requests (`early_messages`) leave as soon as its append is written, and its fsync runs
    while they travel and the followers sync theirs; then the driver reports the durable log end to the replica
    (`Replica.persisted`), which is when a leader counts itself toward a majority.

    `defer_sync` (the explorer's world): a step whose early messages left does not sync at once; its sync stays
    pending, with every later message and answer of the node held behind it, until `finish_sync` (a choice of the
    search, like the delivery of a message): so the search meets a leader that crashes, steps down or hears its
    followers' answers before its own write is durable."""

    def __init__(self, node: str, *, log, state, transport: Transport, trace, clock: Clock, boot: int = 1,
                 replica=None, defer_sync: bool = False):
        self.node = node
        self.log = log
        self.state = state
        self.transport = transport
        self.trace = trace
        self.clock = clock
        self.boot = boot
        self.replica = replica  # told how far its log is durable after each sync (None: nobody is told)
        self.defer_sync = defer_sync
        self.held: list | None = None  # with a sync pending: the messages (Envelope) and answers (Answer) behind it
        self._written = None  # the last entry written since the replica was last told of a sync

    @property
    def sync_pending(self) -> bool:
        return self.held is not None

    def apply(self, readys: Sequence[Ready]) -> None:
        """Persist, send, sync, send, trace, answer: the outputs of several steps at once share one write and one
        sync."""
        log, transport = self.log, self.transport
        pending: list = []
        hard_state = None
        must_sync = early = False
        storage_events: dict[int, list] = {}
        for position, ready in enumerate(readys):
            index = ready.truncate_from
            if index is not None:
                if pending and pending[0].index >= index:
                    pending = []
                elif pending:
                    pending = [e for e in pending if e.index < index]
                if self._written is not None and self._written.index >= index:
                    self._written = None
                if index <= log.log_end:
                    storage_events[position] = [self._truncate(index)]
            if ready.append:
                pending.extend(ready.append)
            if ready.hard_state is not None:
                hard_state = ready.hard_state
            if ready.high_water_mark is not None:
                self.state.hint_high_water_mark(ready.high_water_mark)
            must_sync = must_sync or ready.must_sync
            early = early or bool(ready.early_messages)
        if pending:
            log.write(pending)
            self._written = pending[-1]
        if hard_state is not None:
            self.state.save(hard_state)
        held = self.held
        if must_sync or held is not None:
            # Replication requests promise nothing of this node's disk: on their way before its sync.
            for ready in readys:
                for envelope in ready.early_messages:
                    transport.send(envelope.dst, envelope.message)
            transport.flush()
        now, trace = self.clock.now(), self.trace
        if held is None and must_sync and early and self.defer_sync:
            held = self.held = []
        if held is not None:  # a sync is pending: what may promise durability waits for it
            self._trace(readys, storage_events, now)
            for ready in readys:
                held.extend(ready.messages)
                held.extend(ready.answers)
            return
        if must_sync:
            log.sync()
        for ready in readys:
            if not must_sync:
                for envelope in ready.early_messages:
                    transport.send(envelope.dst, envelope.message)
            for envelope in ready.messages:
                transport.send(envelope.dst, envelope.message)
        transport.flush()  # a follower's answer to its leader first: the replica hears of the sync after
        persisted = self._tell_persisted() if must_sync else None
        if persisted is not None:
            for envelope in (*persisted.early_messages, *persisted.messages):
                transport.send(envelope.dst, envelope.message)
            transport.flush()
        self._trace(readys, storage_events, now)
        if persisted is not None and persisted.events:
            trace.emit(persisted.events, time=self.clock.now(), boot=self.boot)
        trace.flush()  # the cause is in the trace before a client can see its effect
        for ready in readys:
            for answer in ready.answers:
                transport.answer(answer)
        if persisted is not None:
            for answer in persisted.answers:
                transport.answer(answer)
        transport.flush()

    def finish_sync(self) -> Ready:
        """The pending sync (defer_sync) completes: what it held leaves, in order; returns the replica's output on
        hearing how far its log is durable, for the caller to apply."""
        held, self.held = self.held, None
        if held is None:
            return Ready().done()
        self.log.sync()
        transport = self.transport
        self.trace.flush()
        for item in held:
            if type(item) is Answer:
                transport.answer(item)
            else:
                transport.send(item.dst, item.message)
        transport.flush()
        return self._tell_persisted() or Ready().done()

    def _tell_persisted(self) -> Ready | None:
        written, self._written = self._written, None
        if written is None or self.replica is None:
            return None
        ready = self.replica.persisted(written.index, written.generation)
        if ready.high_water_mark is not None:
            self.state.hint_high_water_mark(ready.high_water_mark)
        return ready

    def _trace(self, readys, storage_events: dict, now: float) -> None:
        trace = self.trace
        for position, ready in enumerate(readys):
            if ready.events:
                trace.emit(ready.events, time=now, boot=self.boot)
            if position in storage_events:
                trace.emit(storage_events[position], time=now, boot=self.boot)

    def emit(self, *events) -> None:
        """Events of the process around the replica (node_stopped, log_snapshot, ...): traced at once."""
        self.trace.emit(events, time=self.clock.now(), boot=self.boot)
        self.trace.flush()

    def _truncate(self, index: int) -> Event:
        try:
            report = self.log.truncate_from(index)
        except PlanLeftEntries as exc:
            self.emit(_wal_truncated(exc.truncation))
            raise StorageError(str(exc)) from exc
        return _wal_truncated(report)


def _wal_truncated(report: Truncation) -> Event:
    return Event(WAL_TRUNCATED, {"from_index": report.from_index, "log_end": report.log_end,
                                   "segments": report.segments, "deleted": report.deleted})
