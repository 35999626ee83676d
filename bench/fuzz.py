"""The frame fuzzer: generated and mutated frames, and named hostile cases, thrown at a live leader and a live
follower over many connections; afterwards every node process must still be alive and the cluster must commit and
serve a write. Prints the count of deaths (target 0) and, for each, what was sent and the node's last log line.

Frames are built from the wire format (docs/control-api.md, lab/ports/codec.py): every message type with values
of the right type, of the wrong type and at the edges (lone surrogates, non-finite numbers, huge integers), peer
messages after a Hello naming a peer, and mutations of valid frames (bit flips, truncation, length lies, type
swaps, deep nesting, splices). The generated frames go one per connection (a node closes a connection at its
first bad frame, so a frame after it would never be read); each connection ends with a read (a write when one may
be pending) whose answer says the node got through it. A node that dies is counted and restarted, and the run
goes on.

Run: .venv/bin/python bench/fuzz.py [--frames 100000] [--seed 1] [--only named,client,peer,mutated]
tests/test_fuzz.py throws the same families, drawn by hypothesis, in a bounded test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:  # run as a script from a checkout; appended, so that `hwm-lab chaos` shadows nothing
    sys.path.append(_ROOT)

from lab.ports import codec  # noqa: E402

LENGTH = struct.Struct(">I")
MAX_FRAME = codec.MAX_FRAME
NAMES = ("A", "B", "C")  # the cluster the fuzzer starts
DEEP = 100_000

# ---- the wire format, as a fuzzer sees it -----------------------------------------------------------------------

# Every message type a node may be sent, with the kind of each field (docs/control-api.md, lab/core/messages.py).
PEER_MESSAGES = {
    "ReplicationRequest": {"generation": "int", "leader": "name", "prev_index": "int", "prev_generation": "int",
                           "entries": "entries", "high_water_mark": "int"},
    "ReplicationResponse": {"generation": "int", "follower": "name", "success": "bool", "match_index": "int",
                            "log_end": "int", "conflict_index": "int", "prev_index": "int", "counts": "bool"},
    "VoteRequest": {"generation": "int", "candidate": "name", "last_index": "int", "last_generation": "int",
                    "force": "bool"},
    "VoteResponse": {"generation": "int", "voter": "name", "granted": "bool"},
    "PreVoteRequest": {"generation": "int", "candidate": "name", "last_index": "int", "last_generation": "int"},
    "PreVoteResponse": {"generation": "int", "voter": "name", "granted": "bool"},
    "EpochQuery": {"generation": "int", "follower": "name", "of_generation": "int"},
    "EpochAnswer": {"generation": "int", "leader": "name", "of_generation": "int", "end_index": "int"},
}
CLIENT_MESSAGES = {
    "ClientWrite": {"request": "str", "payload": "str"},
    "ClientRead": {"request": "str", "index": "int"},
    "Control": {"request": "str", "op": "op"},
    # answers and challenges go from nodes to clients, never to a node: a node must refuse them
    "Answer": {"request": "str", "ok": "bool", "index": "int", "generation": "int", "payload": "str",
               "high_water_mark": "int", "leader": "name", "error": "str", "refusal": "str", "holders": "names"},
    "ControlReply": {"request": "str", "ok": "bool", "result": "object", "error": "str"},
    "Challenge": {"nonce": "str", "node": "name"},
}
# A Hello answers the node's Challenge with HMAC(cluster secret, nonce|sender|receiver): the fuzzer cannot know it.
MESSAGES = {**PEER_MESSAGES, **CLIENT_MESSAGES, "Hello": {"node": "name", "proof": "proof"}}
CONTROL_OPS = ("status", "campaign", "flush", "snapshot", "log", "network", "ticks", "stop", "ping")
CONTROL_ARGS = {"log": "count", "first": "int", "last": "int", "hold": "bool", "reason": "str"}

INF, NAN = float("inf"), float("nan")
SURROGATES = ("\udfff", "\ud800", "a\udc00b", "\ud83d")  # lone halves: valid JSON escapes, not valid UTF-8
# Values by kind: the right type, at the edges and beyond.
GOOD = {
    "int": [0, 1, 2, 3, 5, 100, 2**31 - 1, 2**63 - 1],
    "str": ["", "k1", "w1", "x" * 64, "\u00e9\u4e2d\U0001f600", "a\x00b", "\"\\"],
    "name": list(NAMES) + ["Z", ""],
    "bool": [True, False],
    "count": [0, 1, 20, "all", 10**6],
    "op": list(CONTROL_OPS) + ["gossip", ""],
    "names": [[], ["A"], ["A", "B", "C"]],
    "object": [{}, {"a": 1}],
    "proof": ["", "0" * 64, "ab" * 32, "not hex"],
}
BAD = [-1, -(2**63), 2**63, 2**64, 10**30, -10**30, 0.5, 1e308, -1e308, INF, -INF, NAN, "1", "", None, True, False,
       [], [1], {}, {"a": None}, *SURROGATES]


def body(obj, ascii: bool = True) -> bytes:
    """JSON bytes, the way an attacker may write them: non-finite numbers as Infinity/NaN, lone surrogates escaped
    (ascii) or raw (not valid UTF-8)."""
    return json.dumps(obj, ensure_ascii=ascii, allow_nan=True).encode("utf-8", "surrogatepass")


def frame(data: bytes, length: int | None = None) -> bytes:
    return LENGTH.pack(len(data) if length is None else length) + data


def hello_frame(node: str) -> bytes:
    """A Hello naming `node`, with a proof made up (without the cluster's secret, as an attacker has to)."""
    return frame(body({"type": "Hello", "node": node, "proof": "5eed" * 16}))


def marker_read(request: str) -> bytes:
    """A read: any client may send one and it is answered at once (a control op might be locked some day)."""
    return frame(body({"type": "ClientRead", "request": request, "index": 1}))


def sentinel(request: str) -> bytes:
    """A write whose answer comes after every answer due before it on its connection: a leader acknowledges in
    index order, a follower refuses at once."""
    return frame(body({"type": "ClientWrite", "request": request, "payload": "fuzz-sentinel"}))


def framed_to_the_end(data: bytes) -> bool:
    """Whether a node reading `data` finds whole frames, each within the maximum size, up to its last byte (so it
    reads the last frame); otherwise it waits for bytes that never come, or closes at an oversized length."""
    position = 0
    while position + 4 <= len(data):
        (length,) = LENGTH.unpack_from(data, position)
        if length > MAX_FRAME:
            return False
        position += 4 + length
    return position == len(data)


def nested(depth: int, kind: str = "array") -> str:
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


# Mutations of a valid frame: each takes its parameters explicitly, so a seeded random or hypothesis draws them.

def flip_bits(data: bytes, positions) -> bytes:
    """Flip the bits at these positions (bit i of byte i // 8); the length prefix too, if hit."""
    out = bytearray(data)
    for position in positions:
        out[(position // 8) % len(out)] ^= 1 << (position % 8)
    return bytes(out)


def truncate(data: bytes, keep: int) -> bytes:
    return data[: max(0, min(keep, len(data) - 1))]


def lie_length(data: bytes, length: int) -> bytes:
    return LENGTH.pack(length & 0xFFFFFFFF) + data[4:]


def swap_field(obj: dict, name: str, value) -> dict:
    return {**obj, name: value}


def deepen(obj: dict, name: str, depth: int, kind: str = "array") -> bytes:
    """obj with the value of field `name` replaced by a structure `depth` levels deep, as frame bytes."""
    marker = "\u0001deep\u0001"
    text = json.dumps({**obj, name: marker}, allow_nan=True).replace(json.dumps(marker), nested(depth, kind))
    return frame(text.encode("utf-8", "surrogatepass"))


def splice(a: bytes, b: bytes, cut_a: int, cut_b: int) -> bytes:
    return a[:cut_a % (len(a) + 1)] + b[cut_b % (len(b) + 1):]


def valid_message(kind: str, rng: random.Random, target: str = "A") -> dict:
    """A well-typed message of `kind` (values the codec accepts)."""
    obj = {"type": kind}
    for name, field_kind in MESSAGES[kind].items():
        if field_kind == "entries":
            prev = rng.choice([0, 1, 5])
            obj["prev_index"] = prev
            obj[name] = [[prev + i + 1, rng.choice([1, 2]), f"e{i}"] for i in range(rng.randrange(4))]
        elif name == "prev_index" and "prev_index" in obj:
            continue
        elif field_kind == "name":
            obj[name] = rng.choice([n for n in NAMES if n != target])
        elif field_kind == "int":
            obj[name] = rng.choice([0, 1, 2, 3])
        elif field_kind == "count":
            obj[name] = rng.choice([0, 5, "all"])
        else:
            obj[name] = rng.choice(GOOD[field_kind])
    if kind == "Control":
        obj["op"] = rng.choice(("status", "ping", "log", "network", "snapshot", "flush"))
    return obj


# ---- the named cases of the issue ---------------------------------------------------------------------------------


PEER = "peer"  # a Case's hello: a Hello naming any node but the target


@dataclass
class Case:
    name: str
    data: bytes  # what one connection sends after the Hello, if any
    hello: str | None = None  # the node a Hello names first (PEER: one that is not the target)


def named_cases() -> list[Case]:
    def msg(obj, ascii=True):
        return frame(body(obj, ascii))

    deep_array, deep_object = nested(DEEP).encode(), nested(DEEP, "object").encode()
    cases = [
        Case("a JSON array nested 100,000 deep", frame(deep_array)),
        Case("a JSON object nested 100,000 deep", frame(deep_object)),
        Case("a ClientWrite whose payload is an array nested 100,000 deep",
             deepen({"type": "ClientWrite", "request": "w1", "payload": ""}, "payload", DEEP)),
        Case("a Control argument nested 100,000 deep",
             deepen({"type": "Control", "request": "k1", "op": "status", "log": 0}, "log", DEEP, "object")),
    ]
    for value, text in ((INF, "Infinity"), (-INF, "-Infinity"), (NAN, "NaN")):
        cases += [
            Case(f"Control status with log={text}", msg({"type": "Control", "request": "k1", "op": "status",
                                                         "log": value})),
            Case(f"Control log with first={text}", msg({"type": "Control", "request": "k1", "op": "log",
                                                        "first": value})),
            Case(f"Control log with last={text}", msg({"type": "Control", "request": "k1", "op": "log",
                                                       "last": value})),
            Case(f"Control ticks with hold={text}", msg({"type": "Control", "request": "k1", "op": "ticks",
                                                         "hold": value})),
            Case(f"ClientRead with index={text}", msg({"type": "ClientRead", "request": "r1", "index": value})),
        ]
    for surrogate in ("\udfff", "\ud800"):
        shown = f"\\u{ord(surrogate):04x}"
        for ascii in (True, False):
            how = "escaped" if ascii else "raw bytes"
            cases += [
                Case(f"ClientWrite with request id {shown} ({how})",
                     msg({"type": "ClientWrite", "request": surrogate, "payload": "p"}, ascii)),
                Case(f"ClientRead with request id {shown} ({how})",
                     msg({"type": "ClientRead", "request": surrogate, "index": 1}, ascii)),
                Case(f"Control with request id {shown} ({how})",
                     msg({"type": "Control", "request": surrogate, "op": "ping"}, ascii)),
            ]
        cases += [
            Case(f"Control with op {shown}", msg({"type": "Control", "request": "k1", "op": surrogate})),
            Case(f"ClientWrite with payload {shown}", msg({"type": "ClientWrite", "request": "w1",
                                                          "payload": surrogate})),
            Case(f"Hello naming {shown}", msg({"type": "Hello", "node": surrogate, "proof": ""})),
        ]
    write = msg({"type": "ClientWrite", "request": "w1", "payload": "p"})
    cases += [
        Case("a length of the maximum frame + 1", LENGTH.pack(MAX_FRAME + 1)),
        Case("a length of 2^32 - 1", LENGTH.pack(0xFFFFFFFF) + b"{}"),
        Case("a length of 0", LENGTH.pack(0) + write),
        Case("a length of the maximum frame, then 10 bytes", LENGTH.pack(MAX_FRAME) + b'{"type":"C'),
        Case("a length longer than the frame", lie_length(write, len(write) + 100)),
        Case("a length shorter than the frame", lie_length(write, len(write) - 10)),
        Case("a frame cut in its length prefix", write[:2]),
        Case("a frame cut in its body", write[: len(write) // 2]),
        Case("4 KiB of random bytes", bytes(random.Random(4).randrange(256) for _ in range(4096))),
        Case("an HTTP request", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        Case("a TLS client hello", bytes.fromhex("16030100a5010000a10303") + bytes(32)),
        Case("invalid UTF-8", frame(b'{"type":"ClientWrite","request":"\xff\xfe","payload":"p"}')),
        Case("a UTF-8 byte order mark", frame(b'\xef\xbb\xbf{"type":"Control","request":"k1","op":"ping"}')),
        Case("duplicate keys", frame(b'{"type":"ClientRead","type":"ClientWrite","request":"w1","payload":"p",'
                                     b'"index":1}')),
        Case("ClientRead with index \"1\"", msg({"type": "ClientRead", "request": "r1", "index": "1"})),
        Case("ClientRead with index 2^64", msg({"type": "ClientRead", "request": "r1", "index": 2**64})),
        Case("ClientRead with index 10^30", msg({"type": "ClientRead", "request": "r1", "index": 10**30})),
        Case("ClientWrite with payload 5", msg({"type": "ClientWrite", "request": "w1", "payload": 5})),
        Case("ClientWrite with request null", msg({"type": "ClientWrite", "request": None, "payload": "p"})),
        Case("Control with op 5", msg({"type": "Control", "request": "k1", "op": 5})),
        Case("Control log with first 10^30", msg({"type": "Control", "request": "k1", "op": "log",
                                                  "first": 10**30, "last": 10**30})),
        Case("Control log with first -10^30", msg({"type": "Control", "request": "k1", "op": "log",
                                                   "first": -10**30})),
        Case("Control status with log -10^30", msg({"type": "Control", "request": "k1", "op": "status",
                                                    "log": -10**30})),
        Case("Control status with log 1e308", msg({"type": "Control", "request": "k1", "op": "status",
                                                   "log": 1e308})),
        Case("Control status with log [1]", msg({"type": "Control", "request": "k1", "op": "status",
                                                 "log": [1]})),
        Case("Control named type twice", frame(b'{"type":"Control","request":"k1","op":"ping","type":"Control"}')),
        Case("an Answer sent to a node", msg({"type": "Answer", "request": "x", "ok": True, "index": 1,
                                              "generation": 1, "payload": "p", "high_water_mark": 1,
                                              "leader": None, "error": ""})),
        Case("a peer message without Hello", msg({"type": "VoteResponse", "generation": 1, "voter": "B",
                                                  "granted": True})),
        Case("Hello twice", msg({"type": "Hello", "node": "B", "proof": ""}), hello=PEER),
        Case("Hello from a stranger", msg({"type": "Hello", "node": "Z", "proof": ""})),
        Case("Hello without a proof", msg({"type": "Hello", "node": "B"})),
        Case("Hello as the supervisor, then Control op=stop",
             msg({"type": "Control", "request": "k1", "op": "stop"}), hello="supervisor"),
        Case("Hello as a peer, then a PreVoteRequest of generation 2^63 - 1", msg({
            "type": "PreVoteRequest", "generation": 2**63 - 1, "candidate": "B", "last_index": 2**63 - 1,
            "last_generation": 2**63 - 1}), hello=PEER),
        Case("a Challenge sent to a node", msg({"type": "Challenge", "nonce": "00", "node": "B"})),
        Case("ReplicationRequest with generation \"x\"", msg({
            "type": "ReplicationRequest", "generation": "x", "leader": "B", "prev_index": 0, "prev_generation": 0,
            "entries": [], "high_water_mark": 0}), hello=PEER),
        Case("ReplicationRequest with an entry nested 100,000 deep", deepen({
            "type": "ReplicationRequest", "generation": 1, "leader": "B", "prev_index": 0, "prev_generation": 0,
            "entries": [], "high_water_mark": 0}, "entries", DEEP), hello=PEER),
        Case("ReplicationRequest with a surrogate payload", msg({
            "type": "ReplicationRequest", "generation": 0, "leader": "B", "prev_index": 0, "prev_generation": 0,
            "entries": [[1, 0, "\udfff"]], "high_water_mark": 0}), hello=PEER),
        Case("Control op=stop from an anonymous connection", msg({"type": "Control", "request": "k1",
                                                                  "op": "stop"})),
        Case("Control op=ticks hold=true from an anonymous connection", msg({"type": "Control", "request": "k1",
                                                                             "op": "ticks", "hold": True})),
        Case("Control op=campaign from an anonymous connection", msg({"type": "Control", "request": "k1",
                                                                      "op": "campaign"})),
    ]
    return cases


# ---- generated and mutated frames, from a seeded random -------------------------------------------------------


def random_value(kind: str, rng: random.Random):
    roll = rng.random()
    if roll < 0.55:
        return rng.choice(GOOD.get(kind, GOOD["int"]))
    if roll < 0.9:
        return rng.choice(BAD)
    if roll < 0.95:
        return "x" * rng.choice([1000, 65536])
    return rng.choice([rng.randrange(-2**70, 2**70), rng.uniform(-1e9, 1e9), [rng.random()] * 3])


def random_message(kind: str, rng: random.Random) -> dict:
    obj = {"type": kind}
    for name, field_kind in MESSAGES[kind].items():
        roll = rng.random()
        if roll < 0.05:
            continue  # a field left out
        if field_kind == "entries":
            obj[name] = rng.choice([
                [], [[1, 1, "e"]], [[rng.randrange(3), random_value("int", rng), random_value("str", rng)]],
                [[1, 1]], [1, 2, 3], "entries", [[i, 1, "e"] for i in range(1, rng.choice([2, 50, 1000]))],
            ])
        else:
            obj[name] = random_value(field_kind, rng)
    if kind == "Control":
        for arg, arg_kind in CONTROL_ARGS.items():
            if rng.random() < 0.3:
                obj[arg] = random_value(arg_kind, rng)
    if rng.random() < 0.05:
        obj[rng.choice(["extra", "type2", "\udfff"])] = random_value("str", rng)
    return obj


def mutate(data: bytes, obj: dict, rng: random.Random) -> tuple[str, bytes]:
    """One mutation of a valid frame (`data` encodes `obj`): its name and the bytes."""
    how = rng.choice(["bit flips", "truncation", "length lie", "type swap", "message type swap", "deep nesting",
                      "splice", "garbage body"])
    if how == "bit flips":
        return how, flip_bits(data, [rng.randrange(len(data) * 8) for _ in range(rng.randint(1, 8))])
    if how == "truncation":
        return how, truncate(data, rng.randrange(len(data)))
    if how == "length lie":
        return how, lie_length(data, rng.choice([0, 1, len(data) - 5, len(data) + rng.randint(1, 64), MAX_FRAME,
                                                 MAX_FRAME + 1, 0xFFFFFFFF]))
    if how == "type swap":
        name = rng.choice([k for k in obj if k != "type"] or ["type"])
        return how, frame(body(swap_field(obj, name, rng.choice(BAD))))
    if how == "message type swap":
        return how, frame(body(swap_field(obj, "type", rng.choice(list(MESSAGES) + ["Gossip", "", None]))))
    if how == "deep nesting":
        name = rng.choice([k for k in obj if k != "type"] or ["type"])
        return how, deepen(obj, name, rng.choice([50, 1000, 5000, DEEP]), rng.choice(["array", "object"]))
    if how == "splice":
        other = frame(body(random_message(rng.choice(list(MESSAGES)), rng)))
        return how, splice(data, other, rng.randrange(len(data) + 1), rng.randrange(len(other) + 1))
    return how, frame(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))))


def random_frame(family: str, rng: random.Random, target: str) -> tuple[str, bytes]:
    """(label, frame bytes) of one family: `client` (client messages, answers, challenges and forged Hellos),
    `peer` (peer messages sent anonymously, as an attacker must: a Hello without the secret ends the connection
    before them) or `mutated` (a valid frame of any type, mutated once)."""
    if family == "mutated":
        obj = valid_message(rng.choice(list(MESSAGES)), rng, target)
        how, data = mutate(frame(body(obj)), obj, rng)
        return f"{how} of a {obj['type']}", data
    kinds = list(PEER_MESSAGES) if family == "peer" else list(CLIENT_MESSAGES) + ["Hello"]
    obj = random_message(rng.choice(kinds), rng)
    return f"{obj['type']} {short(obj)}", frame(body(obj, ascii=rng.random() < 0.9))


def short(value, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---- throwing frames at a live cluster ------------------------------------------------------------------------


@dataclass
class Death:
    node: str
    role: str  # the role the node had when the frames were thrown at it, or "bystander"
    code: int | None
    sent: list[str]  # what the last connections sent, newest last
    last_log_line: str
    family: str = ""  # of the frames thrown just before

    @property
    def cause(self) -> str:
        """Why, in a form that groups alike deaths: the last log line without its time stamp and positions."""
        if self.code == 0:
            return "exit 0, an orderly stop (a Control op=stop)"
        line = re.sub(r"^\d{4}-\d\d-\d\d [\d:,]+ ", "", self.last_log_line)
        return f"exit {self.code}, " + re.sub(r"in position \d+", "in position N", line)[:200]

    def __str__(self) -> str:
        return (f"node {self.node} ({self.role}) died, exit {self.code}: {self.last_log_line[:200]}; the last "
                f"connections before: {' | '.join(s[:300] for s in self.sent)}")


@dataclass
class Thrower:
    """Throws connections' worth of frames at the nodes of an in-process Supervisor; a node that dies is noted
    and restarted, so one run finds every case that kills."""

    supervisor: object
    timeout: float = 10.0
    frames: Counter = field(default_factory=Counter)  # role -> frames thrown
    connections: int = 0
    deaths: list[Death] = field(default_factory=list)
    unresponsive: list[str] = field(default_factory=list)
    leaderless: list[str] = field(default_factory=list)  # times the cluster had no leader when one was sought
    recent: deque = field(default_factory=lambda: deque(maxlen=3))
    roles: dict = field(default_factory=dict)
    _requests: int = 0
    _dead: set = field(default_factory=set)  # pids of the deaths already counted
    lock: threading.RLock = field(default_factory=threading.RLock)  # one thrower may serve several threads

    def targets(self) -> dict[str, str]:
        """role -> node: the leader and one follower. With no leader in 10 s (1 s once that happened), that is
        noted and two nodes stand in, so the run goes on and says so at the end."""
        leader = self.supervisor.wait_for_leader(1.0 if self.leaderless else 10.0)
        if leader is None:
            last = self.recent[-1][:300] if self.recent else "nothing sent yet"
            self.leaderless.append(f"no leader after {self.connections} connections (the last: {last})")
            leader = self.supervisor.names[0]
        follower = next(n for n in self.supervisor.names if n != leader)
        self.roles = {"leader": leader, "follower": follower}
        return self.roles

    def throw(self, role: str, frames: list[tuple[str, bytes]], hello: str | None = None, family: str = "") -> str:
        """One connection to the node in `role`: a Hello if given, the frames, then a read (or a write, below).
        Returns how it ended: "answered" (the last request was answered), "closed" (the node closed it), or
        "silent"."""
        node = self.roles.get(role) or self.targets()[role]
        proc = self.supervisor.nodes[node]
        if hello == PEER:
            hello = next(n for n in self.supervisor.names if n != node)
        data = b"".join(d for _, d in frames)
        if hello is not None:
            data = hello_frame(hello) + data
        labels = [label for label, _ in frames]
        with self.lock:
            self._requests += 1
            request = f"fz-{self._requests}"
            self.recent.append(f"to {node} ({role}){f' as peer {hello}' if hello else ''}: {'; '.join(labels)}")
            self.frames[role] += len(frames)
            self.connections += 1
        # A write's answer comes later than a read's: end with a write when one may be pending, so that its answer
        # (which a lone surrogate in its request id could not be encoded into) is written before we leave.
        data += sentinel(request) if b"ClientWrite" in data else marker_read(request)
        ended = _exchange(proc.port, data, f'"{request}"'.encode(), self.timeout, framed_to_the_end(data))
        self._check(family)
        if ended == "silent":
            self.unresponsive.append(f"{node} ({role}) neither answered nor closed within {self.timeout:g} s after: "
                                     f"{self.recent[-1]}")
        return ended

    def throw_case(self, case: Case, role: str) -> str:
        ended = self.throw(role, [(case.name, case.data)], case.hello)
        self.probe()
        return ended

    def probe(self) -> None:
        """A read on a fresh connection to every node: a node that does not answer is given 5 s to exit."""
        for name in self.supervisor.names:
            proc = self.supervisor.nodes[name]
            if proc.proc is None or proc.proc.poll() is not None:
                continue  # dead: _check below counts it and starts it again
            with self.lock:
                self._requests += 1
                request = f"fz-{self._requests}"
            if _exchange(proc.port, marker_read(request), f'"{request}"'.encode(), 5.0) != "answered":
                deadline = time.monotonic() + 5.0
                while proc.proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.02)
        self._check()

    def _check(self, family: str = "") -> None:
        """Note every node that exited, with its last log line, and start it again."""
        with self.lock:
            self._check_locked(family)

    def _check_locked(self, family: str) -> None:
        for name in self.supervisor.names:
            proc = self.supervisor.nodes[name]
            # Not proc.state: the supervisor marks a dead node "exited" as soon as anything asks it for the state
            if proc.proc is None or proc.pid in self._dead:
                continue
            code = proc.proc.poll()
            if code is None:
                continue
            self._dead.add(proc.pid)
            who = next((r for r, n in self.roles.items() if n == name), "bystander")
            line = last_log_line(proc.data_dir / "node.log")
            if code == 0:  # an orderly stop logs nothing: its reason is in the trace
                line = stop_reason(Path(self.supervisor.run_dir) / f"events-{name}.jsonl") or line
            self.deaths.append(Death(node=name, role=who, code=code, sent=list(self.recent), last_log_line=line,
                                     family=family))
            self.supervisor.restart(name)  # raises if it cannot start again: nothing more to learn then
            self.roles = {}

    def serving(self, payload: str = "after-the-fuzz") -> str | None:
        """None if the cluster commits a write and serves it from the leader and a follower; else what failed."""
        leader = self.supervisor.wait_for_leader(20.0)
        if leader is None:
            return (f"no leader within 20 s at the end; the cluster had none since: "
                    f"{self.leaderless[0] if self.leaderless else 'the end'}")
        roles = self.targets()
        answer = self.supervisor.write(payload, timeout=15.0)
        if not answer.get("ok"):
            return f"the write after the fuzz was not committed: {answer}"
        deadline = time.monotonic() + 15.0
        problems = []
        for node in (answer["node"], roles["follower"]):
            while True:
                read = self.supervisor.read(answer["index"], node)
                if read.get("ok") or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            if not read.get("ok") or read.get("payload") != payload:
                problems.append(f"{node} did not serve index {answer['index']}: {read}")
        return "; ".join(problems) or None


def _exchange(port: int, data: bytes, marker: bytes, timeout: float, framed: bool = True) -> str:
    """Send `data`, read until `marker` shows up (answered), the node closes (closed), or the timeout (silent).
    When the node cannot read `data` to its end (not `framed`), close our side at once: it then closes too."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    except OSError:
        return "closed"
    received = bytearray()
    try:
        try:
            sock.sendall(data)
            if not framed:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the node closed it while we were sending: what it read is still decided on
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = sock.recv(1 << 16)
            except socket.timeout:
                break
            except OSError:
                return "closed"
            if not chunk:
                return "answered" if marker in received else "closed"
            received += chunk
            if marker in received:
                return "answered"
        return "silent"
    finally:
        sock.close()


def last_log_line(path: Path) -> str:
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return lines[-1] if lines else "(empty log)"


def stop_reason(trace: Path) -> str | None:
    try:
        lines = trace.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines[-50:]):
        if '"type":"node_stopped"' in line:
            try:
                return f"node_stopped: {json.loads(line).get('reason')}"
            except ValueError:
                return None
    return None


# ---- the benchmark --------------------------------------------------------------------------------------------

FAMILIES = ("named", "client", "peer", "mutated")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=100_000,
                        help="generated and mutated frames, one per connection (default 100,000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default=",".join(FAMILIES),
                        help=f"families to throw, comma separated (default all: {','.join(FAMILIES)})")
    parser.add_argument("--max-deaths", type=int, default=50, help="stop after this many deaths (default 50)")
    parser.add_argument("--dir", help="run directory, kept (default: a temporary one, removed)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args(argv)
    families = [f for f in args.only.split(",") if f]
    unknown = set(families) - set(FAMILIES)
    if unknown:
        parser.error(f"unknown families {sorted(unknown)}; known: {', '.join(FAMILIES)}")

    from lab.processes.supervisor import Supervisor

    run_dir = Path(args.dir or tempfile.mkdtemp(prefix="hwm-fuzz-"))
    supervisor = Supervisor(run_dir, nodes=len(NAMES), fresh=True, cluster_file=False, seed=args.seed)
    started = time.monotonic()
    try:
        supervisor.start()
        thrower = Thrower(supervisor)
        thrower.targets()
        print(f"fuzz: {len(NAMES)} nodes on loopback, seed {args.seed}, families {', '.join(families)}; "
              f"{os.cpu_count()} cores, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        if "named" in families:
            cases = named_cases()
            for case in cases:
                for role in ("leader", "follower"):
                    before = len(thrower.deaths)
                    thrower.throw_case(case, role)
                    for death in thrower.deaths[before:]:
                        print(f"  DEATH  {case.name}: {death.node} ({role}) exit {death.code}: "
                              f"{death.last_log_line[:200]}")
            print(f"named    {len(cases)} cases x leader and follower: {len(thrower.deaths)} deaths")
        generated = [f for f in families if f != "named"]
        deaths_before = len(thrower.deaths)
        thrower.targets()
        if generated:
            # One frame per connection: a node closes a connection at its first bad frame, so a frame sent after
            # one would never be read. Two senders, one at the leader and one at a follower, run side by side.
            thrown = Counter()
            share = args.frames // 2

            def send(role: str) -> None:
                rng = random.Random(f"{args.seed}-{role}")
                while thrown[role] < share and len(thrower.deaths) < args.max_deaths:
                    if thrown[role] % 500 == 0:
                        thrower.targets()  # leadership moves: throw at the leader of now
                    family = generated[thrown[role] % len(generated)]
                    target = thrower.roles.get(role) or thrower.targets()[role]
                    thrower.throw(role, [random_frame(family, rng, target)], family=family)
                    thrown[role] += 1
                    if role == "leader" and thrown[role] % 10_000 == 0:
                        print(f"  {sum(thrown.values()):,} frames, {len(thrower.deaths)} deaths, "
                              f"{time.monotonic() - started:.0f} s", flush=True)

            senders = [threading.Thread(target=send, args=(role,), daemon=True) for role in ("leader", "follower")]
            for sender in senders:
                sender.start()
            for sender in senders:
                sender.join()
            for death in thrower.deaths[deaths_before:]:
                print(f"  DEATH  {death.family}: {death.node} ({death.role}) {death.cause}\n"
                      f"         after {death.sent[-1][:300]}")
            causes = Counter((d.family, d.cause) for d in thrower.deaths[deaths_before:])
            print(f"frames   {sum(thrown.values()):,} generated and mutated frames, one per connection "
                  f"({dict(thrown)} by role; families {', '.join(generated)}): "
                  f"{len(thrower.deaths) - deaths_before} deaths")
            for (family, cause), n in causes.most_common():
                print(f"  {n} x {family}: {cause}")
        thrower.probe()
        problem = thrower.serving()
        thrower.probe()  # a node that dies slowly (its orderly stop writes a snapshot) is counted too
        deaths = len(thrower.deaths)
        print(f"after    {'the cluster commits and serves a write' if problem is None else problem}")
        if thrower.unresponsive:
            print(f"silent   {len(thrower.unresponsive)} connections got neither an answer nor a close in time; "
                  f"first: {thrower.unresponsive[0][:300]}")
        print(f"{'PASS' if deaths == 0 else 'FAIL'}  node deaths: {deaths} (target 0)")
        print(f"{'PASS' if problem is None else 'FAIL'}  a write committed and served afterwards")
        print(f"time     {time.monotonic() - started:.0f} s")
        if args.json:
            print(json.dumps({"frames": dict(thrower.frames), "connections": thrower.connections, "deaths": deaths,
                              "serving": problem is None, "unresponsive": len(thrower.unresponsive),
                              "load_average": os.getloadavg()}))
        return 0 if deaths == 0 and problem is None else 1
    finally:
        try:
            supervisor.stop()
        finally:
            supervisor.kill_leftovers()
            if not args.dir:
                shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
