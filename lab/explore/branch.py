"""A counterexample to stand in: its steps as choices of the explorer's world, a state among them, the choices
enabled there and each rule's status; take another choice and the run branches; save the branch as a script that
`hwm-lab simulate --script` replays to the same state."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from lab.core.config import node_names
from lab.core.monitor import Violation
from lab.explore.counterexample import SCRIPT, TRACE, step_lines
from lab.explore.explain import TITLES, narrate, rule_words
from lab.harness.commands import ScenarioError
from lab.harness.script import Scenario, parse
from lab.i18n import Text, say
from lab.sim.choices import WALK_KINDS, Bounds
from lab.sim.world import ALWAYS, SEGMENT_BYTES, World

# What a student may choose in the browser: every kind of choice, and bounds far beyond a lesson's run (the search's
# bounds keep a breadth-first search finite; a student's clicks are finite by themselves).
OPEN = Bounds(writes=99, generation=99, kills=99, per_link=4, kinds=WALK_KINDS)
BRANCH = "branch-{n}.txt"  # a saved branch, beside the counterexample it came from
_NUMBERED = re.compile(r"^\d+\.\s*")


@dataclass(frozen=True)
class Rule:
    """A rule's status at a state: it holds so far, or the last step broke it (the run ends there)."""

    check: str
    title: Text
    broken: Text | str | None = None
    checked: bool = True  # False: the script's `rules` header leaves it out of this run

    def as_dict(self) -> dict:
        return {"check": self.check, "title": self.title, "broken": self.broken, "checked": self.checked}


def find_script(path: str | Path) -> Path:
    """The counterexample a path names: a script file, an `hwm-lab explore --out` folder, or its trace folder."""
    path = Path(path).expanduser()
    for candidate in (path, path / SCRIPT, path.parent / SCRIPT if path.name == TRACE else None):
        if candidate is not None and candidate.is_file():
            return candidate
    raise ValueError(say("no counterexample in {path}: give the folder hwm-lab explore --out wrote, or its script",
                         path=str(path)))


class Branch:
    """The steps of a run of the explorer's world (each a choice, as the script's words, and its narration) and
    `at`, how many of them lead to the state shown."""

    def __init__(self, scenario: Scenario, impl: str, steps: list[tuple[tuple[str, ...], str]],
                 source: Path | None = None):
        if scenario.network != "manual":
            raise ValueError(say("this script runs on a timed network: only a counterexample (network manual) can "
                                 "be explored step by step"))
        self.scenario, self.impl, self.steps, self.source = scenario, impl, list(steps), source
        self.at = len(self.steps)

    @classmethod
    def open(cls, path: str | Path, impl: str | None = None) -> "Branch":
        script = find_script(path)
        try:
            scenario = parse(script.read_text(encoding="utf-8"), script.stem)
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(say("cannot read {path}: {error}", path=str(script), error=str(exc))) from None
        except ScenarioError as exc:
            raise ValueError(exc.args[0]) from None
        steps = []
        for step in scenario.steps:
            if len(step.commands) != 1:
                raise ValueError(say("step {step} of {path} is not one choice: only a counterexample's steps can "
                                     "be explored", step=len(steps) + 1, path=str(script)))
            steps.append((step.commands[0].words, _NUMBERED.sub("", step.text)))
        return cls(scenario, impl or scenario.impl or "solutions", steps, script)

    # ---- the state ------------------------------------------------------------------------------------------

    def world(self) -> tuple[World, Violation | None]:
        """The world after the first `at` steps, and the rule the last of them broke (None: none did)."""
        s = self.scenario
        world = World(s.nodes, truncation=s.truncation, impl=self.impl, fast=True, defer_sync=s.sync == "manual",
                      fsync={n: s.fsync.get(n, "always") for n in node_names(s.nodes)},
                      segment_bytes=s.segment_bytes or SEGMENT_BYTES)
        broken = None
        for number, (words, _) in enumerate(self.steps[:self.at], start=1):
            if world.apply(words) is None:
                raise ValueError(say("step {step} ({words}) cannot be done in its state", step=number,
                                     words=" ".join(words)))
            found = [v for v in world.violations() if not s.rules or v.check in (*s.rules, *ALWAYS)]
            if found:
                broken = found[0]
                if number < self.at:  # the run ended there (as `simulate --script` ends it): no state after
                    raise ValueError(say("step {step} broke a rule: the run ends there", step=number))
        return world, broken

    def choices(self) -> list[tuple[tuple[str, ...], Text]]:
        """Every choice enabled at the state shown, with what it does in words (told from a copy of the world that
        took it); none once a rule is broken (the run ends there)."""
        world, broken = self.world()
        if broken is not None:
            return []
        enabled = []
        for words in world.choices(OPEN):
            copy = world.clone()
            done = copy.apply(words)
            if done is not None:
                enabled.append((words, narrate(done, copy)))
        return enabled

    def rules(self) -> list[Rule]:
        """Each rule's status at the state shown."""
        _, broken = self.world()
        asked = set(self.scenario.rules)
        return [Rule(check, title, rule_words(broken) if broken is not None and broken.check == check else None,
                     not asked or check in asked or check in ALWAYS) for check, title in TITLES.items()]

    # ---- moving and branching -------------------------------------------------------------------------------

    def go(self, at: int) -> None:
        if not 0 <= at <= len(self.steps):
            raise ValueError(say("there is no step {step}: the states of this run are after steps 0 to {count}",
                                 step=at, count=len(self.steps)))
        self.at = at

    def take(self, words: tuple[str, ...]) -> None:
        """Take a choice at the state shown: the steps after it are left, the run goes on by this one."""
        world, broken = self.world()
        if broken is not None:
            raise ValueError(say("a rule is broken here: the run ends at this step; go back to take another choice"))
        words = tuple(str(w) for w in words)
        if words not in world.choices(OPEN):
            raise ValueError(say("{words} is not a choice enabled at this state", words=" ".join(words)))
        done = world.apply(words)
        self.steps[self.at:] = [(done, str(narrate(done, world)))]
        self.at = len(self.steps)

    def view(self) -> dict:
        """What the explorer's panel shows: where the run stands, the choices enabled there, each rule's status."""
        return {"at": self.at, "total": len(self.steps), "source": str(self.source) if self.source else None,
                "choices": [{"words": list(words), "label": label} for words, label in self.choices()],
                "rules": [rule.as_dict() for rule in self.rules()]}

    # ---- the script -----------------------------------------------------------------------------------------

    def trace(self, out: str | Path) -> None:
        """The trace of every step of the branch, written by the replay `hwm-lab simulate --script` runs."""
        from lab.harness.scenario import replay

        replay(parse(self.script(len(self.steps)), "branch"), impl=self.impl, out=out)

    def script(self, upto: int | None = None) -> str:
        """The steps up to the state shown (or `upto`), as a script `hwm-lab simulate --script` replays to it."""
        s, upto = self.scenario, self.at if upto is None else upto
        origin = self.source.name if self.source else s.name
        lines = [f"# {origin} → hwm-lab replay --explore: hwm-lab simulate --script FILE",
                 *([f"counterexample {s.counterexample}"] if s.counterexample else []),
                 f"nodes {s.nodes}", f"truncation {s.truncation}", "network manual", f"sync {s.sync}"]
        lines += [f"fsync {node} {policy}" for node, policy in sorted(s.fsync.items())]
        if s.segment_bytes:
            lines.append(f"segment-bytes {s.segment_bytes}")
        lines.append(f"impl {self.impl}")
        if s.rules:
            lines.append(f"rules {','.join(s.rules)}")
        lines.append("")
        steps = self.steps[:upto]
        lines += step_lines([w for w, _ in steps])
        return "\n".join(lines) + "\n"

    def save(self, folder: str | Path | None = None) -> Path:
        """Write the script beside the counterexample (branch-1.txt, branch-2.txt...): written aside, then put in
        place, so an interrupted save leaves nothing half-written."""
        folder = Path(folder) if folder is not None else (self.source.parent if self.source else Path("."))
        n = 1
        while (folder / BRANCH.format(n=n)).exists():
            n += 1
        path = folder / BRANCH.format(n=n)
        aside = folder / f".{path.name}.{os.getpid()}.tmp"
        aside.write_text(self.script(), encoding="utf-8")
        os.replace(aside, path)
        return path


def state_of(world: World) -> dict:
    """What a state is, as data to compare: each node's state, role, generation, log and mark, and the messages in
    flight (a state reached twice, by the explorer's page and by `simulate --script`, gives equal dicts)."""
    nodes = {}
    for name in world.names:
        r = world.replicas[name]
        entries = r.log._entries if r is not None else list(world.logs[name].entries())
        nodes[name] = {"state": world.states[name], "role": r.role if r else None,
                       "generation": r.generation if r else None, "hwm": r.high_water_mark if r else None,
                       "log": [[e.index, e.generation, e.payload] for e in entries]}
    flight = sorted(f"{s}->{d} {type(m).__name__} {m!r}" for s, d, m in world.inflight)
    return {"nodes": nodes, "in_flight": flight}
