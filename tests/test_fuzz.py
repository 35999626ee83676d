"""No frame kills a node: the named hostile cases, and at least 10,000 frames generated from the wire format or
mutated from valid frames (drawn by hypothesis), thrown at a live leader and a live follower, one frame per
connection; afterwards no node process has exited and the cluster commits and serves a write. Anonymous control
requests that would change a node (stop, ticks) change nothing.

The frames and the thrower are bench/fuzz.py's (the benchmark throws 100,000). A node that dies is restarted so
that one run lists every frame that kills, each with the node's last log line. Loopback only; every process is
stopped at the end, pass or fail (tests/procutil.py).
"""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from queue import Queue

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from procutil import running_cluster

_PATH = Path(__file__).resolve().parents[1] / "bench" / "fuzz.py"
_spec = importlib.util.spec_from_file_location("bench_fuzz", _PATH)
fuzz = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fuzz
_spec.loader.exec_module(fuzz)

pytestmark = pytest.mark.processes

FRAMES = 10_000
BUDGET_SECONDS = 90.0  # a safety net: drawing stops here, and too few frames fail the test (about 20 s on a quiet
                       # machine, where drawing the frames costs more than sending them)


def _problems(thrower) -> list[str]:
    """Everything the issue forbids, in words: deaths, and a cluster that no longer commits and serves."""
    thrower.probe()
    serving = thrower.serving()
    thrower.probe()  # a node that dies slowly (its orderly stop writes a snapshot) is counted too
    return [str(death) for death in thrower.deaths] + ([serving] if serving is not None else [])


def test_no_named_case_kills_a_leader_or_a_follower(tmp_path):
    with running_cluster(tmp_path, nodes=3) as sup:
        thrower = fuzz.Thrower(sup)
        cases = fuzz.named_cases()
        names = {case.name for case in cases}
        for required in ("a JSON array nested 100,000 deep", "Control status with log=Infinity",
                         "Control log with first=-Infinity", "ClientWrite with request id \\udfff (escaped)",
                         "ClientRead with request id \\udfff (escaped)", "Control with request id \\udfff (escaped)",
                         "a length of the maximum frame + 1", "a frame cut in its body", "4 KiB of random bytes",
                         "ClientRead with index \"1\"", "Control op=stop from an anonymous connection"):
            assert required in names, required
        for case in cases:
            for role in ("leader", "follower"):
                thrower.throw_case(case, role)

        assert thrower.frames["leader"] == thrower.frames["follower"] == len(cases)
        problems = _problems(thrower)
        held = [n["id"] for n in sup.state(log=0)["nodes"] if n.get("hold_ticks")]
        if held:
            problems.append(f"an anonymous Control op=ticks stopped the clock of {', '.join(held)}")
        assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


# ---- hypothesis: frames from the wire format, and mutations of valid ones ----------------------------------------

# Hypothesis pays per draw, so a field's value is one draw from a pool, a message about one draw per field.
_MISSING = object()  # a field left out
_ODD_JSON = [[], [[[]]], {"a": {"b": [1, {"c": None}]}}, [None, True, 1.5, "x"], -0.0, 1e-300, 2**100, "x" * 1000,
             "\u2028", "\x7f", "\U0010ffff", {"type": "Control"}, [[1, 1, "e"]]]


def _pool(kind: str) -> list:
    """Mostly values of the field's kind; else edges (surrogates, non-finite, huge), odd JSON, or absent."""
    return fuzz.GOOD[kind] * 4 + fuzz.BAD + _ODD_JSON + [_MISSING]


_VALUES = {kind: st.sampled_from(_pool(kind)) for kind in fuzz.GOOD}
_VALUES["entries"] = st.sampled_from([
    [], [[1, 1, "e"]], [[1, 1, "e"], [2, 1, "f"]], [[1, 2**63 - 1, "e"]], [[2, 1, "e"]], [[0, 1, "e"]], [[1, 1]],
    [[1, 1, 5]], [[1, "1", "e"]], [[1, 1, "\udfff"]], [1, 2, 3], "entries", None, {}, [[i, 1, "e"] for i in
                                                                                      range(1, 500)],
    *fuzz.BAD])
_CONTROL_ARGS = st.sampled_from([{}, {}, {"log": 0}, {"log": "all"}, {"first": 1, "last": 2}, {"hold": False},
                                 {"reason": "x"}, {"log": float("inf")}, {"first": float("-inf")},
                                 {"last": float("nan")}, {"log": 10**30}, {"first": "1"}, {"hold": [1]},
                                 {"unknown": 1}, {"type": "x"}, {"request": "again"}])


def _message(kind: str):
    fields = {"type": st.just(kind), **{name: _VALUES[k] for name, k in fuzz.MESSAGES[kind].items()}}
    strategy = st.fixed_dictionaries(fields)
    if kind == "Control":
        strategy = st.tuples(strategy, _CONTROL_ARGS).map(lambda pair: {**pair[1], **pair[0]})
    return strategy.map(lambda obj: {k: v for k, v in obj.items() if v is not _MISSING})


def _generated(kinds):
    def encoded(pair) -> tuple[str, bytes]:
        obj, ascii = pair
        return f"{obj['type']} {fuzz.short(obj)}", fuzz.frame(fuzz.body(obj, ascii=ascii))

    return st.tuples(st.one_of([_message(kind) for kind in kinds]), st.booleans()).map(encoded)


_ANY = _generated(sorted(fuzz.MESSAGES))


@st.composite
def _mutated(draw) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(sorted(fuzz.MESSAGES)))
    obj = fuzz.valid_message(kind, random.Random(draw(st.integers(0, 2**16))))
    data = fuzz.frame(fuzz.body(obj))
    how = draw(st.sampled_from(["bit flips", "truncation", "length lie", "type swap", "message type swap",
                                "deep nesting", "splice", "garbage body"]))
    fields = sorted(k for k in obj if k != "type") or ["type"]
    if how == "bit flips":
        data = fuzz.flip_bits(data, draw(st.lists(st.integers(0, len(data) * 8 - 1), min_size=1, max_size=4)))
    elif how == "truncation":
        data = fuzz.truncate(data, draw(st.integers(0, len(data))))
    elif how == "length lie":
        data = fuzz.lie_length(data, draw(st.one_of(st.integers(0, len(data) + 64), st.sampled_from(
            [fuzz.MAX_FRAME, fuzz.MAX_FRAME + 1, 0xFFFFFFFF]))))
    elif how == "type swap":
        value = draw(st.sampled_from(fuzz.BAD + _ODD_JSON))
        data = fuzz.frame(fuzz.body(fuzz.swap_field(obj, draw(st.sampled_from(fields)), value)))
    elif how == "message type swap":
        new_type = draw(st.sampled_from(sorted(fuzz.MESSAGES) + ["Gossip", ""]))
        data = fuzz.frame(fuzz.body(fuzz.swap_field(obj, "type", new_type)))
    elif how == "deep nesting":
        data = fuzz.deepen(obj, draw(st.sampled_from(fields)), draw(st.sampled_from([64, 2_000, fuzz.DEEP])),
                           draw(st.sampled_from(["array", "object"])))
    elif how == "splice":
        other = draw(_ANY)[1]
        data = fuzz.splice(data, other, draw(st.integers(0, len(data))), draw(st.integers(0, len(other))))
    else:
        data = fuzz.frame(draw(st.binary(min_size=1, max_size=64)))
    return f"{how} of a {kind}", data


_FRAMES = {"client": _generated(sorted(fuzz.CLIENT_MESSAGES) + ["Hello"]),
           "peer": _generated(sorted(fuzz.PEER_MESSAGES) + ["Hello"]), "mutated": _mutated()}
# (family, (label, bytes)): client messages, answers, challenges and forged Hellos; peer messages, sent anonymously as
# an attacker must (a Hello without the secret ends the connection before them); mutations of valid frames
_FRAME = st.one_of([st.tuples(st.just(family), frames) for family, frames in sorted(_FRAMES.items())])


def test_generated_and_mutated_frames_kill_no_node(tmp_path):
    with running_cluster(tmp_path, nodes=3) as sup:
        thrower = fuzz.Thrower(sup)
        thrower.targets()
        # One frame per connection: a node closes a connection at its first bad frame, so a frame sent after one
        # would never be read. Hypothesis draws in this thread; two threads send, to the leader and to a follower.
        queue: Queue = Queue(maxsize=1000)
        errors: list[str] = []

        def send(role: str) -> None:
            while (item := queue.get()) is not None:
                if errors:
                    continue  # drain: the drawing thread must never block on a dead consumer
                try:
                    if thrower.frames[role] % 500 == 0:
                        thrower.targets()  # leadership may move: throw at the leader of now
                    family, frame = item
                    thrower.throw(role, [frame], family=family)
                except Exception as exc:  # e.g. a dead node that cannot start again
                    errors.append(f"the {role} thrower stopped: {exc!r}")

        senders = [threading.Thread(target=send, args=(role,), name=f"fuzz-{role}", daemon=True)
                   for role in ("leader", "follower")]
        for sender in senders:
            sender.start()
        started = time.monotonic()
        drawn = Counter()

        @settings(max_examples=700, deadline=None, derandomize=True, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(st.lists(_FRAME, min_size=10, max_size=30))
        def draw(frames):
            for item in frames:
                if drawn["frames"] < FRAMES and time.monotonic() - started < BUDGET_SECONDS:
                    drawn["frames"] += 1
                    drawn[item[0]] += 1
                    queue.put(item, timeout=30)

        try:
            draw()
        finally:
            for _ in senders:
                queue.put(None, timeout=30)
            for sender in senders:
                sender.join(30)
        assert not any(sender.is_alive() for sender in senders), "a thrower did not finish within 30 s"

        thrown = dict(thrower.frames)
        problems = list(errors)
        if sum(thrown.values()) < FRAMES:
            problems.append(f"only {sum(thrown.values())} frames thrown (target {FRAMES}) in {BUDGET_SECONDS:g} s")
        if min(thrown.values(), default=0) < FRAMES // 3:
            problems.append(f"the leader and the follower did not each take a third: {thrown}")
        if min(drawn[family] for family in _FRAMES) < FRAMES // 5:
            problems.append(f"a family is missing: {dict(drawn)}")
        problems += _problems(thrower)
        assert not problems, f"{len(problems)} problems after {thrown} frames on {thrower.connections} " \
                             f"connections:\n" + "\n".join(problems)


def test_the_thrower_sees_answers_closes_and_deaths(tmp_path):
    """The fuzz tests pass only if the thrower would notice: an answered read, a closed connection, and a node
    killed behind its back (counted, with its exit code, and started again)."""
    with running_cluster(tmp_path, nodes=3) as sup:
        thrower = fuzz.Thrower(sup)
        follower = thrower.targets()["follower"]
        assert thrower.throw("follower", [("a read", fuzz.marker_read("r1"))]) == "answered"
        assert thrower.throw("follower", [("garbage", fuzz.frame(b"not json"))]) == "closed"
        assert thrower.deaths == []

        old = sup.nodes[follower].pid
        os.kill(old, signal.SIGKILL)
        sup.nodes[follower].proc.wait(5)
        thrower.throw("follower", [("a read", fuzz.marker_read("r2"))])

        assert [(d.node, d.code) for d in thrower.deaths] == [(follower, -signal.SIGKILL)]
        assert sup.nodes[follower].pid != old and sup.nodes[follower].proc.poll() is None
        assert thrower.serving() is None


def test_the_mutations_change_what_they_say():
    rng = random.Random(1)
    obj = fuzz.valid_message("ClientRead", rng)
    data = fuzz.frame(fuzz.body(obj))
    assert fuzz.flip_bits(data, [40]) != data and len(fuzz.flip_bits(data, [40])) == len(data)
    assert fuzz.truncate(data, 10) == data[:10]
    assert fuzz.lie_length(data, 3)[:4] == b"\x00\x00\x00\x03" and fuzz.lie_length(data, 3)[4:] == data[4:]
    deep = fuzz.deepen(obj, "index", 1000)
    assert deep[4:].count(b"[") == 1000 and fuzz.framed_to_the_end(deep)
    assert not fuzz.framed_to_the_end(fuzz.truncate(data, len(data) - 1))
    assert not fuzz.framed_to_the_end(fuzz.lie_length(data, fuzz.MAX_FRAME + 1))
    assert b"Infinity" in fuzz.body({"x": float("inf")}) and b"\\udfff" in fuzz.body({"x": "\udfff"})
