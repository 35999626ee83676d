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

from lab.core.messages import Event, ReplicationRequest
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
    """Applies the outputs of one node's replica. `early_requests`: a leader's replication requests leave before
    its own append is synced (they promise nothing; the followers' answers still wait for their own fsync)."""

    def __init__(self, node: str, *, log, state, transport: Transport, trace, clock: Clock, boot: int = 1,
                 early_requests: bool = True):
        self.node = node
        self.log = log
        self.state = state
        self.transport = transport
        self.trace = trace
        self.clock = clock
        self.boot = boot
        self.early_requests = early_requests

    def apply(self, readys: Sequence[Ready]) -> None:
        """Persist, sync, send, trace, answer: the outputs of several steps at once share one write and one sync."""
        log, transport = self.log, self.transport
        pending: list = []
        hard_state = None
        must_sync = False
        storage_events: dict[int, list] = {}
        for position, ready in enumerate(readys):
            index = ready.truncate_from
            if index is not None:
                if pending and pending[0].index >= index:
                    pending = []
                elif pending:
                    pending = [e for e in pending if e.index < index]
                if index <= log.log_end:
                    storage_events[position] = [self._truncate(index)]
            if ready.append:
                pending.extend(ready.append)
            if ready.hard_state is not None:
                hard_state = ready.hard_state
            if ready.high_water_mark is not None:
                self.state.hint_high_water_mark(ready.high_water_mark)
            must_sync = must_sync or ready.must_sync
        if pending:
            log.append(pending)
        if hard_state is not None:
            self.state.save(hard_state)
        early = self.early_requests and must_sync
        if early:
            for ready in readys:
                for envelope in ready.messages:
                    if type(envelope.message) is ReplicationRequest:
                        transport.send(envelope.dst, envelope.message)
            transport.flush()
        if must_sync:
            log.sync()
        for ready in readys:
            for envelope in ready.messages:
                if not (early and type(envelope.message) is ReplicationRequest):
                    transport.send(envelope.dst, envelope.message)
        transport.flush()
        now, trace = self.clock.now(), self.trace
        for position, ready in enumerate(readys):
            if ready.events:
                trace.emit(ready.events, time=now, boot=self.boot)
            if position in storage_events:
                trace.emit(storage_events[position], time=now, boot=self.boot)
        trace.flush()  # the cause is in the trace before a client can see its effect
        for ready in readys:
            for answer in ready.answers:
                transport.answer(answer)
        transport.flush()

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
