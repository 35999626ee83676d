"""A node process: one replica, its write-ahead log and durable state on disk, framed JSON on one TCP port.

A thin single-threaded loop: read bytes -> decode -> replica step -> persist -> send -> answer.
Run `python -m lab.processes.node --id A --nodes A,B,C --data-dir DIR` (the supervisor does it for you); `--help` lists
the options. Port 0 (the default) picks a free port; the node prints it and writes it to its ready file.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import heapq
import json
import logging
import os
import random
import selectors
import signal
import socket
import sys
import time
from dataclasses import dataclass, field

from lab.ports import codec
from lab.core import impl as impl_module
from lab.ports.codec import CodecError, Control, ControlReply, Hello
from lab.core.messages import (
    Answer,
    ClientRead,
    ClientWrite,
    EpochAnswer,
    EpochQuery,
    Event,
    Ready,
    ReplicationRequest,
    ReplicationResponse,
    VoteRequest,
    VoteResponse,
)
from lab.core.replica import TRUNCATION_STRATEGIES, Replica
from lab.ports.state import FileState
from lab.ports.trace import VERSION, TraceWriter
from lab.ports.wal import FSYNC_POLICIES, WriteAheadLog

log = logging.getLogger("lab.processes.node")

RECV_BYTES = 1 << 20  # read into one buffer reused by every read: recv() of this size would map and
                      # unmap a fresh megabyte per call (about 15 us, a good part of a small request's hop)
BACKLOG_LIMIT = 4  # stop reading clients while more than this many iterations' worth of writes wait
PEER_BUFFER_LIMIT = 64 << 20  # a peer that stopped reading (SIGSTOP) gets no more than this queued
RECONNECT_SECONDS = 0.05
NETWORK_CHECK_SECONDS = 0.02
HWM_CHECKPOINT_SECONDS = 0.1
PARENT_CHECK_SECONDS = 0.5
MAX_CATCHUP_TICKS = 3  # after a pause, a node does not replay every tick it missed
EXIT_REPLICA_FAILED = 70

# Which field of a peer message names its sender: it must match the Hello of the connection it came on.
_SENDER_FIELD = {
    ReplicationRequest: "leader",
    ReplicationResponse: "follower",
    VoteRequest: "candidate",
    VoteResponse: "voter",
    EpochQuery: "follower",
    EpochAnswer: "leader",
}


class ProtocolError(Exception):
    """A well-formed message that has no business on this connection."""


@dataclass
class NodeConfig:
    node_id: str
    nodes: list[str]
    data_dir: str
    run_dir: str | None = None
    host: str = "127.0.0.1"
    port: int = 0
    peers: dict[str, tuple[str, int]] = field(default_factory=dict)
    network_file: str | None = None
    impl: str = "solutions"
    fsync: str = "always"
    truncation: str = "generation"
    seed: int = 0
    start_time: float | None = None
    tick_ms: float = 10.0
    election_ticks: int = 30
    heartbeat_ticks: int = 5
    write_timeout_ticks: int = 300
    max_batch: int = 1024
    max_frame: int = codec.MAX_FRAME
    segment_bytes: int = 4 * 1024 * 1024
    writeback_ms: float = 500.0
    hold_ticks: bool = False
    parent_pid: int | None = None
    ready_file: str | None = None


_escape = json.encoder.encode_basestring_ascii  # the C function json.dumps uses for strings
_c_encoder = json.encoder.c_make_encoder
_encode_value = (
    (lambda obj, _e=_c_encoder(None, None, _escape, None, ":", ",", False, False, True): "".join(_e(obj, 0)))
    if _c_encoder is not None else json.JSONEncoder(separators=(",", ":")).encode
)


# The events written once per entry are formatted by hand (a third of the cost of json.dumps), byte for byte
# what TraceWriter writes. Each takes the line's sequence number, what the lines of one moment share (up to the
# value of "gen") and the fields; other fields, or a field of another type (TypeError), fall back to the C
# encoder.
_HEAD = f'{{"v":{VERSION},"seq":'


def _entry_ints(f) -> tuple[int, int, int]:
    """An entry line's "gen", "index" and "generation"; TypeError (the fallback) if any is not an int."""
    gen, index, generation = f["gen"], f["index"], f["generation"]
    if type(gen) is not int or type(index) is not int or type(generation) is not int:
        raise TypeError(f)
    return gen, index, generation


def _write_requested(seq, shared, f) -> str:
    gen = f["gen"]
    if type(gen) is not int:
        raise TypeError(gen)
    return (f'{_HEAD}{seq}{shared}{gen},"type":"write_requested","request":{_escape(f["request"])},'
            f'"digest":{_escape(f["digest"])},"payload":{_escape(f["payload"])}}}')


def _leader_append(seq, shared, f) -> str:
    gen, index, generation = _entry_ints(f)
    return (f'{_HEAD}{seq}{shared}{gen},"type":"leader_append","index":{index},"generation":{generation},'
            f'"digest":{_escape(f["digest"])},"payload":{_escape(f["payload"])},"request":{_escape(f["request"])}}}')


def _write_acked(seq, shared, f) -> str:
    gen, index, generation = _entry_ints(f)
    return (f'{_HEAD}{seq}{shared}{gen},"type":"write_acked","request":{_escape(f["request"])},"index":{index},'
            f'"generation":{generation},"digest":{_escape(f["digest"])}}}')


def _follower_append(seq, shared, f) -> str:
    gen, index, generation = _entry_ints(f)
    return (f'{_HEAD}{seq}{shared}{gen},"type":"follower_append","index":{index},"generation":{generation},'
            f'"digest":{_escape(f["digest"])},"payload":{_escape(f["payload"])}}}')


_FORMATTERS = {  # event type -> (its fields in the replica's order, formatter)
    "write_requested": (("gen", "request", "digest", "payload"), _write_requested),
    "leader_append": (("gen", "index", "generation", "digest", "payload", "request"), _leader_append),
    "write_acked": (("gen", "request", "index", "generation", "digest"), _write_acked),
    "follower_append": (("gen", "index", "generation", "digest", "payload"), _follower_append),
}


class _TraceWriter(TraceWriter):
    """TraceWriter's lines, made cheaper: hot events formatted by hand, one write per loop iteration (flush)."""

    def __init__(self, run_dir, node):
        super().__init__(run_dir, node, flush_each=False)
        self._lines: list[str] = []
        self._node_field = f',"node":{_escape(node)}'

    def emit(self, event: Event, *, time: float, boot: int) -> None:
        self.emit_all((event,), time=time, boot=boot)

    def emit_all(self, events, *, time: float, boot: int) -> None:
        """Buffer the lines of `events`, which happened at the same moment; `flush` writes them."""
        time = round(time, 6)
        lines = self._lines
        # What every line of this moment shares, up to the value of "gen".
        shared = f',"time":{time!r}{self._node_field},"boot":{boot},"gen":' \
            if type(time) is float and type(boot) is int else None
        seq = self.seq
        formatters = _FORMATTERS if shared is not None else {}
        try:
            for event in events:
                fields = event.fields
                formatter = formatters.get(event.type)
                if formatter is not None and tuple(fields) == formatter[0]:
                    try:
                        lines.append(formatter[1](seq + 1, shared, fields))
                        seq += 1
                        continue
                    except TypeError:
                        pass
                record = {"v": VERSION, "seq": seq + 1, "time": time, "node": self.node, "boot": boot,
                          "gen": fields.get("gen", 0), "type": event.type}
                record.update(fields)  # "gen" keeps its place; the other fields follow in the replica's order
                lines.append(_encode_value(record))
                seq += 1
        finally:
            self.seq = seq  # the lines buffered so far, and no more, have used their numbers

    def flush(self) -> None:
        if self._lines:
            self._lines.append("")
            self._file.write("\n".join(self._lines))
            self._lines = []
        self._file.flush()

    def close(self) -> None:
        self.flush()
        super().close()


class Conn:
    """One TCP connection: inbound (a peer, a client or the supervisor) or outbound to a peer."""

    __slots__ = ("sock", "cid", "decoder", "out", "kind", "peer", "addr", "connecting", "closed", "writing")

    def __init__(self, sock: socket.socket, cid: int, max_frame: int, *, kind: str = "unknown",
                 peer: str | None = None, addr=None):
        self.sock = sock
        self.cid = cid
        self.decoder = codec.FrameDecoder(max_frame)
        self.out = bytearray()
        self.kind = kind  # unknown | peer (inbound, after Hello) | client | outbound
        self.peer = peer
        self.addr = addr
        self.connecting = False
        self.closed = False
        self.writing = False

    def describe(self) -> str:
        who = f"peer {self.peer}" if self.peer else self.kind
        return f"connection {self.cid} ({who}, {self.addr})"


class Node:
    def __init__(self, cfg: NodeConfig):
        if cfg.node_id not in cfg.nodes:
            raise ValueError(f"node {cfg.node_id!r} is not one of {cfg.nodes}")
        if cfg.fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync must be one of {FSYNC_POLICIES}, not {cfg.fsync!r}")
        if cfg.truncation not in TRUNCATION_STRATEGIES:
            raise ValueError(f"truncation must be one of {TRUNCATION_STRATEGIES}, not {cfg.truncation!r}")
        self.cfg = cfg
        self.id = cfg.node_id
        self.names = list(cfg.nodes)
        os.makedirs(cfg.data_dir, exist_ok=True)
        self.run_dir = cfg.run_dir or cfg.data_dir
        os.makedirs(self.run_dir, exist_ok=True)
        self.start_time = cfg.start_time if cfg.start_time is not None else time.time()
        self.boot = _next_boot(cfg.data_dir)
        self.impl = impl_module.load(cfg.impl)
        self.wal = WriteAheadLog(os.path.join(cfg.data_dir, "wal"), fsync=cfg.fsync,
                                 segment_bytes=cfg.segment_bytes, impl=self.impl)
        self.state = FileState(cfg.data_dir)
        self.saved_hwm = self.state.load_high_water_mark()
        self.replica = Replica(
            node_id=self.id, nodes=self.names, impl=self.impl,
            rng=random.Random(f"{cfg.seed}-{self.id}-{self.boot}"),
            hard_state=self.state.load(), log=list(self.wal.entries()), high_water_mark=self.saved_hwm,
            truncation=cfg.truncation, election_ticks=cfg.election_ticks, heartbeat_ticks=cfg.heartbeat_ticks,
            max_batch=cfg.max_batch, write_timeout_ticks=cfg.write_timeout_ticks,
        )
        self.trace = _TraceWriter(self.run_dir, self.id)

        self.sel = selectors.DefaultSelector()
        self.listener = socket.create_server((cfg.host, cfg.port), backlog=128)
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        self.port = self.listener.getsockname()[1]

        self.peers: dict[str, tuple[str, int]] = dict(cfg.peers)
        self.cuts: set[tuple[str, str]] = set()
        self.default_delay = 0.0  # seconds
        self.link_delays: dict[tuple[str, str], float] = {}
        self.network_stamp = None
        self.outbound: dict[str, Conn] = {}
        self.retry_at: dict[str, float] = {}
        self.delayed: list = []  # heap of (due, seq, dst, frame)
        self.delayed_seq = 0
        self.dirty: set[Conn] = set()
        self.requests: dict[str, tuple[Conn, str]] = {}  # request id the replica sees -> (conn, the client's id)
        self.next_cid = 0
        self.dropped = 0
        self._received = memoryview(bytearray(RECV_BYTES))

        self.hold_ticks = cfg.hold_ticks
        self.base_tick = cfg.tick_ms / 1000.0
        self.tick_seconds = self.base_tick
        self.stopping: str | None = None
        # One loop iteration's inputs.
        self._inputs: list = []
        self._writes: list[ClientWrite] = []
        self._replies: list[tuple[Conn, ControlReply]] = []

    # ---- life cycle ------------------------------------------------------------------------------------------

    def run(self) -> int:
        now = time.monotonic()
        self._check_network(force=True)
        recovery = self.wal.recovery
        if recovery is not None and recovery.first_bad_index is not None:
            log.warning("node %s: the write-ahead log lost its tail from index %s (%s)", self.id,
                        recovery.first_bad_index, recovery.reason)
        self._apply([self.replica.start()])
        self._write_ready_file()
        print(f"node {self.id} (boot {self.boot}) listening on {self.cfg.host}:{self.port}", flush=True)
        self.next_tick = now + self.tick_seconds
        self.next_checkpoint = now + HWM_CHECKPOINT_SECONDS
        self.next_writeback = now + self.cfg.writeback_ms / 1000.0 if self.cfg.writeback_ms > 0 else None
        self.next_network_check = now + NETWORK_CHECK_SECONDS
        self.next_parent_check = now + PARENT_CHECK_SECONDS
        while self.stopping is None:
            self._iterate()
        self._stop(self.stopping)
        return 0

    def request_stop(self, reason: str) -> None:
        if self.stopping is None:
            self.stopping = reason

    def _stop(self, reason: str) -> None:
        """Orderly stop: a final log snapshot, the mark checkpointed, the log closed (flushed and synced)."""
        self._snapshot()
        self._emit(Event(type="node_stopped", fields={"gen": self.replica.generation, "reason": reason}))
        self._checkpoint_hwm(force=True)
        self.trace.close()
        self.wal.close()
        for conn in list(self.outbound.values()):
            self._close(conn)
        self.sel.close()
        self.listener.close()

    def _write_ready_file(self) -> None:
        path = self.cfg.ready_file or os.path.join(self.cfg.data_dir, "node.json")
        info = {"node": self.id, "pid": os.getpid(), "host": self.cfg.host, "port": self.port, "boot": self.boot}
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(info, f)
        os.replace(tmp, path)

    # ---- the loop ------------------------------------------------------------------------------------------

    def _iterate(self) -> None:
        now = time.monotonic()
        deadline = self.next_tick if not self.hold_ticks else now + 0.05
        if self.delayed:
            deadline = min(deadline, self.delayed[0][0])
        deadline = min(deadline, self.next_network_check)
        if self._writes:
            deadline = now  # writes are waiting: poll, do not sleep
        # Back-pressure: with a long queue of writes, leave client bytes in the socket for later.
        saturated = len(self._writes) > BACKLOG_LIMIT * self.cfg.max_batch
        for key, mask in self.sel.select(max(0.0, deadline - now)):
            conn = key.data
            if conn is None:
                self._accept()
                continue
            if mask & selectors.EVENT_WRITE and not conn.closed:
                self._on_writable(conn)
            if mask & selectors.EVENT_READ and not conn.closed and not (saturated and conn.kind == "client"):
                self._on_readable(conn)
        now = time.monotonic()
        readys = self._step_inputs()
        if not self.hold_ticks and now >= self.next_tick:
            behind = int((now - self.next_tick) / self.tick_seconds) + 1
            self.next_tick += behind * self.tick_seconds
            for _ in range(min(behind, MAX_CATCHUP_TICKS)):
                readys.append(self.replica.tick())
        if readys:
            self._apply(readys)
        elif self._replies:
            self._send_replies()
        if self.delayed:
            self._release_delayed(now)
        self._flush_dirty()
        self._housekeeping(now)

    def _step_inputs(self) -> list[Ready]:
        """Step every input read in this iteration; the client writes go into ONE propose (batching)."""
        readys: list[Ready] = []
        replica = self.replica
        inputs, self._inputs = self._inputs, []
        for kind, src, item in inputs:
            try:
                if kind == "peer":
                    readys.append(replica.receive(src, item))
                elif kind == "read":
                    readys.append(replica.read(item))
                else:  # "campaign"
                    readys.append(replica.campaign())
            except Exception:
                log.exception("node %s: the replica failed on %r; stopping (fail-stop)", self.id, item)
                self._fail_stop()
        if self._writes:
            # At most one replication batch of new writes per iteration, so that ticks (heartbeats) and
            # peer messages are never starved by a flood of client writes.
            cap = self.cfg.max_batch
            writes, self._writes = self._writes[:cap], self._writes[cap:]
            try:
                readys.append(replica.propose(writes))
            except Exception:
                log.exception("node %s: the replica failed on %d client writes; stopping", self.id, len(writes))
                self._fail_stop()
        return readys

    def _fail_stop(self) -> None:
        self.trace.flush()
        self.wal.flush()
        os._exit(EXIT_REPLICA_FAILED)

    # ---- applying a step: persist, then send, then answer (lab.core.messages.Ready) --------------------------

    def _apply(self, readys: list[Ready]) -> None:
        wal = self.wal
        pending: list = []
        hard_state = None
        for ready in readys:
            if ready.truncate_from is not None:
                index = ready.truncate_from
                if pending and pending[0].index >= index:
                    pending = []
                elif pending:
                    pending = [e for e in pending if e.index < index]
                if index <= wal.log_end:
                    wal.truncate_from(index)
            if ready.append:
                pending.extend(ready.append)
            if ready.hard_state is not None:
                hard_state = ready.hard_state
        if pending:
            wal.append(pending)  # fsync `always`: one write and one fsync for the whole iteration
        if hard_state is not None:
            self.state.save(hard_state)
        wal.sync()  # fsync `batch`: the group commit
        now = time.time() - self.start_time
        for ready in readys:
            self.trace.emit_all(ready.events, time=now, boot=self.boot)
        self.trace.flush()  # the cause is in the trace before its effect can reach another node
        for ready in readys:
            for envelope in ready.messages:
                self._send(envelope.dst, envelope.message)
        for ready in readys:
            for answer in ready.answers:
                self._answer(answer)
        self._send_replies()

    def _emit(self, event: Event) -> None:
        self.trace.emit(event, time=round(time.time() - self.start_time, 6), boot=self.boot)
        self.trace.flush()

    def _send(self, dst: str, message) -> None:
        if (self.id, dst) in self.cuts:
            self.dropped += 1
            return
        frame = self._encode(message)
        if frame is None:
            return
        delay = self.link_delays.get((self.id, dst), self.default_delay)
        if delay > 0:
            self.delayed_seq += 1
            heapq.heappush(self.delayed, (time.monotonic() + delay, self.delayed_seq, dst, frame))
            return
        self._to_peer(dst, frame)

    def _encode(self, message) -> bytes | None:
        try:
            return codec.encode(message, self.cfg.max_frame)
        except codec.FrameTooLarge:
            if isinstance(message, ReplicationRequest) and len(message.entries) > 1:
                # Fewer entries: the follower answers for what it got and the leader sends the rest later.
                half = dataclasses.replace(message, entries=message.entries[: len(message.entries) // 2])
                return self._encode(half)
            log.error("node %s: a %s does not fit in a frame; dropped", self.id, type(message).__name__)
            return None

    def _release_delayed(self, now: float) -> None:
        while self.delayed and self.delayed[0][0] <= now:
            _, _, dst, frame = heapq.heappop(self.delayed)
            if (self.id, dst) in self.cuts:
                self.dropped += 1  # cut while in flight
                continue
            self._to_peer(dst, frame)

    def _to_peer(self, dst: str, frame: bytes) -> None:
        conn = self.outbound.get(dst)
        if conn is None:
            conn = self._connect(dst)
            if conn is None:
                self.dropped += 1
                return
        if len(conn.out) > PEER_BUFFER_LIMIT:
            self.dropped += 1
            return
        conn.out += frame
        self.dirty.add(conn)

    def _answer(self, answer: Answer) -> None:
        route = self.requests.pop(answer.request, None)
        if route is None:
            return
        conn, request = route
        if conn.closed:
            return
        if request != answer.request:
            answer = dataclasses.replace(answer, request=request)
        conn.out += codec.encode_answer(answer)
        self.dirty.add(conn)

    def _send_replies(self) -> None:
        replies, self._replies = self._replies, []
        for conn, reply in replies:
            if conn.closed:
                continue
            try:
                conn.out += codec.encode(reply, self.cfg.max_frame)
            except codec.FrameTooLarge as exc:
                conn.out += codec.encode(ControlReply(request=reply.request, ok=False, error=str(exc)))
            self.dirty.add(conn)

    # ---- connections ---------------------------------------------------------------------------------------

    def _accept(self) -> None:
        for _ in range(64):
            try:
                sock, addr = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                log.error("node %s: accept failed: %s", self.id, exc)
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.next_cid += 1
            conn = Conn(sock, self.next_cid, self.cfg.max_frame, addr=addr)
            self.sel.register(sock, selectors.EVENT_READ, conn)

    def _connect(self, dst: str) -> Conn | None:
        now = time.monotonic()
        if now < self.retry_at.get(dst, 0.0):
            return None
        address = self.peers.get(dst)
        if address is None:
            return None
        self.retry_at[dst] = now + RECONNECT_SECONDS
        sock = socket.socket(socket.AF_INET6 if ":" in address[0] else socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        code = sock.connect_ex(address)
        if code not in (0, errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK):
            sock.close()
            return None
        self.next_cid += 1
        conn = Conn(sock, self.next_cid, self.cfg.max_frame, kind="outbound", peer=dst, addr=address)
        conn.connecting = code != 0
        conn.out += codec.encode(Hello(node=self.id))
        self.outbound[dst] = conn
        conn.writing = True
        self.sel.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE, conn)
        return conn

    def _on_writable(self, conn: Conn) -> None:
        if conn.connecting:
            error = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if error:
                log.debug("node %s: connecting to %s failed: %s", self.id, conn.peer, os.strerror(error))
                self._close(conn)
                return
            conn.connecting = False
        self._flush(conn)

    def _flush_dirty(self) -> None:
        dirty, self.dirty = self.dirty, set()
        for conn in dirty:
            if not conn.closed and not conn.connecting:
                self._flush(conn)

    def _flush(self, conn: Conn) -> None:
        out = conn.out
        if out:
            try:
                sent = conn.sock.send(out)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                log.debug("node %s: %s: send failed: %s", self.id, conn.describe(), exc)
                self._close(conn)
                return
            del out[:sent]
        want = bool(out)
        if want != conn.writing:
            conn.writing = want
            mask = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            self.sel.modify(conn.sock, mask, conn)

    def _close(self, conn: Conn) -> None:
        if conn.closed:
            return
        conn.closed = True
        try:
            self.sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()
        if conn.kind == "outbound" and self.outbound.get(conn.peer) is conn:
            del self.outbound[conn.peer]
        self.dirty.discard(conn)

    def _on_readable(self, conn: Conn) -> None:
        try:
            count = conn.sock.recv_into(self._received)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            log.debug("node %s: %s: %s", self.id, conn.describe(), exc)
            self._close(conn)
            return
        if not count:
            self._close(conn)
            return
        if conn.kind == "outbound":
            log.error("node %s: peer %s sent data on a connection it should only read; closing", self.id, conn.peer)
            self._close(conn)
            return
        error = None
        try:
            messages = conn.decoder.feed(self._received[:count])  # feed copies what it keeps
        except CodecError as exc:
            messages, error = exc.decoded, exc
        try:
            for message in messages:
                self._classify(conn, message)
        except ProtocolError as exc:
            error = exc
        if error is not None:
            log.error("node %s: %s: %s; closing that connection", self.id, conn.describe(), error)
            self._close(conn)

    def _classify(self, conn: Conn, message) -> None:
        kind = type(message)
        if kind is ClientWrite:
            conn.kind = "client"
            request = message.request
            if request in self.requests:  # two clients chose the same id: keep them apart
                request = f"{conn.cid}.{request}"
                while request in self.requests:
                    request += "'"
                self.requests[request] = (conn, message.request)
                message = ClientWrite(request=request, payload=message.payload)
            else:
                self.requests[request] = (conn, request)
            self._writes.append(message)
        elif kind in _SENDER_FIELD:
            if conn.kind != "peer":
                raise ProtocolError(f"a {kind.__name__} arrived before any Hello naming the sending node")
            sender = getattr(message, _SENDER_FIELD[kind])
            if sender != conn.peer:
                raise ProtocolError(f"a {kind.__name__} from {sender!r} on the connection of peer {conn.peer}")
            if (conn.peer, self.id) in self.cuts:
                self.dropped += 1
                return
            if kind is ReplicationResponse and message.match_index > self.replica.log.log_end \
                    and message.generation == self.replica.generation and self.replica.role == "leader":
                raise ProtocolError(f"a ReplicationResponse claims match index {message.match_index}, beyond "
                                    f"this leader's log end {self.replica.log.log_end}")
            self._inputs.append(("peer", conn.peer, message))
        elif kind is ClientRead:
            conn.kind = "client"
            request = f"{conn.cid}.{message.request}"
            self.requests[request] = (conn, message.request)
            self._inputs.append(("read", None, ClientRead(request=request, index=message.index)))
        elif kind is Control:
            conn.kind = "client"
            self._control(conn, message)
        elif kind is Hello:
            if conn.kind != "unknown":
                raise ProtocolError("Hello must be the first frame on a connection")
            if message.node not in self.names or message.node == self.id:
                raise ProtocolError(f"Hello from {message.node!r}, which is not a peer of {self.id} "
                                    f"(cluster: {', '.join(self.names)})")
            conn.kind, conn.peer = "peer", message.node
        else:
            raise ProtocolError(f"a node does not accept {kind.__name__} messages")

    # ---- control requests (supervisor, tests, dashboard) ---------------------------------------------------

    def _control(self, conn: Conn, message: Control) -> None:
        op, args = message.op, message.args
        try:
            if op == "campaign":
                self._inputs.append(("campaign", None, None))
                result = {}
            elif op == "status":
                result = self._status(args.get("log", 20))
            elif op == "log":
                first = int(args.get("first", 1))
                last = int(args.get("last", self.replica.log.log_end))
                result = {"entries": [[e.index, e.generation, e.payload] for e in
                                      self.replica.log.slice(max(first, 1), last)]}
            elif op == "flush":
                self.wal.flush()
                self._checkpoint_hwm(force=True)
                self.trace.flush()
                result = {"log_end": self.wal.log_end}
            elif op == "snapshot":
                self._snapshot()
                result = {"log_end": self.replica.log.log_end, "hwm": self.replica.high_water_mark}
            elif op == "network":
                self._check_network(force=True)
                result = {"cuts": sorted(self.cuts)}
            elif op == "ticks":
                self.hold_ticks = bool(args.get("hold", False))
                self.next_tick = time.monotonic() + self.tick_seconds
                result = {"hold": self.hold_ticks}
            elif op == "stop":
                self.request_stop(str(args.get("reason", "stopped by a control request")))
                result = {}
            elif op == "ping":
                result = {"node": self.id, "boot": self.boot}
            else:
                raise ValueError(f"unknown control op {op!r} (known: campaign, status, log, flush, snapshot, "
                                 f"network, ticks, stop, ping)")
            reply = ControlReply(request=message.request, ok=True, result=result)
        except (ValueError, TypeError) as exc:
            reply = ControlReply(request=message.request, ok=False, error=str(exc))
        self._replies.append((conn, reply))

    def _status(self, window) -> dict:
        replica = self.replica
        info = replica.status()
        end = replica.log.log_end
        start = 1 if window == "all" else max(1, end - int(window) + 1)
        info.update({
            "state": "running", "pid": os.getpid(), "port": self.port, "boot": self.boot,
            "fsync": self.cfg.fsync, "truncation": self.cfg.truncation, "impl": self.cfg.impl,
            "log_start": start, "log": [[e.index, e.generation, e.payload] for e in replica.log.slice(start, end)],
            "durable_log_end": self.wal.log_end, "cuts": sorted([list(c) for c in self.cuts]),
            "hold_ticks": self.hold_ticks, "tick_ms": round(self.tick_seconds * 1000, 3), "dropped": self.dropped,
            "time": round(time.time() - self.start_time, 6),
        })
        return info

    def _snapshot(self) -> None:
        replica = self.replica
        self._emit(Event(type="log_snapshot", fields={
            "gen": replica.generation, "hwm": replica.high_water_mark, "log_end": replica.log.log_end,
            "entries": [e.as_trace() for e in replica.log]}))

    # ---- housekeeping --------------------------------------------------------------------------------------

    def _housekeeping(self, now: float) -> None:
        if now >= self.next_checkpoint:
            self.next_checkpoint = now + HWM_CHECKPOINT_SECONDS
            self._checkpoint_hwm()
        if self.next_writeback is not None and now >= self.next_writeback:
            # fsync `never`: the OS writing back on its own, so a kill loses only the recent tail.
            self.next_writeback = now + self.cfg.writeback_ms / 1000.0
            self.wal.flush()
        if now >= self.next_network_check:
            self.next_network_check = now + NETWORK_CHECK_SECONDS
            self._check_network()
        if self.cfg.parent_pid and now >= self.next_parent_check:
            self.next_parent_check = now + PARENT_CHECK_SECONDS
            if os.getppid() != self.cfg.parent_pid:
                self.request_stop("the supervisor is gone")

    def _checkpoint_hwm(self, force: bool = False) -> None:
        hwm = self.replica.high_water_mark
        if hwm != self.saved_hwm or force:
            self.state.save_high_water_mark(hwm)
            self.saved_hwm = hwm

    def _check_network(self, force: bool = False) -> None:
        """Reload the supervisor's network file (peer addresses, cut links, delays) when it changed."""
        path = self.cfg.network_file
        if not path:
            return
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self.network_stamp and not force:
            return
        try:
            with open(path, encoding="utf-8") as f:
                network = json.load(f)
        except (OSError, ValueError) as exc:
            log.warning("node %s: cannot read %s: %s", self.id, path, exc)
            return
        self.network_stamp = stamp
        self.apply_network(network)

    def apply_network(self, network: dict) -> None:
        peers = {name: (address[0], int(address[1])) for name, address in network.get("peers", {}).items()
                 if name != self.id and address}
        for name, address in peers.items():
            if self.peers.get(name) != address:
                self.peers[name] = address
                self.retry_at.pop(name, None)
                conn = self.outbound.get(name)
                if conn is not None:
                    self._close(conn)
        self.cuts = {(a, b) for a, b in network.get("cuts", [])}
        self.default_delay = float(network.get("delay_ms", 0)) / 1000.0
        self.link_delays = {}
        for key, ms in network.get("link_delay_ms", {}).items():
            src, dst = key.split(">")
            self.link_delays[(src, dst)] = float(ms) / 1000.0
        # Slow motion: stretch the tick so that an election round trip still fits in the election timeout.
        slowest = max([self.default_delay, *self.link_delays.values()])
        self.tick_seconds = max(self.base_tick, 4 * slowest / self.cfg.election_ticks)


def _next_boot(data_dir: str) -> int:
    """The incarnation number: 1 at the first start in this data directory, +1 at every restart."""
    path = os.path.join(data_dir, "boot")
    try:
        with open(path, encoding="ascii") as f:
            boot = int(f.read().strip()) + 1
    except (OSError, ValueError):
        boot = 1
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(str(boot))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return boot


# ---- command line ------------------------------------------------------------------------------------------


def _peer(text: str) -> tuple[str, tuple[str, int]]:
    try:
        name, address = text.split("=", 1)
        host, port = address.rsplit(":", 1)
        return name, (host.strip("[]"), int(port))
    except ValueError:
        raise argparse.ArgumentTypeError(f"write a peer as NAME=HOST:PORT, not {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lab.processes.node", description=__doc__.split("\n\n")[0])
    p.add_argument("--id", required=True, help="this node's name, e.g. A")
    p.add_argument("--nodes", required=True, help="every node of the cluster, comma separated, e.g. A,B,C")
    p.add_argument("--data-dir", required=True, help="where the write-ahead log and durable state live")
    p.add_argument("--run-dir", help="where events-<ID>.jsonl is appended (default: the data directory)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port to listen on; 0 (default) picks a free one")
    p.add_argument("--peer", type=_peer, action="append", default=[], metavar="NAME=HOST:PORT",
                   help="a peer's address (repeat for each); the network file overrides these")
    p.add_argument("--network", help="JSON file of peer addresses, cut links and delays, reloaded when it changes")
    p.add_argument("--impl", default="solutions", help="solutions (default), exercises, or a module name")
    p.add_argument("--fsync", choices=FSYNC_POLICIES, default="always")
    p.add_argument("--truncation", choices=TRUNCATION_STRATEGIES, default="generation")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start-time", type=float, help="the run's start (Unix time) that trace times count from")
    p.add_argument("--tick-ms", type=float, default=10.0)
    p.add_argument("--election-ticks", type=int, default=30)
    p.add_argument("--heartbeat-ticks", type=int, default=5)
    p.add_argument("--write-timeout-ticks", type=int, default=300)
    p.add_argument("--max-batch", type=int, default=1024, help="entries per replication request")
    p.add_argument("--max-frame", type=int, default=codec.MAX_FRAME, help="largest frame accepted, in bytes")
    p.add_argument("--segment-bytes", type=int, default=4 * 1024 * 1024)
    p.add_argument("--writeback-ms", type=float, default=500.0,
                   help="fsync never: write the log buffer to the file this often (0: only when it fills)")
    p.add_argument("--hold-ticks", action="store_true", help="start with the clock stopped (no elections) "
                   "until a control request releases it")
    p.add_argument("--parent-pid", type=int, help="stop when this process (the supervisor) is gone")
    p.add_argument("--ready-file", help="where to write {pid, port, boot} once listening "
                   "(default DATA_DIR/node.json)")
    p.add_argument("--log-level", default="INFO")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(message)s")
    nodes = [n.strip() for n in args.nodes.split(",") if n.strip()]
    cfg = NodeConfig(
        node_id=args.id, nodes=nodes, data_dir=args.data_dir, run_dir=args.run_dir, host=args.host,
        port=args.port, peers=dict(args.peer), network_file=args.network, impl=args.impl, fsync=args.fsync,
        truncation=args.truncation, seed=args.seed, start_time=args.start_time, tick_ms=args.tick_ms,
        election_ticks=args.election_ticks, heartbeat_ticks=args.heartbeat_ticks,
        write_timeout_ticks=args.write_timeout_ticks, max_batch=args.max_batch, max_frame=args.max_frame,
        segment_bytes=args.segment_bytes, writeback_ms=args.writeback_ms, hold_ticks=args.hold_ticks,
        parent_pid=args.parent_pid, ready_file=args.ready_file,
    )
    try:
        node = Node(cfg)
    except (ValueError, OSError, impl_module.ImplError) as exc:
        print(f"node {args.id}: cannot start: {exc}", file=sys.stderr)
        return 2
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda s, _f: node.request_stop(f"signal {signal.Signals(s).name}"))
    return node.run()


if __name__ == "__main__":
    sys.exit(main())
