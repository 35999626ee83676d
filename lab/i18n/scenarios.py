"""The scenario scripts' words (title, description, each step's narration) in the catalogue, keyed by scenario and
step ("s1 step 3"), so that each script stays one file in English."""

from __future__ import annotations

from functools import lru_cache

from lab.core.reasons import WORDS
from lab.core.config import MAX_NODES, node_names
from lab.i18n import NodeList, Text, say, word
from lab.i18n.steps import said as steps_said


NODE_NAMES = frozenset(node_names(MAX_NODES))


def key(name: str, part: str) -> str:
    """The catalogue context of a script's title ("s1 title"), description or step ("s1 step 3", from 1)."""
    return f"{name} {part}"


class Narration(Text):
    """A script's sentence as the room reads it: the scripts mark names of settings as `code`; a page shows the
    words without the marks, in every language."""

    def __new__(cls, text: Text):
        self = str.__new__(cls, unmark(str(text)))
        self.msgid, self.args, self.context = text.msgid, text.args, text.context
        return self

    def say(self, lang: str) -> str:
        return unmark(super().say(lang))

    def __reduce__(self):
        return (Narration, (Text(self.msgid, self.args, self.context),))


def unmark(text: str) -> str:
    """`text` without Markdown's code marks (the backticks)."""
    return text.replace("`", "")


def title(scenario) -> Text:
    """A script's title; an explorer's counterexample's, said from the rule it breaks."""
    if scenario.counterexample:
        from lab.i18n.invariants import TITLES

        check = scenario.counterexample
        return say("Counterexample: {title} ({check})", title=TITLES.get(check, check), check=check)
    return Narration(word(key(scenario.name, "title"), scenario.title))


def description(scenario) -> Text:
    return Narration(word(key(scenario.name, "description"), scenario.description))


def steps(scenario) -> list[Text]:
    """Each step's narration, the catalogue's (a counterexample's steps have none: they are said from their data)."""
    return _steps(scenario)


def _steps(scenario) -> list[Text]:
    return [Narration(word(key(scenario.name, f"step {k}"), step.text))
            for k, step in enumerate(scenario.steps, start=1)]


@lru_cache(maxsize=1)
def _by_text() -> dict[str, Text]:
    from lab.harness import script as scripts
    from lab.harness.commands import ScenarioError

    found = {}
    for path in sorted(scripts.SCENARIO_DIR.glob("*.txt")):
        try:
            scenario = scripts.load(path.stem)
            for step, text in zip(scenario.steps, _steps(scenario)):
                found.setdefault(step.text, text)
        except ScenarioError:
            continue
    return found


def step_caption(event: dict) -> Text | str:
    """What a trace's step event says, in any language: a counterexample's step from its data (lab.i18n.steps),
    any other from its script's words."""
    said = event.get("said")
    if isinstance(said, dict):
        return steps_said(said) or ""
    return step_text(event.get("text", ""))


def step_text(text) -> Text | str:
    """A step's narration as the trace recorded it (English), as a catalogue Text when a script has it; any other
    text (a script's own words) as it is: a counterexample's steps are data (step_caption), never read back."""
    if isinstance(text, Text) or not text:
        return text
    return _by_text().get(str(text)) or unmark(str(text))


def phrase(template: str) -> str:
    """Marks a command's template for the catalogue."""
    return template


# The scripts' commands as the guide and a check name them: a template's words are the command's words, a
# placeholder stands for one word ({payloads}: one or more), and a word of the lab ({spec}) is said in the room's
# language. A command is read by its words, as the runner reads it.
COMMANDS = [template.split(" ") for template in (  # the longest first: "to" is no payload
    phrase("expect hwm {count} on {spec}"),
    phrase("expect log {payloads} on {spec}"),
    phrase("expect read {index} refused on {spec}"),
    phrase("expect read {index} = {payload} on {spec} linearizable"),
    phrase("expect read {index} = {payload} on {spec}"),
    phrase("expect stale-reads {count}"),
    phrase("expect linearizable yes"),
    phrase("expect linearizable no"),
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
    phrase("write {payloads} to {spec} nowait"),
    phrase("write {payloads} to {spec}"),
    phrase("write {payloads}"),
)]


# The commands whose {spec} is the subject of the sentence: their words follow the number of nodes (Spanish "se haya
# detenido", "se hayan detenido"), so each has a second whole sentence for several nodes or all, of context "several".
SEVERAL = frozenset(template.msgid for template in (
    word("several", "expect stopped {spec} fsync failed"),
    word("several", "expect stopped {spec} disk full"),
    word("several", "expect stopped {spec}"),
    word("several", "wait stopped {spec}"),
))


def command_text(command) -> Text | str:
    """A script's command (as a trace or a verdict names it) as a catalogue Text when it is one the scripts know,
    else as it is."""
    words = str(command).split(" ")
    for template in COMMANDS:
        values = _match(template, words)
        if values is not None:
            msgid = " ".join(template)
            several = msgid in SEVERAL and (values.get("spec") == "all" or "," in values.get("spec", ""))
            return Text(msgid, {k: _value(k, v) for k, v in values.items()}, "several" if several else None)
    return str(command)


def _value(name: str, value: str):
    """A command's value as a sentence says it: a word of the lab (`all`, `leader`), a list of nodes (`A,B,C`) as
    the reader's language lists them, any other value as it is."""
    if name in WORDS and value in WORDS[name]:
        return word(name, value)
    nodes = value.split(",")
    if name == "spec" and len(nodes) > 1 and all(n in NODE_NAMES for n in nodes):
        return NodeList(nodes, value)
    return value


def _match(template: list[str], words: list[str]) -> dict | None:
    if not template:
        return {} if not words else None
    head, rest = template[0], template[1:]
    if not (head.startswith("{") and head.endswith("}")):
        return _match(rest, words[1:]) if words and words[0] == head else None
    name = head[1:-1]
    for taken in range(1, len(words) + 1 if name == "payloads" else min(2, len(words) + 1)):
        found = _match(rest, words[taken:])
        if found is not None:
            return {name: " ".join(words[:taken]), **found}
    return None


def extract(fileobj, keywords, comment_tags, options):
    """Babel's extractor for scenario scripts: (line, "pgettext", (context, text), comments) per text."""
    from lab.harness.script import parse

    raw = fileobj.read().decode("utf-8")
    name = options.get("name") or getattr(fileobj, "name", "scenario").rsplit("/", 1)[-1].removesuffix(".txt")
    scenario = parse(raw, name)
    lines = raw.splitlines()

    def line_of(text: str) -> int:
        return next((n for n, line in enumerate(lines, start=1) if text[:40] in line), 1)

    yield 1, "pgettext", (key(name, "title"), scenario.title), []
    if scenario.description:
        yield 2, "pgettext", (key(name, "description"), scenario.description), []
    for k, step in enumerate(scenario.steps, start=1):
        yield line_of(step.text), "pgettext", (key(name, f"step {k}"), step.text), []
