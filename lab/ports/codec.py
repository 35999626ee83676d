"""The wire format, and the only place that knows about JSON on the wire.

A frame is a 4-byte big-endian length, then that many bytes of UTF-8 JSON: one object whose `type` names the
message (`{"type": "ReplicationRequest", "generation": 2, ...}`); entries travel as `[index, generation, payload]`.
Peer messages, client requests and answers, and control requests all use it on a node's one port.
A frame over the maximum size, bytes that are not a JSON object, an unknown `type` or a field of the wrong type
raise `CodecError`: the connection that sent them is closed, and nothing else is affected.
"""

from __future__ import annotations

import dataclasses
import json
import json.scanner
import math
import re
import struct
from typing import Any, Callable

from lab.core.reasons import Reason, reason_from_record
from lab.core.messages import (
    REFUSALS,
    Answer,
    Challenge,
    ClientRead,
    ClientWrite,
    Control,
    ControlReply,
    Entry,
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

__all__ = [
    "MAX_FRAME", "CodecError", "FrameTooLarge", "MalformedFrame", "UnknownMessage", "encode", "encode_answer",
    "encode_many", "decode_frame", "FrameDecoder",
]

MAX_FRAME = 8 * 1024 * 1024
LENGTH = struct.Struct(">I")
_INT_LIMIT = 1 << 63


class CodecError(Exception):
    """Bytes that are not a valid frame. `decoded` holds the good messages that came before them."""

    def __init__(self, message: str, decoded: list | None = None):
        super().__init__(message)
        self.decoded = decoded or []


class FrameTooLarge(CodecError):
    pass


class MalformedFrame(CodecError):
    pass


class UnknownMessage(CodecError):
    pass


# ---- encoding -----------------------------------------------------------------------------------------------

def _not_serializable(value):
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode, without building a new
# C encoder for every message.
_c_encode = json.encoder.c_make_encoder and json.encoder.c_make_encoder(
    None, _not_serializable, json.encoder.encode_basestring, None, ":", ",", False, False, True)
_dumps = (lambda obj: "".join(_c_encode(obj, 0))) if _c_encode else \
    json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def _fields(obj) -> dict:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _encode_replication_request(m: ReplicationRequest) -> dict:
    # An Entry is a NamedTuple (index, generation, payload): the encoder writes it as that array, no copy needed.
    return {"type": "ReplicationRequest", "generation": m.generation, "leader": m.leader,
            "prev_index": m.prev_index, "prev_generation": m.prev_generation, "entries": m.entries,
            "high_water_mark": m.high_water_mark}


def _encode_control(m: Control) -> dict:
    clash = {"type", "request", "op"} & m.args.keys()
    if clash:
        raise ValueError(f"control arguments may not be named {sorted(clash)}")
    return {"type": "Control", "request": m.request, "op": m.op, **m.args}


def _encode_answer(m: Answer) -> dict:
    data = {"type": "Answer", "request": m.request, "ok": m.ok, "index": m.index, "generation": m.generation,
            "payload": m.payload, "high_water_mark": m.high_water_mark, "leader": m.leader, "error": m.error,
            "refusal": m.refusal, "holders": list(m.holders)}
    if isinstance(m.error, Reason):  # the error's kind and values travel beside its sentence
        data["because"] = m.error.as_record()
    return data


def answer_to_json(answer: Answer, node: str | None = None) -> dict:
    """An Answer as the control API gives it: its own field names, and `node`, the node that answered it."""
    data = _encode_answer(answer)
    del data["type"]
    data["node"] = node
    return data


def answer_from_json(data: dict) -> Answer:
    """The Answer in a control API answer (its other fields, such as `node`, left out); MalformedFrame if bad."""
    fields = {k: v for k, v in data.items() if k in Answer._fields or k == "because"}
    if isinstance(fields.get("error"), Reason):  # an answer of this process: its sentence, as the wire has it
        fields["error"] = str(fields["error"])
    return _decode_answer({"type": "Answer", **fields})


def _decode_answer(data: dict) -> Answer:
    """An Answer; its error a Reason again when the frame says which (`because`) and the sentence agrees."""
    because = data.pop("because", None) if "because" in data else None
    answer = _decode_generic("Answer", data)
    if because is not None:
        reason = reason_from_record(because)
        if reason is None or reason != answer.error:
            raise MalformedFrame(f"Answer.because does not describe its error: {_short(because)}")
        answer = answer._replace(error=reason)
    return answer


def _encode_client_write(m: ClientWrite) -> dict:
    return {"type": "ClientWrite", "request": m.request, "payload": m.payload}


def _generic(cls) -> Callable[[Any], dict]:
    name = cls.__name__
    names = tuple(f.name for f in dataclasses.fields(cls))  # once: dataclasses.fields per message cost 10 us

    def to_dict(m) -> dict:
        return {"type": name, **{field: getattr(m, field) for field in names}}

    return to_dict


_ENCODERS: dict[type, Callable[[Any], dict]] = {
    ReplicationRequest: _encode_replication_request,
    Control: _encode_control,
    Answer: _encode_answer,
    ClientWrite: _encode_client_write,
}
for _cls in (ReplicationResponse, VoteRequest, VoteResponse, PreVoteRequest, PreVoteResponse, EpochQuery, EpochAnswer, ClientRead, Hello, Challenge,
             ControlReply, ReadIndexRequest, ReadIndexResponse):
    _ENCODERS[_cls] = _generic(_cls)


def to_json(message) -> str:
    """The JSON text of one message (no length prefix)."""
    try:
        encoder = _ENCODERS[type(message)]
    except KeyError:
        raise TypeError(f"cannot encode {type(message).__name__}: not a wire message") from None
    return _dumps(encoder(message))


def encode(message, max_frame: int = MAX_FRAME) -> bytes:
    """One frame: length prefix and UTF-8 JSON."""
    body = to_json(message).encode("utf-8")
    if len(body) > max_frame:
        raise FrameTooLarge(f"a {type(message).__name__} of {len(body)} bytes exceeds the maximum frame "
                            f"size {max_frame}")
    return LENGTH.pack(len(body)) + body


_escape = json.encoder.encode_basestring  # what the encoder above uses for strings (ensure_ascii=False)
_ANSWER = ('{"type":"Answer","request":%s,"ok":%s,"index":%d,"generation":%d,"payload":%s,'
           '"high_water_mark":%d,"leader":%s,"error":%s,"refusal":%s,"holders":[]}')


_pack_length = LENGTH.pack


def encode_answer(answer: Answer, max_frame: int = MAX_FRAME) -> bytes:
    """`encode` for an Answer, written by hand: a leader sends one per acknowledged write. Same bytes."""
    request, ok, index, generation, payload, hwm, leader, error, refusal, holders = answer
    if ok is True and not error and not refusal and not holders and type(leader) is str and type(index) is int \
            and type(generation) is int and type(hwm) is int:
        try:
            body = (f'{{"type":"Answer","request":{_escape(request)},"ok":true,"index":{index},"generation":'
                    f'{generation},"payload":{_escape(payload)},"high_water_mark":{hwm},"leader":{_escape(leader)},'
                    f'"error":"","refusal":"","holders":[]}}').encode()
        except TypeError:
            return encode(answer, max_frame)
        if len(body) <= max_frame:
            return _pack_length(len(body)) + body
        return encode(answer, max_frame)
    if holders or type(error) is not str:
        return encode(answer, max_frame)
    try:
        body = (_ANSWER % (_escape(request), "true" if ok is True else "false", index, generation, _escape(payload),
                           hwm, "null" if leader is None else _escape(leader), _escape(error),
                           _escape(refusal))).encode("utf-8")
    except TypeError:
        return encode(answer, max_frame)
    if len(body) > max_frame or type(ok) is not bool or type(index) is not int:
        return encode(answer, max_frame)
    return LENGTH.pack(len(body)) + body


def encode_many(messages, max_frame: int = MAX_FRAME) -> bytes:
    """Several frames back to back, for one send."""
    return b"".join([encode(m, max_frame) for m in messages])


# ---- decoding -----------------------------------------------------------------------------------------------

def _no_constant(name: str):
    raise ValueError(f"{name} is not a number a frame may carry")


# NaN, Infinity and -Infinity are refused where they are read; a literal too large for a float (1e400) becomes inf
# and is refused by the field checks. Nesting is bounded by the decoder's recursion limit (RecursionError below).
_decoder = json.JSONDecoder(parse_constant=_no_constant)
_slow_loads = _decoder.decode
_scan = json.scanner.make_scanner(_decoder)  # the C scanner, without decode()'s two regex passes


def _loads(text: str):
    if not text or text[0] in " \t\n\r":
        return _slow_loads(text)
    try:
        value, end = _scan(text, 0)
    except StopIteration as stop:
        raise ValueError(f"Expecting value: char {stop.value}") from None
    if end != len(text) and text[end:].strip(" \t\n\r"):
        raise ValueError(f"Extra data: char {end}")
    return value


def _check_int(value) -> bool:
    return type(value) is int and 0 <= value < _INT_LIMIT


def _check_signed(value) -> bool:
    return type(value) is int and -_INT_LIMIT < value < _INT_LIMIT


def _check_str(value) -> bool:
    """A string that can be written as UTF-8: every string of a frame, ids and names included (JSON escapes
    can smuggle in lone surrogates, which no answer could then be encoded with)."""
    return _check_text(value)


def _check_text(value) -> bool:
    """A string that can be written as UTF-8 (JSON escapes can smuggle in lone surrogates)."""
    if type(value) is not str:
        return False
    if value.isascii():  # constant time in CPython, and ASCII cannot hold a surrogate
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_bool(value) -> bool:
    return type(value) is bool


def _check_optional_str(value) -> bool:
    return value is None or _check_text(value)


def _check_dict(value) -> bool:
    return type(value) is dict


def _check_refusal(value) -> bool:
    return value == "" or value in REFUSALS


def _check_names(value) -> bool:
    return type(value) is list and all(type(v) is str for v in value)


_MISSING = object()


def _schema(cls, **checks: Callable[[Any], bool]) -> tuple:
    """(class, [(field, check, required)]): fields with defaults in the class may be left out."""
    if hasattr(cls, "_field_defaults"):  # a NamedTuple
        names, defaults = cls._fields, cls._field_defaults
        specs = [(name, checks[name], name not in defaults) for name in names if name in checks]
        return cls, specs
    specs = []
    for f in dataclasses.fields(cls):
        if f.name not in checks:
            continue
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        specs.append((f.name, checks[f.name], not has_default))
    return cls, specs


_SCHEMAS: dict[str, tuple] = {
    "ReplicationResponse": _schema(ReplicationResponse, generation=_check_int, follower=_check_str,
                                   success=_check_bool, match_index=_check_int, log_end=_check_int,
                                   conflict_index=_check_int, prev_index=_check_int, counts=_check_bool),
    "VoteRequest": _schema(VoteRequest, generation=_check_int, candidate=_check_str, last_index=_check_int,
                           last_generation=_check_int, force=_check_bool),
    "VoteResponse": _schema(VoteResponse, generation=_check_int, voter=_check_str, granted=_check_bool),
    "PreVoteRequest": _schema(PreVoteRequest, generation=_check_int, candidate=_check_str, last_index=_check_int,
                              last_generation=_check_int),
    "PreVoteResponse": _schema(PreVoteResponse, generation=_check_int, voter=_check_str, granted=_check_bool),
    "EpochQuery": _schema(EpochQuery, generation=_check_int, follower=_check_str, of_generation=_check_int),
    "EpochAnswer": _schema(EpochAnswer, generation=_check_int, leader=_check_str, of_generation=_check_int,
                           end_index=_check_int),
    "ClientRead": _schema(ClientRead, request=_check_str, index=_check_signed, linearizable=_check_bool),
    "ReadIndexRequest": _schema(ReadIndexRequest, generation=_check_int, leader=_check_str, round=_check_int),
    "ReadIndexResponse": _schema(ReadIndexResponse, generation=_check_int, follower=_check_str, round=_check_int),
    "Answer": _schema(Answer, request=_check_str, ok=_check_bool, index=_check_signed, generation=_check_int,
                      payload=_check_text, high_water_mark=_check_int, leader=_check_optional_str,
                      error=_check_str, refusal=_check_refusal, holders=_check_names),
    "Hello": _schema(Hello, node=_check_str, proof=_check_str),
    "Challenge": _schema(Challenge, nonce=_check_str, node=_check_str),
    "ControlReply": _schema(ControlReply, request=_check_str, ok=_check_bool, result=_check_dict,
                            error=_check_str),
}


def _decode_generic(kind: str, data: dict):
    cls, specs = _SCHEMAS[kind]
    if len(data) - 1 > len(specs):
        extra = sorted(set(data) - {"type"} - {name for name, _, _ in specs})
        raise MalformedFrame(f"{kind} has unknown fields {extra}")
    values = {}
    for name, check, required in specs:
        value = data.get(name, _MISSING)
        if value is _MISSING:
            if required:
                raise MalformedFrame(f"{kind} lacks the field {name!r}")
            continue
        if not check(value):
            raise MalformedFrame(f"{kind}.{name} has a bad value {_short(value)}")
        values[name] = value
    if len(values) + 1 != len(data):
        extra = sorted(set(data) - {"type"} - set(values))
        raise MalformedFrame(f"{kind} has unknown fields {extra}")
    if "holders" in values:
        values["holders"] = tuple(values["holders"])
    return cls(**values)


def _decode_client_write(data: dict) -> ClientWrite:
    request, payload = data.get("request"), data.get("payload")
    if len(data) != 3 or not _check_text(request) \
            or not ((type(payload) is str and payload.isascii()) or _check_text(payload)):  # ASCII: no call
        raise MalformedFrame(f"ClientWrite needs exactly a string request and a UTF-8 string payload, got "
                             f"{_short(data)}")
    return ClientWrite(request=request, payload=payload)


_REQUEST_FIELDS = {"type", "generation", "leader", "prev_index", "prev_generation", "entries", "high_water_mark"}


def _decode_replication_request(data: dict) -> ReplicationRequest:
    if data.keys() != _REQUEST_FIELDS:
        raise MalformedFrame(f"ReplicationRequest needs the fields {sorted(_REQUEST_FIELDS - {'type'})}, got "
                             f"{sorted(data)}")
    generation, leader, prev_index = data["generation"], data["leader"], data["prev_index"]
    prev_generation, hwm, raw = data["prev_generation"], data["high_water_mark"], data["entries"]
    if not (_check_int(generation) and _check_text(leader) and _check_int(prev_index)
            and _check_int(prev_generation) and _check_int(hwm) and type(raw) is list):
        raise MalformedFrame(f"ReplicationRequest has a field of the wrong type: {_short(data)}")
    entries = []
    expected = prev_index + 1
    for item in raw:
        if type(item) is not list or len(item) != 3:
            raise MalformedFrame(f"an entry must be [index, generation, payload], not {_short(item)}")
        index, entry_generation, payload = item
        if index != expected or type(index) is not int or type(entry_generation) is not int \
                or not 0 <= entry_generation < _INT_LIMIT \
                or not (type(payload) is str and (payload.isascii() or _check_text(payload))):
            raise MalformedFrame(f"entry {_short(item)} is not [index {expected}, generation, payload]")
        entries.append(_new(Entry, (index, entry_generation, payload)))
        expected += 1
    if expected - 1 >= _INT_LIMIT:
        raise MalformedFrame("entry index out of range")
    return ReplicationRequest(generation=generation, leader=leader, prev_index=prev_index,
                              prev_generation=prev_generation, entries=tuple(entries), high_water_mark=hwm)


_RESPONSE_FIELDS = ("type", "generation", "follower", "success", "match_index", "log_end", "conflict_index",
                    "prev_index", "counts")


def _decode_replication_response(data: dict) -> ReplicationResponse:
    """A follower's answer, one per request: every field there and of its exact type is built at once; anything
    else takes the general path, which says what is wrong."""
    if len(data) == len(_RESPONSE_FIELDS):
        try:
            _, generation, follower, success, match_index, log_end, conflict, prev_index, counts = \
                map(data.__getitem__, _RESPONSE_FIELDS)
        except KeyError:
            return _decode_generic("ReplicationResponse", data)
        if type(success) is bool and type(counts) is bool and _check_int(generation) and _check_int(match_index) \
                and _check_int(log_end) and _check_int(conflict) and _check_int(prev_index) and _check_str(follower):
            return ReplicationResponse(generation=generation, follower=follower, success=success,
                                       match_index=match_index, log_end=log_end, conflict_index=conflict,
                                       prev_index=prev_index, counts=counts)
    return _decode_generic("ReplicationResponse", data)


CONTROL_DEPTH = 4  # arguments of a control request are flat values, or small lists and objects of them


def _plain(value, depth: int = 0) -> bool:
    """A control argument: a UTF-8 string, an int, a finite float, a bool, null, or a shallow list/object of them."""
    kind = type(value)
    if kind is str:
        return _check_text(value)
    if kind in (int, bool) or value is None:
        return True
    if kind is float:
        return math.isfinite(value)
    if depth >= CONTROL_DEPTH:
        return False
    if kind is list:
        return all(_plain(item, depth + 1) for item in value)
    if kind is dict:
        return all(_check_text(key) and _plain(item, depth + 1) for key, item in value.items())
    return False


def _decode_control(data: dict) -> Control:
    request, op = data.get("request"), data.get("op")
    if not _check_text(request) or not _check_text(op):
        raise MalformedFrame(f"Control needs a string request and op, got {_short(data)}")
    args = {k: v for k, v in data.items() if k not in ("type", "request", "op")}
    if not _plain(args):
        raise MalformedFrame(f"Control {_short(op)} has an argument that is not a plain, finite value: "
                             f"{_short(args)}")
    return Control(request=request, op=op, args=args)


_DECODERS: dict[str, Callable[[dict], Any]] = {
    "ClientWrite": _decode_client_write,
    "ReplicationRequest": _decode_replication_request,
    "Control": _decode_control,
}
for _kind in _SCHEMAS:
    _DECODERS[_kind] = (lambda kind: lambda data: _decode_generic(kind, data))(_kind)
_DECODERS["Answer"] = _decode_answer
_DECODERS["ReplicationResponse"] = _decode_replication_response

KNOWN_TYPES = tuple(sorted(_DECODERS))


def _short(value, limit: int = 80) -> str:
    try:
        text = repr(value)
    except RecursionError:
        return f"(a {type(value).__name__} nested too deep to show)"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# A client write in the exact shape the lab's clients send, with no escape and no control character in its
# strings: the common case, read without building a dict. Anything else takes the general path below.
_new = tuple.__new__  # ClientWrite(...) without a Python-level __new__: one per write
_PLAIN_WRITE = re.compile(rb'\{"type":"ClientWrite","request":"([^"\\\x00-\x1f]*)","payload":"([^"\\\x00-\x1f]*)"\}')


def decode_frame(body) -> Any:
    """The message in one frame body (the bytes after the length prefix)."""
    plain = _PLAIN_WRITE.fullmatch(body)
    if plain is not None:
        try:
            return _new(ClientWrite, (str(plain[1], "utf-8"), str(plain[2], "utf-8")))
        except UnicodeDecodeError:
            pass  # the general path says what is wrong
    try:
        data = _loads(str(body, "utf-8"))
    except UnicodeDecodeError as exc:
        raise MalformedFrame(f"frame is not UTF-8: {exc}") from None
    except ValueError as exc:
        raise MalformedFrame(f"frame is not JSON: {exc}") from None
    except RecursionError:
        raise MalformedFrame("frame is nested too deep") from None
    if type(data) is not dict:
        raise MalformedFrame(f"frame is JSON but not an object: {_short(data)}")
    kind = data.get("type")
    decoder = _DECODERS.get(kind) if type(kind) is str else None
    if decoder is None:
        raise UnknownMessage(f"unknown message type {_short(kind)} (known: {', '.join(KNOWN_TYPES)})")
    return decoder(data)


class FrameDecoder:
    """Turns a byte stream into messages. Feed it whatever `recv` returned; it keeps partial frames."""

    def __init__(self, max_frame: int = MAX_FRAME):
        self.max_frame = max_frame
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list:
        buffer = self._buffer
        buffer += data
        out: list = []
        position, size = 0, len(buffer)
        view = memoryview(buffer)
        try:
            while size - position >= 4:
                (length,) = LENGTH.unpack_from(buffer, position)
                if length > self.max_frame:
                    raise FrameTooLarge(f"frame of {length} bytes exceeds the maximum frame size {self.max_frame}",
                                        out)
                end = position + 4 + length
                if end > size:
                    break
                try:
                    out.append(decode_frame(view[position + 4 : end]))
                except CodecError as exc:
                    exc.decoded = out
                    raise
                position = end
        finally:
            view.release()
        if position:
            del buffer[:position]
        return out

    @property
    def pending(self) -> int:
        """Bytes held of a frame not yet complete."""
        return len(self._buffer)
