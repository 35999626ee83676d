"""The wire codec: every message survives a round trip, frames survive any split, bad input is refused."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.ports import codec
from lab.core.messages import Challenge, Control, ControlReply, Hello
from lab.ports.codec import FrameDecoder, FrameTooLarge, MalformedFrame, UnknownMessage
from lab.core.messages import (
    Answer,
    ClientRead,
    ClientWrite,
    Entry,
    EpochAnswer,
    EpochQuery,
    ReplicationRequest,
    ReplicationResponse,
    VoteRequest,
    VoteResponse,
)

EXAMPLES = [
    ReplicationRequest(generation=2, leader="A", prev_index=3, prev_generation=1,
                       entries=(Entry(index=4, generation=2, payload="e5"), Entry(index=5, generation=2, payload="é")),
                       high_water_mark=3),
    ReplicationRequest(generation=1, leader="B", prev_index=0, prev_generation=0),
    ReplicationResponse(generation=2, follower="B", success=True, match_index=5, log_end=5, prev_index=3),
    ReplicationResponse(generation=2, follower="C", success=False, log_end=1, conflict_index=2, prev_index=3),
    VoteRequest(generation=3, candidate="C", last_index=7, last_generation=2, force=True),
    VoteResponse(generation=3, voter="A", granted=False),
    EpochQuery(generation=4, follower="A", of_generation=2),
    EpochAnswer(generation=4, leader="B", of_generation=2, end_index=9),
    ClientWrite(request="w1", payload="hello\nworld \u2603"),
    ClientRead(request="r1", index=-1),
    Answer(request="w1", ok=True, index=4, generation=2, payload="e5", high_water_mark=4, leader="B"),
    Answer(request="r2", ok=False, index=9, high_water_mark=4, error="not available: index 9 is above ..."),
    Hello(node="A", proof="0f" * 32),
    Challenge(nonce="ab" * 16, node="B"),
    Control(request="k1", op="status", args={"log": "all"}),
    ControlReply(request="k1", ok=True, result={"role": "leader", "log": [[1, 1, "x"]]}),
    ControlReply(request="k2", ok=False, error="unknown control op 'x'"),
]


def frame(obj) -> bytes:
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: type(m).__name__)
def test_every_message_survives_a_round_trip(message):
    data = codec.encode(message)
    assert struct.unpack(">I", data[:4])[0] == len(data) - 4
    assert json.loads(data[4:])["type"] == type(message).__name__
    assert FrameDecoder().feed(data) == [message]


def test_entries_travel_as_index_generation_payload():
    data = codec.encode(EXAMPLES[0])
    assert json.loads(data[4:])["entries"] == [[4, 2, "e5"], [5, 2, "é"]]


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12))
def test_frames_survive_any_split_of_the_stream(cuts):
    stream = codec.encode_many(EXAMPLES)
    decoder, got, last = FrameDecoder(), [], 0
    for cut in sorted(c % (len(stream) + 1) for c in cuts) + [len(stream)]:
        got += decoder.feed(stream[last:cut])
        last = cut
    assert got == EXAMPLES
    assert decoder.pending == 0


@settings(max_examples=40, deadline=None)
@given(payloads=st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=30), min_size=1, max_size=20),
       generation=st.integers(0, 2**40))
def test_replication_requests_of_any_text_round_trip(payloads, generation):
    entries = tuple(Entry(index=10 + i, generation=generation, payload=p) for i, p in enumerate(payloads))
    message = ReplicationRequest(generation=generation, leader="A", prev_index=9, prev_generation=generation,
                                 entries=entries, high_water_mark=9)
    assert FrameDecoder().feed(codec.encode(message)) == [message]


def test_an_oversized_frame_is_refused_from_its_header_alone():
    decoder = FrameDecoder(max_frame=1024)
    with pytest.raises(FrameTooLarge, match="exceeds the maximum frame size 1024"):
        decoder.feed(struct.pack(">I", 1025))  # no body needed: refuse before buffering megabytes


def test_encoding_refuses_a_frame_over_the_maximum():
    with pytest.raises(FrameTooLarge):
        codec.encode(ClientWrite(request="w", payload="x" * 2000), max_frame=1000)


@pytest.mark.parametrize("body, error", [
    (b"\xff\xfe garbage", MalformedFrame),
    (b"not json", MalformedFrame),
    (b"", MalformedFrame),
    (b"[1, 2, 3]", MalformedFrame),
    (b'"a string"', MalformedFrame),
    (b'{"no": "type"}', UnknownMessage),
    (b'{"type": "Gossip", "x": 1}', UnknownMessage),
    (b'{"type": 7}', UnknownMessage),
    (b'{"type": "ClientWrite", "request": "w"}', MalformedFrame),
    (b'{"type": "ClientWrite", "request": "w", "payload": 5}', MalformedFrame),
    (b'{"type": "ClientWrite", "request": "w", "payload": "\\ud800"}', MalformedFrame),
    (b'{"type": "ClientWrite", "request": "w", "payload": "x", "extra": 1}', MalformedFrame),
    (b'{"type": "ClientRead", "request": "r", "index": "3"}', MalformedFrame),
    (b'{"type": "ClientRead", "request": "r", "index": true}', MalformedFrame),
    (b'{"type": "VoteResponse", "generation": -1, "voter": "A", "granted": true}', MalformedFrame),
    (b'{"type": "VoteResponse", "generation": 1, "voter": "A", "granted": 1}', MalformedFrame),
    (b'{"type": "VoteResponse", "generation": 1, "voter": "A"}', MalformedFrame),
    (b'{"type": "VoteResponse", "generation": 1.5, "voter": "A", "granted": true}', MalformedFrame),
    (b'{"type": "VoteResponse", "generation": 1, "voter": "A", "granted": true, "x": 0}', MalformedFrame),
    (b'{"type": "ReplicationRequest", "generation": 1, "leader": "A", "prev_index": 0, "prev_generation": 0, '
     b'"entries": [[2, 1, "gap"]], "high_water_mark": 0}', MalformedFrame),
    (b'{"type": "ReplicationRequest", "generation": 1, "leader": "A", "prev_index": 0, "prev_generation": 0, '
     b'"entries": [[1, 1]], "high_water_mark": 0}', MalformedFrame),
    (b'{"type": "ReplicationRequest", "generation": 1, "leader": "A", "prev_index": 0, "prev_generation": 0, '
     b'"entries": {}, "high_water_mark": 0}', MalformedFrame),
    (b'{"type": "ReplicationRequest", "generation": 99999999999999999999, "leader": "A", "prev_index": 0, '
     b'"prev_generation": 0, "entries": [], "high_water_mark": 0}', MalformedFrame),
    (b'{"type": "Control", "op": "status"}', MalformedFrame),
])
def test_bad_frames_are_refused_with_a_reason(body, error):
    with pytest.raises(error) as caught:
        FrameDecoder().feed(frame(body))
    assert str(caught.value)


def test_good_frames_before_a_bad_one_are_kept():
    good = codec.encode(ClientWrite(request="w1", payload="ok"))
    with pytest.raises(UnknownMessage) as caught:
        FrameDecoder().feed(good + frame({"type": "Nope"}) + good)
    assert caught.value.decoded == [ClientWrite(request="w1", payload="ok")]


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300))
def test_random_bytes_never_crash_the_decoder(data):
    decoder = FrameDecoder(max_frame=4096)
    try:
        for message in decoder.feed(data):
            assert type(message).__name__ in codec.KNOWN_TYPES
    except codec.CodecError:
        pass


def test_control_arguments_are_flat_on_the_wire():
    data = codec.encode(Control(request="k", op="ticks", args={"hold": False}))
    assert json.loads(data[4:]) == {"type": "Control", "request": "k", "op": "ticks", "hold": False}
    with pytest.raises(ValueError):
        codec.encode(Control(request="k", op="x", args={"op": "y"}))


@pytest.mark.parametrize("answer", [m for m in EXAMPLES if isinstance(m, Answer)] + [
    Answer(request='w"\\\n', ok=True, index=2**40, generation=3, payload="\u2603 \x00 \ud7ff", high_water_mark=1),
])
def test_the_hand_written_answer_encoding_is_byte_for_byte_the_general_one(answer):
    assert codec.encode_answer(answer) == codec.encode(answer)


def test_trace_lines_formatted_by_hand_are_byte_for_byte_those_of_the_json_encoder(tmp_path):
    """The trace formats per-entry events by hand for speed; the file must not differ by a byte from json.dumps."""
    import json

    from lab.core.messages import Event, FollowerAppend, LeaderAppend, WriteAcked, WriteRequested
    from lab.ports.trace import TraceFile, record

    events = [
        WriteRequested(2, 'w"1', "0123456789abcdef", "é\n\u2603"),
        LeaderAppend(2, 7, 2, "ab", "x", "w1"),
        WriteAcked(2, "w1", 7, 2, "ab"),
        FollowerAppend(3, 8, 3, "cd", ""),
        FollowerAppend(3, "8", 3, "cd", ""),  # a field of another type: the generic encoder takes it
        WriteAcked(True, "w1", 7, 2, "ab"),
        WriteRequested(2, "w2", None, "y"),
        Event("hwm_changed", {"gen": 2, "from_hwm": 3, "hwm": 5, "role": "leader", "entry_generation": 2,
                              "committed": [[4, 2, "aa"], [5, 2, "bb"]]}),
        Event("became_follower", {"gen": 4, "generation": 4, "leader": None}),
        Event("node_stopped", {"reason": "signal SIGTERM"}),
    ]
    trace = TraceFile(tmp_path, "A")
    expected = []
    for i, event in enumerate(events):
        time = round(i * 0.0123456789 + 1, 6)
        trace.emit([event], time=time, boot=2)
        expected.append(json.dumps(record(event, seq=i + 1, time=time, node="A", boot=2), separators=(",", ":")))
    trace.close()
    assert (tmp_path / "events-A.jsonl").read_text(encoding="utf-8") == "\n".join(expected) + "\n"


def test_the_replicas_per_entry_events_are_those_the_node_formats_by_hand():
    """The replica builds its per-entry events as the fixed-field values the trace formats by hand; any other
    value would still be written right, but on the slow path. Leader and follower, one write each."""
    import random

    from lab.core import impl as impl_module
    from lab.core.messages import HardState, ReplicationRequest, ReplicationResponse, VoteResponse
    from lab.core.messages import ENTRY_EVENTS
    from lab.core.replica import Replica

    solutions = impl_module.load("solutions")

    def replica(node):
        made = Replica(node_id=node, nodes=("A", "B", "C"), impl=solutions, rng=random.Random(1),
                       hard_state=HardState(generation=1, voted_for=None))
        made.start()
        return made

    leader = replica("B")
    events = [*leader.campaign().events,
              *leader.receive("A", VoteResponse(generation=2, voter="A", granted=True)).events]
    proposed = leader.propose([ClientWrite(request="w1", payload="x")])
    events += [*proposed.events, *leader.persisted(1, 2).events, *leader.receive("A", ReplicationResponse(
        generation=2, follower="A", success=True, match_index=1, log_end=1, prev_index=0)).events]
    request = next(e.message for e in proposed.early_messages if isinstance(e.message, ReplicationRequest))
    events += replica("A").receive("B", request).events
    by_hand = {cls.type: cls for cls in ENTRY_EVENTS}
    hot = [e for e in events if e.type in by_hand]
    assert {e.type for e in hot} == set(by_hand)
    for event in hot:
        assert type(event) is by_hand[event.type], event.type


def test_an_answer_is_json_with_its_own_field_names_and_comes_back_whole():
    answer = Answer(request="w1", ok=False, index=4, generation=2, high_water_mark=3, leader="A",
                    error="timeout: ...", refusal="timeout", holders=("A", "B"))
    data = codec.answer_to_json(answer, node="A")
    assert set(data) == set(Answer._fields) | {"node"} and data["high_water_mark"] == 3 and data["node"] == "A"
    assert codec.answer_from_json(json.loads(json.dumps(data))) == answer
    with pytest.raises(MalformedFrame):
        codec.answer_from_json({**data, "index": "four"})
