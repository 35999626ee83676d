"""Events and reasons are declared once (lab/core/events.py, lab/core/reasons.py): every kind has a narration, every reason a translation
keyed by its kind, the grader's schema agrees with the declarations, the runs write only what is declared, and
rewording a reason's English changes nothing else."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from lab import i18n
from lab.core import events
from lab.core import reasons
from lab.core.events import KINDS
from lab.core.reasons import REASONS, Reason, reason_fields, reason_from_record
from lab.core.messages import Answer
from lab.ports import codec
from lab.sim.cluster import SimCluster
from web.narrate import Narrator

ROOT = Path(__file__).resolve().parent.parent
TRANSLATED = ("es", "zh")
SAMPLE = {events.INT: 3, events.NUMBER: 2.5, events.STR: "B", events.BOOL: True, events.ENTRY: [3, 2, "0" * 16],
          events.ENTRIES: [[3, 2, "0" * 16]], events.INTS: [1, 4], events.NAMES: ["A", "B"], events.DICT: {},
          events.ANY: "always", events.REASON: Reason(reasons.NO_LEADER)}


def sample_event(kind) -> dict:
    fields = {name: SAMPLE[type_] for name, type_ in kind.fields.items()}
    return {"v": 1, "seq": 1, "time": 0.5, "node": "A" if kind.source == events.NODE else "cluster", "boot": 1,
            "gen": 2, "type": kind.name, **fields}


def sample_reason(kind: str) -> Reason:
    values = {name: ("A", "B", "C") if name == "nodes" else "C" if name in ("node", "leader", "candidate") else 4
              for name in reason_fields(kind)}
    return Reason(kind, **values)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_event_kind_has_a_narration(kind):
    """The feed says each declared kind in its own words, not as the fallback "{node}: {kind}"."""
    said = Narrator().describe(sample_event(KINDS[kind]))
    assert isinstance(said, i18n.Text) and said.msgid != "{node}: {kind}", said


def test_the_narration_is_a_table_of_every_declared_kind():
    """web/narrate.py says each kind by its entry of NARRATION (no chain of branches), and no entry is of a kind
    nobody declared."""
    from web.narrate import NARRATION

    assert set(NARRATION) == set(KINDS)


def test_the_dashboard_shows_every_declared_kind_by_one_class_of_web_kinds():
    """web/kinds.py puts each declared kind in exactly one class; the live frames' sampling (web.live.ROUTINE), the
    late page's story (web.live.STORY) and the feed's marks (web.kinds.FEED_KINDS) are read from those classes."""
    from web import kinds, live
    from web.kinds import FEED_KINDS

    assert set().union(*kinds.CLASSES) == set(KINDS)
    assert sum(len(c) for c in kinds.CLASSES) == len(KINDS)  # no kind in two classes
    assert live.ROUTINE == kinds.BUSY | kinds.BOOKKEEPING and live.STORY == kinds.IMPORTANT | kinds.NOTED
    assert set(FEED_KINDS["routine"]) == kinds.BOOKKEEPING | kinds.QUIET
    assert set(FEED_KINDS["important"]) == kinds.IMPORTANT


def test_the_narration_check_can_fail():
    assert Narrator().describe({"type": "nobody_declared_this", "node": "A"}).msgid == "{node}: {kind}"


@pytest.mark.parametrize("lang", TRANSLATED)
def test_every_reason_has_a_translation_keyed_by_its_kind(lang):
    """Each reason kind has an entry of context "because" whose placeholders are the reason's fields, and a reason
    said in the language comes from it (no English left)."""
    messages = i18n.catalogue(lang).messages
    missing = [kind for kind in REASONS if (i18n.REASON, kind) not in messages]
    assert missing == []
    for kind in REASONS:
        assert i18n.fields(messages[(i18n.REASON, kind)]) == set(reason_fields(kind)), kind
        reason = sample_reason(kind)
        said = i18n.localize(reason, lang)
        same = messages[(i18n.REASON, reason.kind)] == REASONS[reason.kind]  # "{node}: {answer}" reads alike everywhere
        assert (said == str(reason)) == same and said == i18n.say_reason(reason, lang), kind


def reworded(kind: str) -> str:
    return "reworded: " + " / ".join(f"{{{name}}}" for name in reason_fields(kind))


@pytest.fixture(scope="module")
def keys_once_reworded():
    """The catalogue's keys extracted from the sources with every reason's English reworded at once (one extraction
    reads every source file: once for the module, not once per reason)."""
    from lab.i18n.extract import extract

    with pytest.MonkeyPatch.context() as mp:
        for kind in list(REASONS):
            mp.setitem(REASONS, kind, reworded(kind))
        assert all(text.startswith("reworded: ") for text in REASONS.values())
        return {(m.context, m.id) for m in extract() if m.id}


@pytest.mark.parametrize("kind", sorted(REASONS))
def test_rewording_a_reason_changes_no_key_and_no_translation(kind, monkeypatch, keys_once_reworded):
    """Reword a reason's English: its sentence changes, its translations and its catalogue key do not, and its kind
    and values still cross the wire. Nothing reads the sentence back."""
    before = sample_reason(kind)
    kind = before.kind  # the variant its values choose (several nodes, a count of one)
    said = {lang: i18n.localize(before, lang) for lang in TRANSLATED}
    monkeypatch.setitem(REASONS, kind, reworded(kind))
    after = sample_reason(kind)
    assert str(after) != str(before) and str(after).startswith("reworded: ")
    assert {lang: i18n.localize(after, lang) for lang in TRANSLATED} == said
    assert (i18n.REASON, kind) in keys_once_reworded
    answer = codec.decode_frame(codec.encode(Answer(request="r", ok=False, error=after, refusal=reasons.TIMEOUT))[4:])
    assert answer.error == after and answer.error.kind == kind and reason_from_record(after.as_record()) == after


def sentences(source: str) -> list[tuple[int, str]]:
    """A module's string literals and f-strings, each with its values as "{}": (line, text)."""
    tree = ast.parse(source)
    inner = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inner:
            found.append((node.lineno, _BLANKS.sub("{}", node.value)))
        elif isinstance(node, ast.JoinedStr):
            found.append((node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)))
    return found


_BLANKS = re.compile(r"\{[^{}]*\}")


def test_no_other_module_writes_a_reasons_english():
    """The English of a reason lives in lab/core/reasons.py only: no module of the lab or the dashboard writes one
    of its sentences, whatever its values (exercise 4's statement and reference, the student's side, say it as the
    exercise asks; tests hold older traces' and students' sentences as data)."""
    english = {_BLANKS.sub("{}", template): kind for kind, template in REASONS.items()
               if len(_BLANKS.sub("", template)) >= 16}  # "{node}: {answer}" is any pair's punctuation
    files = [p for folder in ("lab", "web") for p in (ROOT / folder).rglob("*.py")
             if p != ROOT / "lab" / "core" / "reasons.py"]
    found = [f"{p.relative_to(ROOT)}:{line}: {english[text]}" for p in files
             for line, text in sentences(p.read_text(encoding="utf-8")) if text in english]
    assert sentences('x = f"node {n} is {s}"; y = "no node is running"') == [
        (1, "node {} is {}"), (1, "no node is running")]  # the check below can fail
    assert found == []


def test_a_reason_a_node_gives_is_said_by_kind_after_the_wire():
    cluster = SimCluster(["A", "B", "C"], seed=4)
    cluster.run_until(lambda: cluster.leader() is not None)
    follower = next(n for n in cluster.names if n != cluster.leader())
    refused = cluster.read(9, follower)
    data = codec.answer_to_json(refused, follower)
    assert data["because"] == {"kind": reasons.ABOVE_HWM, "index": 9, "hwm": refused.high_water_mark}
    again = codec.answer_from_json(data)
    assert i18n.localize(again.error, "es").startswith("no disponible: el índice 9")
    with pytest.raises(codec.MalformedFrame):  # a `because` that says another sentence is refused
        codec.answer_from_json({**data, "error": "something else"})
    cluster.close()


def test_runs_write_only_declared_kinds_with_their_declared_fields():
    """Every event of a simulated run with elections, refusals, kills and cuts is a declared kind, holds every
    field declared for it that is not optional, and nothing else."""
    cluster = SimCluster(["A", "B", "C"], seed=11)
    cluster.run_until(lambda: cluster.leader() is not None)
    leader = cluster.leader()
    others = [n for n in cluster.names if n != leader]
    cluster.write("w1", others[0])
    cluster.read(9, others[0])
    cluster.write("w2")
    cluster.run(200)
    cluster.cut(leader, others[0])
    cluster.cut(leader, others[1])
    cluster.write("w3", leader)
    cluster.run(1200)
    cluster.heal()
    cluster.kill(others[0], lose_unsynced=True)
    cluster.run(300)
    cluster.restart(others[0])
    cluster.run(600)
    cluster.close()
    seen = set()
    for event in cluster.events:
        kind = KINDS.get(event["type"])
        assert kind is not None, event
        fields = set(event) - {"v", "seq", "time", "node", "boot", "gen", "type", reasons.BECAUSE}
        if kind.fields:
            assert fields <= set(kind.fields), (event["type"], fields - set(kind.fields))
            assert set(kind.fields) - kind.optional <= fields, (event["type"], set(kind.fields) - fields)
        seen.add(kind.name)
    assert {events.VOTE_GRANTED, events.WRITE_FAILED, events.READ_REFUSED, events.HWM_CHANGED,
            events.NODE_KILLED} <= seen


def test_the_graders_schema_is_built_from_the_declarations():
    pytest.importorskip("pyspark")
    from lab.grade import schema

    for field in schema.EXTRA_FIELDS:
        declared = {KINDS[k].fields[field.name] for k in KINDS if field.name in KINDS[k].fields}
        assert declared and all(repr(schema.SPARK_TYPES[t]) == repr(field.dataType) for t in declared), field.name
    assert schema.REQUIRED == {k.name: k.required for k in KINDS.values() if k.required}
    assert set(schema.CHECKED_TYPES) == {k.name for k in KINDS.values() if k.graded}
    for kind, required in schema.REQUIRED.items():
        assert set(required) <= {f.name for f in schema.EXTRA_FIELDS}, kind


def test_a_field_declared_with_two_types_is_refused(monkeypatch):
    pytest.importorskip("pyspark")
    from lab.grade import schema

    monkeypatch.setitem(KINDS, "odd", events.Kind("odd", events.NODE, {"hwm": events.STR}, frozenset(), False, ()))
    with pytest.raises(TypeError, match="hwm"):
        schema.declared_type("hwm")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kinds_trace_line_is_what_json_dumps_writes(kind):
    """The trace writes the common kinds by hand (a busy node writes several per write): byte for byte the line that
    json.dumps of the record gives, for every declared kind, and for odd values (None, a bool, a float, a list)."""
    import json

    from lab.core.messages import Event
    from lab.ports.trace import format_lines, record

    sample = sample_event(KINDS[kind])
    fields = {name: sample[name] for name in KINDS[kind].fields}
    odd = {name: value for name, value in zip(fields, [None, False, 1.5, [1, "é"], "\"q\"\n"] * 9)}
    for values in (fields, odd):
        event = Event(kind, {"gen": 2, **values} if KINDS[kind].source == events.NODE else dict(values))
        line = format_lines([event], first_seq=7, time=1.25, node="A", boot=3)[0]
        assert line == json.dumps(record(event, seq=7, time=1.25, node="A", boot=3), separators=(",", ":"))
