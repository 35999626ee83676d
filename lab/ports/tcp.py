"""The TCP transport of a node process: one listening port for peers, clients and the supervisor, framed JSON
(lab.ports.codec), non-blocking sockets under one selector, and the network faults a supervisor sets (cut links,
delays, drops) applied to what this node sends.

Peers are authenticated: every accepted connection gets a Challenge (a fresh nonce); a peer, or the supervisor,
answers with a Hello carrying HMAC-SHA256(cluster secret, "nonce|sender|receiver"). Only then does the node take
replication and vote frames from it (a peer) or control requests that change the node (the supervisor).
Anyone may send client writes and reads, and read-only control requests; they can never be taken for peers.

`poll(timeout)` reads what arrived and returns it as inputs for the node; `send`, `answer` and `reply` queue
frames; `flush` writes what the sockets take. Any error on one connection closes that connection only.
"""

from __future__ import annotations

import errno
import hashlib
import heapq
import hmac
import logging
import random
import secrets
import selectors
import socket
import time
from dataclasses import dataclass, field, replace

from lab.core.messages import (
    Answer,
    Challenge,
    ClientRead,
    ClientWrite,
    Control,
    ControlReply,
    EpochAnswer,
    EpochQuery,
    Hello,
    PreVoteRequest,
    PreVoteResponse,
    ReadIndexRequest,
    ReadIndexResponse,
    ReplicationRequest,
    ReplicationResponse,
    VoteRequest,
    VoteResponse,
)
from lab.ports import codec
from lab.ports.codec import CodecError

log = logging.getLogger("lab.node")

RECV_BYTES = 1 << 20  # read into one buffer reused by every read: recv() of this size would map and
                      # unmap a fresh megabyte per call (about 15 us, a good part of a small request's hop)
PEER_BUFFER_LIMIT = 64 << 20  # a peer that stopped reading (SIGSTOP) gets no more than this queued
RECONNECT_SECONDS = 0.05

# Which field of a peer message names its sender: it must match the Hello of the connection it came on.
SENDER_FIELD = {
    ReplicationRequest: "leader",
    ReplicationResponse: "follower",
    VoteRequest: "candidate",
    VoteResponse: "voter",
    PreVoteRequest: "candidate",
    PreVoteResponse: "voter",
    EpochQuery: "follower",
    EpochAnswer: "leader",
    ReadIndexRequest: "leader",
    ReadIndexResponse: "follower",
}

# What poll() returns, one tuple per input: (PEER, sender, message), (READ, None, ClientRead),
# (CONTROL, connection, Control). Client writes, the many, gather in `writes` instead.
PEER, READ, CONTROL = "peer", "read", "control"


SUPERVISOR = "supervisor"  # the name the supervisor proves itself under, for control requests that change a node


class ProtocolError(Exception):
    """A well-formed message that has no business on this connection."""


def read_secret(path: str | None) -> bytes:
    """The cluster's secret; without one, a random secret that no peer knows (the node then has no peers)."""
    if not path:
        log.warning("no --secret-file: no peer can prove itself to this node")
        return secrets.token_bytes(32)
    with open(path, "rb") as f:
        secret = f.read().strip()
    if len(secret) < 16:
        raise ValueError(f"the secret in {path} is too short ({len(secret)} bytes)")
    return secret


def proof(secret: bytes, nonce: str, sender: str, receiver: str) -> str:
    """What a sender answers to a receiver's challenge: HMAC-SHA256 of "nonce|sender|receiver" under the secret."""
    return hmac.new(secret, f"{nonce}|{sender}|{receiver}".encode(), hashlib.sha256).hexdigest()


@dataclass
class Network:
    """What the supervisor says about the network: peer addresses, and faults on this node's links."""

    peers: dict[str, tuple[str, int]] = field(default_factory=dict)
    cuts: set[tuple[str, str]] = field(default_factory=set)
    delay_ms: float = 0.0
    link_delay_ms: dict[tuple[str, str], float] = field(default_factory=dict)
    drop: float = 0.0  # probability of dropping each message on every link
    link_drop: dict[tuple[str, str], float] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict, node: str) -> "Network":
        def links(mapping: dict) -> dict[tuple[str, str], float]:
            out = {}
            for key, value in mapping.items():
                src, dst = key.split(">")
                out[(src, dst)] = float(value)
            return out

        return cls(peers={name: (address[0], int(address[1])) for name, address in data.get("peers", {}).items()
                          if name != node and address},
                   cuts={(a, b) for a, b in data.get("cuts", [])},
                   delay_ms=float(data.get("delay_ms", 0)), link_delay_ms=links(data.get("link_delay_ms", {})),
                   drop=float(data.get("drop", 0)), link_drop=links(data.get("link_drop", {})))

    def slowest_ms(self) -> float:
        return max([self.delay_ms, *self.link_delay_ms.values()])


class Conn:
    """One TCP connection: inbound (a peer, a client or the supervisor) or outbound to a peer."""

    __slots__ = ("sock", "cid", "decoder", "out", "kind", "peer", "addr", "connecting", "closed", "writing", "nonce",
                 "ready")

    def __init__(self, sock: socket.socket, cid: int, max_frame: int, *, kind: str = "unknown",
                 peer: str | None = None, addr=None):
        self.sock = sock
        self.cid = cid
        self.decoder = codec.FrameDecoder(max_frame)
        self.out = bytearray()
        self.kind = kind  # unknown | peer (inbound, proven) | supervisor (proven) | client | outbound
        self.peer = peer
        self.addr = addr
        self.connecting = False
        self.closed = False
        self.writing = False
        self.nonce = ""  # the challenge this node sent on an accepted connection
        self.ready = kind != "outbound"  # an outbound connection sends nothing before it has proven itself

    def describe(self) -> str:
        who = f"peer {self.peer}" if self.peer else self.kind
        return f"connection {self.cid} ({who}, {self.addr})"


class TcpTransport:
    def __init__(self, node: str, names: list[str], *, host: str, port: int, secret: bytes,
                 max_frame: int = codec.MAX_FRAME, seed: int = 0):
        self.node = node
        self.secret = secret
        self.names = list(names)
        self.max_frame = max_frame
        self.sel = selectors.DefaultSelector()
        self.listener = socket.create_server((host, port), backlog=128)
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        self.port = self.listener.getsockname()[1]
        self.network = Network()
        self.rng = random.Random(f"{seed}-{node}-drops")
        self.outbound: dict[str, Conn] = {}
        self.retry_at: dict[str, float] = {}
        self.delayed: list = []  # heap of (due, seq, dst, frame)
        self.delayed_seq = 0
        self.dirty: set[Conn] = set()
        self.requests: dict[str, tuple[Conn, str]] = {}  # request id the replica sees -> (conn, the client's id)
        self.next_cid = 0
        self.dropped = 0
        self._received = memoryview(bytearray(RECV_BYTES))
        self._inputs: list = []
        self.writes: list[ClientWrite] = []  # client writes read and not yet taken by the node
        self._last_message, self._last_frame = None, None

    # ---- configuration ---------------------------------------------------------------------------------------

    def configure(self, network: Network) -> None:
        """New peer addresses and link faults; connections to peers that moved are dropped."""
        for name, address in network.peers.items():
            if self.network.peers.get(name) != address:
                self.retry_at.pop(name, None)
                conn = self.outbound.get(name)
                if conn is not None:
                    self.close(conn)
        self.network = network

    # ---- reading ---------------------------------------------------------------------------------------------

    def poll(self, timeout: float, *, read_clients: bool = True) -> list:
        """Wait up to `timeout` for input; return what arrived. With read_clients False (back-pressure), bytes
        from clients stay in their sockets."""
        if self.delayed:
            timeout = min(timeout, max(0.0, self.delayed[0][0] - time.monotonic()))
        for key, mask in self.sel.select(max(0.0, timeout)):
            conn = key.data
            if conn is None:
                self._accept()
                continue
            if mask & selectors.EVENT_WRITE and not conn.closed:
                self._on_writable(conn)
            if mask & selectors.EVENT_READ and not conn.closed and (read_clients or conn.kind != "client"):
                self._on_readable(conn)
        if self.delayed:
            self._release_delayed(time.monotonic())
        inputs, self._inputs = self._inputs, []
        return inputs

    def _on_readable(self, conn: Conn) -> None:
        try:
            count = conn.sock.recv_into(self._received)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            log.debug("node %s: %s: %s", self.node, conn.describe(), exc)
            self.close(conn)
            return
        if not count:
            self.close(conn)
            return
        error = None
        try:
            messages = conn.decoder.feed(self._received[:count])  # feed copies what it keeps
        except CodecError as exc:
            messages, error = exc.decoded, exc
        try:
            for message in messages:
                if conn.kind == "outbound":
                    self._answer_challenge(conn, message)
                else:
                    self._classify(conn, message)
        except ProtocolError as exc:
            error = exc
        except Exception as exc:  # whatever one connection sends, only that connection pays for it
            error = f"{type(exc).__name__}: {exc}"
        if error is not None:
            log.error("node %s: %s: %s; closing that connection", self.node, conn.describe(), error)
            self.close(conn)

    def _answer_challenge(self, conn: Conn, message) -> None:
        """On a connection this node opened to a peer: the peer's challenge, answered before any queued frame."""
        if type(message) is not Challenge or conn.ready:
            raise ProtocolError(f"peer {conn.peer} sent a {type(message).__name__} on a connection it should only "
                                f"read")
        hello = codec.encode(Hello(node=self.node, proof=proof(self.secret, message.nonce, self.node, conn.peer)))
        conn.out[:0] = hello
        conn.ready = True
        self.dirty.add(conn)

    def _classify(self, conn: Conn, message) -> None:
        kind = type(message)
        if kind is ClientWrite:
            if conn.kind == "unknown":
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
            self.writes.append(message)
        elif kind in SENDER_FIELD:
            if conn.kind != "peer":
                raise ProtocolError(f"a {kind.__name__} arrived before any Hello proving its sender is a peer")
            sender = getattr(message, SENDER_FIELD[kind])
            if sender != conn.peer:
                raise ProtocolError(f"a {kind.__name__} from {sender!r} on the connection of peer {conn.peer}")
            if (conn.peer, self.node) in self.network.cuts:
                self.dropped += 1
                return
            self._inputs.append((PEER, conn.peer, message))
        elif kind is ClientRead:
            if conn.kind == "unknown":
                conn.kind = "client"
            # The client's own id, as a write's (the trace then names the read as its client did), unless taken.
            request = message.request
            if request in self.requests:
                request = f"{conn.cid}.{request}"
                while request in self.requests:
                    request += "'"
                message = replace(message, request=request)
            self.requests[request] = (conn, message.request)
            self._inputs.append((READ, None, message))
        elif kind is Control:
            if conn.kind == "unknown":
                conn.kind = "client"
            self._inputs.append((CONTROL, conn, message))
        elif kind is Hello:
            if conn.kind != "unknown":
                raise ProtocolError("Hello must be the first frame on a connection")
            if (message.node not in self.names or message.node == self.node) and message.node != SUPERVISOR:
                raise ProtocolError(f"Hello from {message.node!r}, which is not a peer of {self.node} "
                                    f"(cluster: {', '.join(self.names)})")
            expected = proof(self.secret, conn.nonce, message.node, self.node)
            if not hmac.compare_digest(expected, message.proof):
                raise ProtocolError(f"Hello from {message.node!r} without proof of the cluster's secret")
            conn.kind, conn.peer = ("supervisor", None) if message.node == SUPERVISOR else ("peer", message.node)
        else:
            raise ProtocolError(f"a node does not accept {kind.__name__} messages")

    # ---- sending (the driver's transport port) ----------------------------------------------------------------

    def send(self, dst: str, message) -> None:
        network = self.network
        if (self.node, dst) in network.cuts:
            self.dropped += 1
            return
        drop = network.link_drop.get((self.node, dst), network.drop)
        if drop and self.rng.random() < drop:
            self.dropped += 1
            return
        if message is self._last_message:  # the same request to every follower that is level: encoded once
            frame = self._last_frame
        else:
            frame = self._encode(message)
            self._last_message, self._last_frame = message, frame
        if frame is None:
            return
        delay = network.link_delay_ms.get((self.node, dst), network.delay_ms)
        if delay > 0:
            self.delayed_seq += 1
            heapq.heappush(self.delayed, (time.monotonic() + delay / 1000.0, self.delayed_seq, dst, frame))
            return
        self._to_peer(dst, frame)

    def answer(self, answer: Answer) -> None:
        route = self.requests.pop(answer.request, None)
        if route is None:
            return
        conn, request = route
        if conn.closed:
            return
        if request != answer.request:
            answer = answer._replace(request=request)
        conn.out += codec.encode_answer(answer)
        self.dirty.add(conn)

    def reply(self, conn: Conn, reply: ControlReply) -> None:
        if conn.closed:
            return
        try:
            conn.out += codec.encode(reply, self.max_frame)
        except codec.FrameTooLarge as exc:
            conn.out += codec.encode(ControlReply(request=reply.request, ok=False, error=str(exc)))
        self.dirty.add(conn)

    def flush(self) -> None:
        dirty, self.dirty = self.dirty, set()
        for conn in dirty:
            if not conn.closed and not conn.connecting:
                self._flush(conn)

    def _encode(self, message) -> bytes | None:
        try:
            return codec.encode(message, self.max_frame)
        except codec.FrameTooLarge:
            if isinstance(message, ReplicationRequest) and len(message.entries) > 1:
                # Fewer entries: the follower answers for what it got and the leader sends the rest later.
                return self._encode(replace(message, entries=message.entries[: len(message.entries) // 2]))
            log.error("node %s: a %s does not fit in a frame; dropped", self.node, type(message).__name__)
            return None

    def _release_delayed(self, now: float) -> None:
        while self.delayed and self.delayed[0][0] <= now:
            _, _, dst, frame = heapq.heappop(self.delayed)
            if (self.node, dst) in self.network.cuts:
                self.dropped += 1  # cut while in flight
                continue
            self._to_peer(dst, frame)
        self.flush()

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

    # ---- connections -----------------------------------------------------------------------------------------

    def _accept(self) -> None:
        for _ in range(64):
            try:
                sock, addr = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                log.error("node %s: accept failed: %s", self.node, exc)
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.next_cid += 1
            conn = Conn(sock, self.next_cid, self.max_frame, addr=addr)
            conn.nonce = secrets.token_hex(16)
            conn.out += codec.encode(Challenge(nonce=conn.nonce, node=self.node))
            self.sel.register(sock, selectors.EVENT_READ, conn)
            self.dirty.add(conn)

    def _connect(self, dst: str) -> Conn | None:
        now = time.monotonic()
        if now < self.retry_at.get(dst, 0.0):
            return None
        address = self.network.peers.get(dst)
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
        conn = Conn(sock, self.next_cid, self.max_frame, kind="outbound", peer=dst, addr=address)
        conn.connecting = code != 0
        self.outbound[dst] = conn
        conn.writing = conn.connecting
        self.sel.register(sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.writing else 0), conn)
        return conn

    def _on_writable(self, conn: Conn) -> None:
        if conn.connecting:
            error = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if error:
                log.debug("node %s: connecting to %s failed: %s", self.node, conn.peer, errno.errorcode.get(error))
                self.close(conn)
                return
            conn.connecting = False
        self._flush(conn)

    def _flush(self, conn: Conn) -> None:
        out = conn.out
        if out and conn.ready:
            try:
                sent = conn.sock.send(out)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                log.debug("node %s: %s: send failed: %s", self.node, conn.describe(), exc)
                self.close(conn)
                return
            del out[:sent]
        want = bool(out) and conn.ready
        if want != conn.writing:
            conn.writing = want
            mask = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            self.sel.modify(conn.sock, mask, conn)

    def close(self, conn: Conn) -> None:
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

    def shutdown(self) -> None:
        self.flush()
        for conn in list(self.outbound.values()):
            self.close(conn)
        self.sel.close()
        self.listener.close()

