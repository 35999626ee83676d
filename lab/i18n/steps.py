"""A step of the explorer's world in words ("D receives from C: vote request for generation 1 ..."): one sentence
made from its command and the message it moves. A trace keeps the step as data (`record`), and whoever shows it says
it in the reader's language (`said`). The step's data is lab.sim.steps's; nothing here reads English back."""

from __future__ import annotations

from lab.i18n import Text, fields, say
from lab.sim.steps import record


def phrase(template: str) -> str:
    """Marks a step's template for the catalogue."""
    return template


# What happens to a message, in the English of a counterexample's script; each with each kind of message below is one
# sentence of the catalogue (DELIVERIES), so a language says the two as one sentence, not one glued to the other.
MOVES = {
    "deliver": "{dst} receives from {src}: {what}",
    "drop": "The network loses a message from {src} to {dst}: {what}",
    "duplicate": "The network duplicates a message from {src} to {dst}: {what}",
}

# A step by its command's first word (with a word that changes what it says, as `kill ... lose-unsynced`).
STEPS = {
    "campaign": phrase("{node} starts an election for generation {generation}"),
    "heartbeat": phrase("{node}, leader of generation {generation}, sends heartbeats"),
    "write": phrase("A client writes {payload} to {node}"),
    "read": phrase("A client reads index {index} at {node}"),
    "kill": phrase("{node} crashes"),
    "kill lose-unsynced": phrase("{node} crashes and loses what it had not synced"),
    "restart": phrase("{node} restarts"),
    "sync": phrase("{node}'s fsync completes: its log is on its disk"),
    "pause": phrase("{node} pauses"),
    "resume": phrase("{node} resumes"),
    "cut": phrase("The link {link} is cut"),
    "heal": phrase("The link {link} heals"),
    "other": phrase("step {words}"),
}

# A message by its kind (and, for an answer, what it answers), as the script's English says it after a move.
MESSAGES = {
    "heartbeat": "heartbeat of generation {generation} (after index {prev}, HWM {hwm})",
    "replication": "replication request of generation {generation}: entries {entries} after index {prev} "
                   "(generation {prev_generation}), HWM {hwm}",
    "appended": "answer of generation {generation}: appended, match index {match}",
    "refused": "answer of generation {generation}: refused, log end {end}",
    "vote request": "vote request for generation {generation} (log end {end}, last generation {last})",
    "vote granted": "vote granted in generation {generation}",
    "vote denied": "vote denied in generation {generation}",
    "epoch query": "question: where does your log end for generation {of}?",
    "epoch answer": "answer: my log ends at {end} for generation {of}",
    "other": "message {kind}",
}

# Each move of each kind of message, one whole sentence (lab.i18n.extract puts them in the catalogues): its English
# is the move's with the message's in it, as the script writes it, so a step reads back from its script's line.
DELIVERIES = {(move, kind): frame.replace("{what}", message)
              for move, frame in MOVES.items() for kind, message in MESSAGES.items()}


def said(step: dict) -> Text | None:
    """A step's record (`record`) in words, in any language; None for a record this lab does not know."""
    values = {k: v for k, v in step.items() if k not in ("what", "message")}
    template = DELIVERIES.get((step.get("what"), step.get("message"))) if "message" in step else \
        STEPS.get(step.get("what"))
    if template is None or fields(template) != set(values):
        return None
    return say(template, **values)


def step_words(words: tuple[str, ...], message=None, generation: int = 0) -> Text:
    """One step in words: its command's `words`, the message it moves (deliver, drop, duplicate) and the generation
    of its node just after it."""
    return said(record(words, message, generation))
