"""A counterexample's steps in words (lab.i18n.steps): each template made with its values and read back from its
English gives the same sentence in every language, so a replay of a counterexample's script says its steps in the
reader's language; a sentence of no template stays as it is."""

from __future__ import annotations

import pytest

from lab.core.messages import ReplicationRequest, ReplicationResponse, VoteRequest
from lab.i18n import fields, localize, say
from lab.i18n.scenarios import step_text
from lab.i18n.steps import MESSAGES, STEPS, message_words, step_words, told
from lab.sim.world import World

VALUES = {"src": "C", "dst": "D", "node": "B", "generation": 2, "payload": "v7", "index": 3, "link": "A->B",
          "words": "flush A", "prev": 1, "hwm": 1, "entries": "[2 (g1), 3 (g2)]", "prev_generation": 1, "match": 3,
          "end": 4, "last": 1, "of": 1, "kind": "Ping"}


@pytest.mark.parametrize("template", [t for t in STEPS.values() if "{what}" not in t])
def test_each_step_reads_back_from_its_english(template):
    made = say(template, **{k: VALUES[k] for k in fields(template)})
    back = told(str(made))
    assert back is not None and (back.msgid, back.args) == (made.msgid, made.args)
    for lang in ("es", "zh"):
        assert localize(back, lang) == localize(made, lang) != str(made)


@pytest.mark.parametrize("message", list(MESSAGES.values()))
def test_each_message_of_a_delivery_reads_back_inside_its_step(message):
    made = say(STEPS["deliver"], src="C", dst="D", what=say(message, **{k: VALUES[k] for k in fields(message)}))
    back = told(f"12. {made}")
    assert back is not None and str(back) == f"12. {made}"
    for lang in ("es", "zh"):
        assert localize(back, lang) == f"12. {localize(made, lang)}" and "receives" not in localize(back, lang)


def test_the_steps_of_a_world_are_said_then_read_back_in_spanish_and_chinese():
    world = World(3, fast=True)
    said = []
    for words in [("campaign", "A"), ("deliver", "A->B", "VoteRequest"), ("deliver", "B->A", "VoteResponse"),
                  ("write", "e1", "to", "A"), ("deliver", "A->C", "ReplicationRequest"), ("kill", "C")]:
        assert world.apply(words) is not None
        node = words[3] if words[0] == "write" else words[1]
        replica = world.replicas.get(node)
        said.append(step_words(words, world.last_message if words[0] == "deliver" else None,
                               replica.generation if replica is not None else 0))
    assert str(said[1]) == "B receives from A: vote request for generation 1 (log end 0, last generation 0)"
    for number, text in enumerate(said, start=1):
        back = step_text(f"{number}. {text}")
        assert localize(back, "es") == f"{number}. {localize(text, 'es')}"
        assert localize(back, "zh") == f"{number}. {localize(text, 'zh')}"
    assert localize(step_text("2. " + str(said[1])), "es") == (
        "2. B recibe de A: solicitud de voto para la generación 1 (fin del log 0, última generación 0)")


def test_a_sentence_of_no_template_stays_as_it_is():
    assert told("3. the student's own words") is None
    assert told("B crashes loudly") is None
    assert step_text("3. the student's own words") == "3. the student's own words"


def test_message_words_of_the_core_messages():
    heartbeat = ReplicationRequest(generation=1, leader="A", prev_index=0, prev_generation=0, entries=(),
                                   high_water_mark=0)
    assert str(message_words(heartbeat)) == "heartbeat of generation 1 (after index 0, HWM 0)"
    refused = ReplicationResponse(generation=2, follower="B", success=False, match_index=0, log_end=5)
    assert localize(message_words(refused), "es") != str(message_words(refused))
    assert "2" in str(message_words(VoteRequest(generation=2, candidate="A", last_index=0, last_generation=0)))
