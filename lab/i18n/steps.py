"""A step of the explorer's world in words ("D receives from C: vote request for generation 1 ..."), one sentence
made from its command and the message it moves, and read back from the English a counterexample's script keeps, so that a replay
says each step in the reader's language."""

from __future__ import annotations

import re
from functools import lru_cache

from lab.core.messages import (EpochAnswer, EpochQuery, PreVoteRequest, PreVoteResponse, ReplicationRequest,
                               ReplicationResponse, VoteRequest, VoteResponse)
from lab.i18n import Text, fields, say


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


def _entries(entries) -> str:
    return "[" + ", ".join(f"{e.index} (g{e.generation})" for e in entries) + "]"


def message_values(m) -> tuple[str, dict]:
    """A message's kind (a key of MESSAGES) and the values a reader follows."""
    if isinstance(m, ReplicationRequest):
        if not m.entries:
            return "heartbeat", dict(generation=m.generation, prev=m.prev_index, hwm=m.high_water_mark)
        return "replication", dict(generation=m.generation, entries=_entries(m.entries), prev=m.prev_index,
                                   prev_generation=m.prev_generation, hwm=m.high_water_mark)
    if isinstance(m, ReplicationResponse):
        if m.success:
            return "appended", dict(generation=m.generation, match=m.match_index)
        return "refused", dict(generation=m.generation, end=m.log_end)
    if isinstance(m, (VoteRequest, PreVoteRequest)):
        return "vote request", dict(generation=m.generation, end=m.last_index, last=m.last_generation)
    if isinstance(m, (VoteResponse, PreVoteResponse)):
        return "vote granted" if m.granted else "vote denied", dict(generation=m.generation)
    if isinstance(m, EpochQuery):
        return "epoch query", dict(of=m.of_generation)
    if isinstance(m, EpochAnswer):
        return "epoch answer", dict(end=m.end_index, of=m.of_generation)
    return "other", dict(kind=type(m).__name__)


def step_words(words: tuple[str, ...], message=None, generation: int = 0) -> Text:
    """One step in words: its command's `words`, the message it moves (deliver, drop, duplicate) and the generation
    of its node just after it."""
    head = words[0]
    if head in MOVES:
        src, dst = words[1].split("->")
        kind, values = message_values(message)
        return say(DELIVERIES[head, kind], src=src, dst=dst, **values)
    node = words[3] if head in ("read", "write") else words[1] if len(words) > 1 else ""
    if head in ("campaign", "heartbeat"):
        return say(STEPS[head], node=node, generation=generation)
    if head == "write":
        return say(STEPS[head], payload=words[1], node=node)
    if head == "read":
        return say(STEPS[head], index=words[1], node=node)
    if head == "kill":
        return say(STEPS["kill lose-unsynced" if "lose-unsynced" in words else "kill"], node=node)
    if head in ("restart", "pause", "resume", "sync"):
        return say(STEPS[head], node=node)
    if head in ("cut", "heal"):
        return say(STEPS[head], link=words[1] if len(words) > 1 else "*")
    return say(STEPS["other"], words=" ".join(words))


# ---- read back ------------------------------------------------------------------------------------------------

_VALUE = {"words": r".+", "entries": r"\[[^\]]*\]"}
_WORD = r"[^\s,]+"  # any other value is one word
_NUMBERED = re.compile(r"(\d+)\. (.+)", re.DOTALL)
TEMPLATES = (*DELIVERIES.values(), *STEPS.values())


@lru_cache(maxsize=None)
def _pattern(template: str) -> re.Pattern:
    out, last = [], 0
    for m in re.finditer(r"\{(\w+)\}", template):
        out.append(re.escape(template[last:m.start()]))
        out.append(f"(?P<{m.group(1)}>{_VALUE.get(m.group(1), _WORD)})")
        last = m.end()
    out.append(re.escape(template[last:]))
    return re.compile("".join(out), re.DOTALL)


def _read(sentence: str, templates) -> Text | None:
    for template in templates:
        m = _pattern(template).fullmatch(sentence)
        if m is None:
            continue
        values = {k: int(v) if v.isdigit() and k not in ("payload", "words") else v for k, v in m.groupdict().items()}
        if fields(template) == set(values):
            return say(template, **values)
    return None


def told(sentence: str) -> Text | None:
    """The step a sentence of `step_words` says (its English read back: the template and the values), as a Text
    said in any language; a numbered one ("2. A restarts") keeps its number. None when it is no such sentence."""
    numbered = _NUMBERED.fullmatch(sentence)
    if numbered:
        step = _read(numbered.group(2), TEMPLATES)
        return say("{number}. {step}", number=int(numbered.group(1)), step=step) if step is not None else None
    return _read(sentence, TEMPLATES)
