"""The scenario language: a script (lab/sim/scenarios/*.txt) parsed into a Scenario of header values and steps.

A script has header lines (`nodes 3`, `truncation generation`, `fsync B never`), then steps: `step "narration"`
followed by commands (lab.harness.commands); a counterexample's steps are bare (`step`, then one choice of the
explorer's world), their words made from the choice when shown. See docs/scenarios.md for the command reference.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from lab.core import reasons
from lab.core.events import STEP
from lab.core.reasons import Reason
from lab.harness.commands import COMMANDS, ScenarioError, parse_ask
from lab.sim.choices import WALK_KINDS  # the explorer's, a line of a `network manual` script

SCENARIO_DIR = Path(__file__).parent.parent / "sim" / "scenarios"  # data of the simulator's folder

# ---- the script -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    line: int
    words: tuple[str, ...]

    def __str__(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class Step:
    text: str
    commands: tuple[Command, ...]


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    description: str
    nodes: int
    truncation: str
    fsync: dict[str, str]
    steps: tuple[Step, ...]
    liveness_bound: float = 5.0
    segment_bytes: int | None = None  # the write-ahead log's segment size (default: lab.ports.segments.SEGMENT_BYTES)
    # `manual`: every message waits until a command delivers, drops or duplicates it, and the grader's rules are
    # checked after every step (the explorer's counterexamples, lab.explore)
    network: str = "timed"
    rules: tuple[str, ...] = ()  # with `network manual`: only these rules end the run (default: every rule)
    impl: str | None = None  # the code the script was made with (an explorer's counterexample); --impl overrides it
    counterexample: str | None = None  # the rule an explorer's counterexample breaks (its title is said from it)
    # with `network manual`: `manual`, a leader's fsync completes only at a `sync` command (the explorer's
    # counterexamples); `at-once`, in the step that wrote (scripts written before the overlap was modelled)
    sync: str = "at-once"


HEADERS = {"nodes", "truncation", "fsync", "liveness", "segment-bytes", "network", "rules", "impl", "sync",
           "counterexample"}
NETWORKS = ("timed", "manual")
SYNCS = ("at-once", "manual")


def parse(text: str, name: str = "scenario") -> Scenario:
    title, description, nodes, truncation, fsync, liveness = name, [], 3, "generation", {}, 5.0
    segment_bytes, network, rules, impl, sync, counterexample = None, "timed", (), None, "at-once", None
    steps: list[Step] = []
    current: tuple[str, list[Command]] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#"):
            if not steps and current is None:
                if title == name:
                    title = line.lstrip("# ").strip()
                else:
                    description.append(line.lstrip("#").strip())
            continue
        if not line:
            continue
        try:
            words = tuple(shlex.split(line))
        except ValueError as exc:
            raise ScenarioError(Reason(reasons.SCRIPT_AT_LINE, script=name, line=number, error=str(exc))) from exc
        head = words[0]
        if head == STEP:  # `step "what happens and why"`; a bare `step` is the explorer's, said from its choice
            if len(words) > 2 or len(words) == 1 and network != "manual":
                raise ScenarioError(Reason(reasons.SCRIPT_STEP_FORM, script=name, line=number))
            if current:
                steps.append(Step(current[0], tuple(current[1])))
            current = (words[1] if len(words) == 2 else "", [])
        elif current is None and head in HEADERS:
            try:
                if head == "nodes":
                    nodes = int(words[1])
                elif head == "truncation":
                    truncation = words[1]
                elif head == "fsync":
                    fsync[words[1]] = words[2]
                elif head == "liveness":
                    liveness = float(words[1].rstrip("s"))
                elif head == "segment-bytes":
                    segment_bytes = int(words[1])
                elif head == "rules":
                    rules = tuple(r for r in words[1].split(",") if r)
                elif head == "impl":
                    impl = words[1]
                elif head == "counterexample":
                    counterexample = words[1]
                elif head == "network":
                    network = words[1]
                    if network not in NETWORKS:
                        raise ValueError(network)
                elif head == "sync":
                    sync = words[1]
                    if sync not in SYNCS:
                        raise ValueError(sync)
            except (IndexError, ValueError) as exc:
                raise ScenarioError(Reason(reasons.SCRIPT_BAD_HEADER, script=name, line=number,
                                          header=repr(line))) from exc
        elif current is None:
            raise ScenarioError(Reason(reasons.SCRIPT_BEFORE_STEP, script=name, line=number, command=repr(head)))
        else:
            if head not in COMMANDS and head not in WALK_KINDS:
                raise ScenarioError(Reason(reasons.SCRIPT_UNKNOWN, script=name, line=number, command=repr(head),
                                           known=sorted(COMMANDS)))
            if head == "ask":  # a question's words are checked as the script is read, not when the step runs
                parse_ask(Command(number, words))
            current[1].append(Command(number, words))
    if current:
        steps.append(Step(current[0], tuple(current[1])))
    if not steps:
        raise ScenarioError(Reason(reasons.SCRIPT_NO_STEPS, script=name))
    return Scenario(name=name, title=title, description=" ".join(description), nodes=nodes,
                    truncation=truncation, fsync=fsync, steps=tuple(steps), liveness_bound=liveness,
                    segment_bytes=segment_bytes, network=network, rules=rules, impl=impl, sync=sync,
                    counterexample=counterexample)


def available() -> list[str]:
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.txt"))


def load(name_or_path: str, *, file: bool = False) -> Scenario:
    """A scenario by its name (s1), or a script file by its path (`file`: always a path, as `--script` gives one)."""
    path = Path(name_or_path)
    named = not file and not path.suffix and len(path.parts) == 1
    if named:
        path = SCENARIO_DIR / f"{name_or_path.lower()}.txt"
    if not path.is_file():
        if named:
            raise ScenarioError(Reason(reasons.NO_SCENARIO, name=repr(name_or_path), available=list(available())))
        raise ScenarioError(Reason(reasons.NO_SCRIPT_FILE, path=str(path)))
    return parse(path.read_text(encoding="utf-8"), path.stem)
