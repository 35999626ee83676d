"""Sentences the lab's other parts write in English (the nodes' refusals, the supervisor's errors, the scenario
scripts' checks), recognised so that a room can read them in its language.

Each template below is the English sentence with its values as placeholders, exactly as its source writes it,
and it is its own catalogue key. `heard(text)` matches a sentence against them (a sentence nobody knows stays as
it is); the values it captures are recognised in turn (a reason inside a sentence), except data: numbers, node
names and payloads. A placeholder's name says what it may hold (see FIELDS).
"""

from __future__ import annotations

import re
from functools import lru_cache

from lab.core.events import Reason, Reasons
from lab.i18n import Joined, Text, say, word


def phrase(template: str) -> str:
    """Marks an English sentence of another module for the catalogue."""
    return template


NUMBER = r"-?\d+(?:\.\d+)?"
NODE = r"[A-G]"
FIELDS = {  # placeholder name -> what it matches; any other name matches a sentence, recognised in turn
    "node": NODE, "leader": NODE, "candidate": NODE, "other": NODE,
    "nodes": NODE + r"(?:(?:, ?| and )" + NODE + r")*",
    "index": NUMBER, "hwm": NUMBER, "hwm2": NUMBER, "generation": NUMBER, "current": NUMBER, "end": NUMBER,
    "count": NUMBER, "size": NUMBER, "seconds": NUMBER, "step": NUMBER, "theirs": NUMBER, "last_generation": NUMBER,
    "last_index": NUMBER, "own_generation": NUMBER, "own_index": NUMBER, "leaders": NUMBER,
    "address": r"[0-9a-fA-F.:\[\]]+:\d+",
    "payload": r"\S+", "payloads": r"\S+(?: (?!to )\S+)*", "digest": r"[0-9a-f]{16}", "digest2": r"[0-9a-f]{16}",
    "spec": r"[A-G](?:,[A-G])*|all|leader|last-killed", "state": r"[a-z]+", "reason": r"[a-z-]+",
}
WORDS = {  # words that stand for a value but are said in the room's language (context: the placeholder)
    "spec": ("all", "leader", "last-killed"),
    "state": ("running", "killed", "paused", "exited", "stopped", "starting"),
    "reason": ("conflict", "restart-hwm", "leader-epoch", "lost-tail"),
}
# Said by name only, so that the catalogue holds them (the extraction reads literal strings).
_CONTEXT_WORDS = [word("spec", "all"), word("spec", "leader"), word("spec", "last-killed"),
                  word("state", "running"), word("state", "killed"), word("state", "paused"),
                  word("state", "exited"), word("state", "stopped"), word("state", "starting"),
                  word("reason", "conflict"), word("reason", "restart-hwm"), word("reason", "leader-epoch"),
                  word("reason", "lost-tail")]

TEMPLATES = [
    # lab/processes/routing.py: writes and reads through the supervisor
    phrase("timeout: the write was not acknowledged within {seconds}s ({why})"),
    phrase("timeout: node {node} did not answer within {seconds}s; the write may or may not be committed"),
    phrase("connection lost: node {node} did not answer ({error}); the write may or may not be committed"),
    phrase("node {node} did not answer: {error}"),
    # lab/processes/client.py: a node's connection, named by its address
    phrase("node {address} closed the connection"),
    phrase("node {address} sent nothing in time"),
    phrase("node {node} is unreachable ({error})"),
    phrase("node {node} is {state}"),
    phrase("node {node} is already {state}"),
    phrase("node {node} is {state}, not running: only a running node can pause"),
    phrase("node {node} is {state}, not paused"),
    phrase("node {node} is {state}, not running"),
    phrase("no node is running"),
    phrase("the cluster has stopped"),
    # lab/ports/faults.py: why a node's disk stopped it (the OS's words for the error, too)
    phrase("fsync failed: {where} ({error})"),
    phrase("disk full: {where} ({error})"),
    phrase("disk error: {where} ({error})"),
    phrase("disk read-only: {where} ({error})"),
    phrase("disk full (exit code {count}; see its node.log)"),
    phrase("fsync failed (exit code {count}; see its node.log)"),
    phrase("fsync of the write-ahead log"),
    phrase("fsync of the write-ahead log's directory"),
    phrase("appending to the write-ahead log"),
    phrase("writing back the write-ahead log"),
    phrase("saving the generation and vote"),
    phrase("checkpointing the high-water mark"),
    phrase("writing the trace"),
    phrase("writing the boot counter"),
    phrase("setting aside space for its exit reason"),
    phrase("a write to disk"),
    phrase("No space left on device"),
    phrase("Input/output error"),
    phrase("Read-only file system"),
    phrase("Disk quota exceeded"),
    phrase("{node} stopped: {why}"),
    phrase("node {node} stopped: {why}"),
    phrase("node {node} did not take the fault: {error}"),
    phrase("node {node} is paused: resume it first (a paused node takes no requests)"),
    # lab/harness/scenario.py: what an expectation found, why a step stopped
    phrase("leader is {leader}"),
    phrase("{node} removed {entries} ({reason})"),
    phrase("{node} removed from {index} ({reason})"),
    phrase("no truncation"),
    phrase("{node} served it at index {index}"),
    phrase("{count} acknowledged writes"),
    phrase("{count} acknowledged writes: {missing}"),
    phrase("{node} lacks index {index}"),
    phrase("waited {seconds}s for {what}; it did not happen"),
    phrase("waited {seconds}s for {what}; it did not happen; {why}"),
    phrase("a leader"),
    phrase("a leader among {nodes}"),
    phrase("hwm {count} on {nodes}"),
    phrase("log_end {count} on {nodes}"),
    phrase("every live node to hold the leader's whole log, committed"),
    phrase("{nodes} to stop on its own"),
    phrase("{node} acknowledged it at index {index}"),
    phrase("no leader when the step needed one"),
    phrase("write {payload} was not acknowledged: {error}"),
    phrase("step {step}: {error}"),
    # lab/core/invariants.py: the safety check
    phrase("committed entry at index {index} changed: {other} committed generation {generation} ({digest}), "
           "{node} later committed generation {current} ({digest2})"),
    phrase("two leaders in generation {generation}: {other} and {node}"),
    phrase("{node} served index {index} above its high-water mark {hwm}"),
    phrase("{node} truncated committed index {index} (generation {generation})"),
    phrase("{node} holds generation {generation} at committed index {index}, committed as generation {current}"),
    phrase("{other} and {node} disagree at index {index} below both high-water marks ({hwm}, {hwm2})"),
    # web.narrate.humane: entries by index and generation, seconds rather than ticks
    phrase("index {index} (generation {generation})"),
    phrase("{nodes} and {node}"),
    # the scenario scripts' commands, as the guide and a check name them
    phrase("expect hwm {count} on {spec}"),
    phrase("expect log {payloads} on {spec}"),
    phrase("expect read {index} refused on {spec}"),
    phrase("expect read {index} = {payload} on {spec}"),
    phrase("expect generation >= {count} on {spec}"),
    phrase("expect truncated {index} on {spec}"),
    phrase("expect not-truncated on {spec}"),
    phrase("expect never-served {payload}"),
    phrase("expect acked-survive"),
    phrase("expect logs-agree"),
    phrase("expect safety"),
    phrase("expect stopped {spec} fsync failed"),
    phrase("expect stopped {spec} disk full"),
    phrase("expect stopped {spec}"),
    phrase("expect not-acked {payload}"),
    phrase("wait stopped {spec}"),
    phrase("wait hwm {count} on {spec}"),
    phrase("wait log_end {count} on {spec}"),
    phrase("wait leader"),
    phrase("wait leader {spec}"),
    phrase("wait leader among {spec}"),
    phrase("wait converged"),
    phrase("write {payloads}"),
    phrase("write {payloads} to {spec}"),
    phrase("write {payloads} to {spec} nowait"),
]


def _compile(template: str) -> re.Pattern:
    out, last = [], 0
    for m in re.finditer(r"\{(\w+)\}", template):
        out.append(re.escape(template[last:m.start()]))
        out.append(f"(?P<{m.group(1)}>{FIELDS.get(m.group(1), '.+?')})")
        last = m.end()
    out.append(re.escape(template[last:]))
    return re.compile("".join(out))


_COMPILED = [(t, _compile(t)) for t in TEMPLATES]


@lru_cache(maxsize=4096)
def recognise(text: str):
    """`text` as a Text of the catalogue when it is a known sentence (or known sentences joined by "; ");
    else `text` itself."""
    for template, pattern in _COMPILED:
        m = pattern.fullmatch(text)
        if m:
            return Text(template, {k: _value(k, v) for k, v in m.groupdict().items()})
    for sep in ("; ", ", "):
        if sep in text:
            parts = text.split(sep)
            said = [recognise(p) for p in parts]
            if any(isinstance(p, Text) for p in said):
                return Joined(said, sep)
    m = re.fullmatch(r"(" + NODE + r"): (.+)", text)  # "A: not available: ..." (an answer per node)
    if m:
        said = recognise(m.group(2))
        if isinstance(said, Text):
            return say("{node}: {answer}", node=m.group(1), answer=said)
    return text


def _value(name: str, value: str):
    if name in WORDS:
        return word(name, value) if value in WORDS[name] else value
    if name == "nodes":
        return recognise(value) if " and " in value else value
    if name in FIELDS:
        return value
    return recognise(value)


class Heard(Text):
    """An English sentence from elsewhere, recognised only when it must be said in another language."""

    def __new__(cls, text):
        self = str.__new__(cls, text)
        self.msgid, self.args, self.context = None, {}, None
        return self

    def say(self, lang: str) -> str:
        said = recognise(str(self))
        return said.say(lang) if isinstance(said, Text) else str(self)

    def __reduce__(self):
        return (type(self), (str(self),))


def heard(text) -> Text:
    """A sentence written in English elsewhere, to be said in the reader's language when it is known."""
    return text if isinstance(text, (Text, Reason, Reasons)) else Heard("" if text is None else str(text))
