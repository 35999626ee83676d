"""A counterexample's steps in words (lab.i18n.steps): each template made with its values and read back from its
English gives the same sentence in every language, so a replay of a counterexample's script says its steps in the
reader's language; a sentence of no template stays as it is."""

from __future__ import annotations

import pytest

from lab.core.messages import ReplicationRequest, ReplicationResponse, VoteRequest
from lab.i18n import fields, localize, say
from lab.i18n.scenarios import step_text
from lab.i18n.steps import DELIVERIES, said, step_words
from lab.sim.steps import message_values
from lab.sim.world import World

VALUES = {"src": "C", "dst": "D", "node": "B", "generation": 2, "payload": "v7", "index": 3, "link": "A->B",
          "words": "flush A", "prev": 1, "hwm": 1, "entries": "[2 (g1), 3 (g2)]", "prev_generation": 1, "match": 3,
          "end": 4, "last": 1, "of": 1, "kind": "Ping"}


@pytest.mark.parametrize("template", list(DELIVERIES.values()))
def test_a_step_that_moves_a_message_is_one_sentence_in_each_language(template):
    """A message moved (delivered, lost, duplicated) is said with its move as one sentence: no language chains two
    colons ("B 收到 D 发来的消息：世代 1 的应答：...") nor keeps the English."""
    made = say(template, **{k: VALUES[k] for k in fields(template)})
    for lang in ("es", "zh"):
        said = localize(made, lang)
        assert said != str(made) and "receives" not in said and "network" not in said
        assert said.count(":") + said.count("：") <= 1, said


WORLD_STEPS = [("campaign", "A"), ("deliver", "A->B", "VoteRequest"), ("deliver", "B->A", "VoteResponse"),
               ("write", "e1", "to", "A"), ("deliver", "A->C", "ReplicationRequest"), ("kill", "C"),
               ("cut", "A->B"), ("heal",)]


def test_a_step_is_data_before_it_is_taken_and_said_in_each_language_from_it():
    """What a trace keeps of a counterexample's step is its record (no sentence), taken from the world just before
    the step; said from it, it is the same sentence the explorer tells after the step, in every language."""
    import json

    from lab.explore.explain import narrate
    from lab.sim.steps import step_record

    world = World(3, fast=True)
    for words in WORLD_STEPS:
        kept = json.loads(json.dumps(step_record(words, world)))  # (as a trace line holds it)
        assert world.apply(words) is not None
        told_after = narrate(words, world)
        assert all(isinstance(v, (str, int)) for v in kept.values()), kept
        assert not any(" " in v for k, v in kept.items() if isinstance(v, str) and k not in ("message", "what",
                                                                                            "entries", "words"))
        for lang in ("en", "es", "zh"):
            assert localize(said(kept), lang) == localize(told_after, lang), (words, lang)
    assert said({"what": "deliver", "message": "no such kind", "src": "A", "dst": "B"}) is None
    assert said({"what": "campaign", "node": "A"}) is None  # (a record short of a value: not said wrong)


def test_the_steps_of_a_world_are_said_in_spanish_and_chinese():
    world = World(3, fast=True)
    spoken = []
    for words in WORLD_STEPS[:6]:
        assert world.apply(words) is not None
        node = words[3] if words[0] == "write" else words[1]
        replica = world.replicas.get(node)
        spoken.append(step_words(words, world.last_message if words[0] == "deliver" else None,
                                 replica.generation if replica is not None else 0))
    assert str(spoken[1]) == "B receives from A: vote request for generation 1 (log end 0, last generation 0)"
    assert localize(spoken[1], "es") == (
        "B recibe de A una solicitud de voto para la generación 1 (fin del log 0, última generación 0)")
    assert localize(spoken[1], "zh") == "B 收到 A 在世代 1 的投票请求（日志末尾 0，最后世代 0）"


def test_a_sentence_of_no_template_stays_as_it_is():
    """A step's own words (a hand-written script's) are shown as written: nothing reads the lab's English back."""
    assert step_text("B receives from A: vote granted in generation 1") == \
        "B receives from A: vote granted in generation 1"
    assert step_text("3. the student's own words") == "3. the student's own words"


def test_message_values_of_the_core_messages():
    heartbeat = ReplicationRequest(generation=1, leader="A", prev_index=0, prev_generation=0, entries=(),
                                   high_water_mark=0)
    assert message_values(heartbeat) == ("heartbeat", {"generation": 1, "prev": 0, "hwm": 0})
    refused = ReplicationResponse(generation=2, follower="B", success=False, match_index=0, log_end=5)
    assert message_values(refused) == ("refused", {"generation": 2, "end": 5})
    assert message_values(VoteRequest(generation=2, candidate="A", last_index=0, last_generation=0))[1]["generation"] == 2
