"""What crosses the socket between the grader's harness and the student's process (both import it): one frame per
message, its length then JSON, and the calls' values as plain data, rebuilt and checked on arrival."""

from __future__ import annotations

import json
import select
from collections.abc import Mapping
import struct
import time

from lab.core.interface import AppendResult, SegmentInfo, TruncationPlan
from lab.core.messages import Entry

MAX_FRAME = 16 * 1024 * 1024  # bytes of one message; anything longer is garbage
_LENGTH = struct.Struct("<I")
_ENCODE = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


class Garbage(Exception):
    """What came across is not a message of the wire (or is the wrong message)."""


def _no_constant(name: str):
    raise Garbage(f"{name} is not a value of the wire")


_DECODE = json.JSONDecoder(parse_constant=_no_constant).decode


def frame(message) -> bytes:
    """One message as the bytes that cross: its length, then its JSON."""
    data = _ENCODE(message).encode()
    return _LENGTH.pack(len(data)) + data


class Channel:
    """One end of the socket: whole messages out, whole messages in, each read within a deadline."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = bytearray()

    def send(self, message) -> None:
        self.sock.sendall(frame(message))

    def send_frame(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive(self, deadline: float | None = None):
        """The next message. TimeoutError past `deadline` (time.monotonic), EOFError when the other end is gone,
        Garbage for bytes that are not a message."""
        while True:
            if len(self.buffer) >= 4:
                size = _LENGTH.unpack_from(self.buffer)[0]
                if size > MAX_FRAME:
                    raise Garbage(f"a message of {size} bytes")
                if len(self.buffer) >= 4 + size:
                    frame = bytes(self.buffer[4:4 + size])
                    del self.buffer[:4 + size]
                    try:
                        return _DECODE(frame.decode())
                    except (ValueError, RecursionError) as exc:
                        raise Garbage(f"bytes that are not JSON ({str(exc)[:80]})") from None
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                    raise TimeoutError
            try:
                chunk = self.sock.recv(1 << 16)
            except ConnectionError:
                chunk = b""
            if not chunk:
                raise EOFError
            self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


# ---- values ---------------------------------------------------------------------------------------------------
# Plain JSON for None, booleans, integers, strings and lists; a one-key object for the rest:
#   {"t": [...]} a tuple      {"d": [[key, value], ...]} a dict     {"e": [index, generation, payload]} an Entry
#   {"s": [path, first_index, [[index, offset], ...], size]} a SegmentInfo
#   {"a": [success, truncate_from, [entry, ...], match_index, conflict_index]} an AppendResult
#   {"p": [[path, ...], cut_path, cut_offset]} a TruncationPlan
#   {"l": [k, [generation, ...]]} a log (call back k answers entry_at)    {"f": [k, name]} a function (call back k)
#   {"o": name} the student's own function, called in the student's process
#   {"x": [type name, repr]} anything else the student's code returned (never accepted)


def encode(value, targets: list | None = None, own=None):
    """`value` as plain data. Logs and functions become call backs numbered in `targets` (the harness's side);
    `own(fn)` names a function that is the student's own."""
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is list:
        return [encode(v, targets, own) for v in value]
    if kind is Entry:
        return {"e": [value.index, value.generation, value.payload]}
    if kind is tuple:
        return {"t": [encode(v, targets, own) for v in value]}
    if kind is dict:
        return {"d": [[encode(k, targets, own), encode(v, targets, own)] for k, v in value.items()]}
    if kind is AppendResult:
        return {"a": [encode(value.success), encode(value.truncate_from), encode(list(value.append)),
                      encode(value.match_index), encode(value.conflict_index)]}
    if kind is TruncationPlan:
        return {"p": [encode(list(value.delete)), encode(value.cut_path), encode(value.cut_offset)]}
    if kind is SegmentInfo:
        return {"s": [value.path, value.first_index, [[i, o] for i, o in value.offsets.items()], value.size]}
    if targets is not None:
        if hasattr(value, "log_end") and hasattr(value, "generation_at"):
            targets.append(value)
            return {"l": [len(targets) - 1, generations(value)]}
        if callable(value):
            name = own(value) if own else None
            if name:
                return {"o": name}
            targets.append(value)
            return {"f": [len(targets) - 1, getattr(value, "__name__", "function")]}
    if isinstance(value, Mapping):  # the leader's match index table (a view of its progress records)
        return {"d": [[encode(k, targets, own), encode(v, targets, own)] for k, v in value.items()]}
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (list, tuple)):
        return encode(list(value) if isinstance(value, list) else tuple(value), targets, own)
    return {"x": [type(value).__name__, repr(value)[:200]]}


def generations(log) -> list[int]:
    entries = getattr(log, "_entries", None)  # the replica's Log: no call per entry
    if type(entries) is list:
        return [e.generation for e in entries]
    return [log.generation_at(i) for i in range(1, log.log_end + 1)]


class Shape(Exception):
    """A value from the student's process that is not one the interface allows; str(self) says what it was."""


def decode(value):
    """A value the student's process sent, rebuilt and checked (the harness's side: nothing is trusted)."""
    if value is None or type(value) in (bool, int, str):
        if type(value) is str and not _utf8(value):
            raise Shape("a string that is not valid UTF-8")
        return value
    if type(value) is list:
        return [decode(v) for v in value]
    if type(value) is not dict or len(value) != 1:
        raise Shape(f"a value of type {type(value).__name__}")
    (tag, body), = value.items()
    try:
        return _DECODERS[tag](body)
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, Shape):
            raise
        raise Shape(f"a malformed value ({tag!r})") from None


def _utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _int(value, none: bool = False):
    if value is None and none:
        return None
    if type(value) is not int:
        raise Shape(f"{value!r:.60} of type {type(value).__name__} where an int belongs")
    return value


def _str(value, none: bool = False):
    if value is None and none:
        return None
    if type(value) is not str or not _utf8(value):
        raise Shape(f"{value!r:.60} of type {type(value).__name__} where a str belongs")
    return value


def _entry(body) -> Entry:
    if type(body) is dict and set(body) == {"e"}:
        body = body["e"]
    index, generation, payload = body
    return Entry(_int(index), _int(generation), _str(payload))


def _other(body):
    name, shown = body
    raise Shape(f"{str(shown)[:60]} of type {str(name)[:60]}")


def _append_result(body) -> AppendResult:
    success, truncate_from, append, match_index, conflict_index = body
    if type(success) is not bool:
        raise Shape(f"an AppendResult whose success is {success!r:.40}, not True or False")
    return AppendResult(success=success, truncate_from=_int(truncate_from, none=True),
                        append=tuple(_entry(e) for e in append), match_index=_int(match_index),
                        conflict_index=_int(conflict_index))


def _plan(body) -> TruncationPlan:
    delete, cut_path, cut_offset = body
    return TruncationPlan(delete=tuple(_str(p) for p in delete), cut_path=_str(cut_path, none=True),
                          cut_offset=_int(cut_offset))


def _segment(body) -> SegmentInfo:
    path, first, offsets, size = body
    return SegmentInfo(path=_str(path), first_index=_int(first), offsets={_int(i): _int(o) for i, o in offsets},
                       size=_int(size))


_DECODERS = {
    "t": lambda body: tuple(decode(v) for v in body),
    "d": lambda body: {decode(k): decode(v) for k, v in body},
    "e": _entry,
    "a": _append_result,
    "p": _plan,
    "s": _segment,
    "x": _other,
}
