"""A scenario's verdict in the reader's language: its result, each expectation (the script's command, what it found)
and why the run stopped; `hwm-lab simulate` and `hwm-lab scenario run` print it."""

from __future__ import annotations

from lab.i18n import Joined, Text, say, word
from lab.i18n.scenarios import command_text

PASS, FAIL = word("verdict", "PASS"), word("verdict", "FAIL")
OK, FAILED = word("mark", "ok"), word("mark", "FAIL")


def summary(verdict) -> Joined:
    """The verdict (lab.harness.scenario.Verdict) as lines: in English, what Verdict.summary() says."""
    lines: list = [say("{scenario} ({truncation}): {result}", scenario=verdict.scenario,
                       truncation=verdict.truncation, result=PASS if verdict.passed else FAIL)]
    for o in verdict.outcomes:
        values = dict(mark=OK if o.ok else FAILED, step=o.step + 1, line=o.line, command=outcome_name(o.name))
        lines.append(Joined(["  ", say("[{mark}] step {step}, line {line}: {command} -- {detail}", detail=o.detail,
                                       **values) if o.detail else
                             say("[{mark}] step {step}, line {line}: {command}", **values)], ""))
    for step, line, command in getattr(verdict, "skipped", ()):
        lines.append(Joined(["  ", say("[skipped] step {step}, line {line}: {command} cannot be done in this state, "
                                       "so the replay goes on without it (as the explorer's shrinker does)",
                                       step=step, line=line, command=command)], ""))
    if verdict.aborted:
        lines.append(Joined(["  ", say("aborted: {why}", why=verdict.aborted)], ""))
    return Joined(lines, "\n")


def outcome_name(name: str) -> Text | str:
    """An outcome's name: a script's command, or `rule ID` for a rule the run broke."""
    if name.startswith("rule "):
        return say("rule {rule}", rule=name.removeprefix("rule "))
    return command_text(name)
