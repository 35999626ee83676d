"""Questions to the room about the next step: a script's `ask` lines (or a read the instructor is about to make),
their choices and their answer computed from the lab's own model, never typed by hand.

The model is the scenario run on the simulator with the reference solutions, once per seed of SEEDS: a question
is offered only when every run gives it the same answer, and its choices are that answer and the outcomes a
reader might expect instead (the mark not moving, the entries a node held before, the article's `sorted[n / 2]`).
The reason a reveal gives is said from the lab's rules with the model's own figures.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from lab.core.config import TIMING, node_names, wait_seconds
from lab.core.events import BECAME_LEADER, FOLLOWER_APPEND, LEADER_APPEND, NODE_KILLED, NODE_RESTARTED, TRUNCATED
from lab.harness.commands import parse_ask
from lab.harness.scenario import Run, SimDriver
from lab.i18n import Joined, Text, node_list, say
from lab.sim.cluster import SimCluster

SEEDS = (0, 1, 2, 3, 4)  # the model's runs of a scenario: a question whose answer differs between them is not asked
MOST_CHOICES = 4
SERVED, REFUSED, DOWN = "served", "refused", "down"  # a read's outcomes
NO_LEADER = ""
DOWN_STATES = ("killed", "exited", "paused", "starting")


@dataclass(frozen=True)
class Ask:
    """A question's kind and what it is about: hwm and entries of a node, a read of an index on a node, the leader."""

    kind: str
    node: str | None = None
    index: int | None = None

    @classmethod
    def of(cls, command) -> "Ask":
        return cls(*parse_ask(command))


@dataclass(frozen=True)
class Question:
    """A question as the room is asked it: the prompt, the choices (their labels and the outcome each stands for),
    which one is right, and why."""

    ask: Ask
    prompt: Text
    labels: tuple
    values: tuple
    right: int
    why: Text
    source: dict  # {"scenario": "k1", "step": 5}, or {"live": True}

    def value_label(self, value):
        """An outcome as a choice says it (also one no choice names: what a stage that broke the rules did)."""
        return self.labels[self.values.index(value)] if value in self.values else _label(self.ask.kind, value)


# ---- what a state says about a question ----------------------------------------------------------------------

def _node(status: dict, name: str) -> dict:
    return next((n for n in status.get("nodes") or [] if n["id"] == name), {})


def outcome(ask: Ask, status: dict):
    """The answer a cluster's state gives: a node's mark, the payloads it holds, a read's fate by the lab's rule
    (a node serves an index only at or below its high-water mark), or who leads."""
    node = _node(status, ask.node) if ask.node else {}
    if ask.kind == "hwm":
        return node.get("hwm", 0)
    if ask.kind == "entries":
        return tuple(str(e[2]) for e in node.get("log") or [])
    if ask.kind == "read":
        if node.get("state", "running") in DOWN_STATES:
            return DOWN
        return SERVED if 1 <= ask.index <= min(node.get("hwm", 0), node.get("log_end", 0)) else REFUSED
    return status.get("leader") or NO_LEADER


def _label(kind: str, value):
    if kind == "entries":
        return " ".join(value) if value else say("no entries")
    if kind == "read":
        return {SERVED: say("served"), REFUSED: say("refused"), DOWN: say("no answer: the node is down")}[value]
    if kind == "leader":
        return value or say("no leader")
    return str(value)


def prompt(ask: Ask, live: bool = False) -> Text:
    if ask.kind == "hwm":
        return say("Where will {node}'s high-water mark be after this step?", node=ask.node)
    if ask.kind == "entries":
        return say("Which entries will {node} hold after this step?", node=ask.node)
    if ask.kind == "read" and live:
        return say("A client now reads index {index} from {node}: will it be served?", index=ask.index, node=ask.node)
    if ask.kind == "read":
        return say("After this step a client reads index {index} from {node}: will it be served?", index=ask.index,
                   node=ask.node)
    return say("Who will lead after this step?")


# ---- choices ---------------------------------------------------------------------------------------------------

def candidates(ask: Ask, before: dict, after: dict, events: list[dict]) -> list:
    """The outcomes to offer, the true one first: what a reader might expect instead, from the same states."""
    truth = outcome(ask, after)
    if ask.kind == "read":
        down = _node(before, ask.node).get("state") in DOWN_STATES or truth == DOWN
        return [truth, SERVED, REFUSED] + ([DOWN] if down else [])
    if ask.kind == "leader":
        return [truth, *[n["id"] for n in after.get("nodes") or []], NO_LEADER]
    was, now = _node(before, ask.node), _node(after, ask.node)
    if ask.kind == "hwm":
        found = [truth, was.get("hwm", 0), now.get("log_end", 0), _sorted_middle(after)]
        return [v for v in found if v is not None] + [truth + 1, max(0, truth - 1)]
    held = tuple(str(e[2]) for e in was.get("log") or [])
    written = tuple(str(e["payload"]) for e in events if e.get("type") == LEADER_APPEND and e.get("payload"))
    leader = _node(after, after.get("leader") or "")
    found = [truth, held, held[:was.get("hwm", 0)] + written, tuple(str(e[2]) for e in leader.get("log") or [])]
    found += [outcome(replace(ask, node=n["id"]), after) for n in after.get("nodes") or []]
    return found + [held + written, truth[:-1]]


def _sorted_middle(status: dict) -> int | None:
    """The article's rule for the leader's mark: its match indexes sorted ascending, the one at [n / 2] (right
    for odd sizes only: with 4 nodes it takes what 2 of them hold)."""
    leader = _node(status, status.get("leader") or "")
    matches = sorted((leader.get("match_index") or {}).values())
    return matches[len(matches) // 2] if len(matches) == len(status.get("nodes") or []) and matches else None


def choose(ask: Ask, found: list) -> tuple[tuple, int]:
    """The true outcome (first in `found`) and the others, at most MOST_CHOICES (a question of who leads names
    every node), in an order that tells nothing: numbers and lists ascending, nodes by name, a read's as listed."""
    most = len(found) if ask.kind == "leader" else MOST_CHOICES
    kept = [found[0]]
    for value in found[1:]:
        if len(kept) < most and value not in kept and not (ask.kind == "entries" and value == ()):
            kept.append(value)
    if ask.kind == "entries":
        kept.sort(key=lambda v: (len(v), v))
    elif ask.kind == "hwm":
        kept.sort()
    elif ask.kind == "leader":
        kept.sort(key=lambda v: (v == NO_LEADER, v))
    else:
        kept = [v for v in (SERVED, REFUSED, DOWN) if v in kept]
    return tuple(kept), kept.index(found[0])


# ---- why ---------------------------------------------------------------------------------------------------------

def why(ask: Ask, before: dict, after: dict, events: list[dict], truncation: str | None = None) -> Text:
    """The rule that decides the answer, said with the state's own figures (`truncation`: the strategy the
    cluster ran, when its states do not say it)."""
    if ask.kind == "hwm":
        return _why_hwm(ask.node, after)
    if ask.kind == "read":
        node = _node(after, ask.node)
        if outcome(ask, after) == DOWN:
            return say("{node} is down: nobody answers the read.", node=ask.node)
        values = dict(node=ask.node, index=ask.index, hwm=node.get("hwm", 0))
        if outcome(ask, after) == SERVED:
            return say("Index {index} is at or below {node}'s high-water mark {hwm}: it is committed, and {node} "
                       "serves it.", **values)
        leader = _node(after, after.get("leader") or "")
        if leader and leader["id"] != ask.node and ask.index <= leader.get("hwm", 0):
            return say("{node}'s high-water mark is {hwm}, below index {index}, so {node} refuses it; the leader "
                       "{leader}'s mark is {leader_hwm}. A follower learns the mark from its leader's next message: "
                       "this read is stale, safe but not linearizable.", leader=leader["id"],
                       leader_hwm=leader.get("hwm", 0), **values)
        return say("Index {index} is above {node}'s high-water mark {hwm}: a node never serves an entry that may "
                   "not be committed, even one it holds.", **values)
    if ask.kind == "leader":
        won = [e for e in events if e.get("type") == BECAME_LEADER and e.get("node") == after.get("leader")]
        if not after.get("leader"):
            return say("No node leads after this step: no candidate won the votes of a majority.")
        if won:
            return say("{node} won generation {generation} with the votes of {votes}: a node votes only for a "
                       "candidate whose log is at least as up to date as its own.", node=after["leader"],
                       generation=won[-1].get("generation"), votes=node_list(won[-1].get("votes") or []))
        return say("{node} still leads: no election took place in this step.", node=after["leader"])
    return _why_entries(ask.node, before, after, events, truncation)


def _holders(status: dict, index: int, entry) -> list[str]:
    return [n["id"] for n in status.get("nodes") or []
            if len(n.get("log") or []) >= index and list(n["log"][index - 1][:2]) == list(entry[:2])]


def _why_hwm(name: str, after: dict) -> Text:
    node, count = _node(after, name), len(after.get("nodes") or [])
    majority = count // 2 + 1
    hwm, end = node.get("hwm", 0), node.get("log_end", 0)
    if after.get("leader") != name:
        leader = _node(after, after.get("leader") or "")
        if not leader:
            return say("{node} has no leader to tell it a higher mark: a follower learns the high-water mark from "
                       "its leader's messages. Its mark is {hwm}.", node=name, hwm=hwm)
        return say("A follower learns the high-water mark from its leader's messages, and never sets it above the "
                   "entries it holds: {node}'s mark is {hwm}, its leader {leader}'s is {leader_hwm}.", node=name,
                   hwm=hwm, leader=leader["id"], leader_hwm=leader.get("hwm", 0))
    parts = [say("The leader's high-water mark is the highest index that a majority ({majority} of {count}) holds.",
                 majority=majority, count=count)]
    if hwm:
        parts.append(say("Index {index} is held by {nodes}.", index=hwm,
                         nodes=node_list(_holders(after, hwm, node["log"][hwm - 1]))))
    if end > hwm:
        entry = node["log"][hwm]
        holders = _holders(after, hwm + 1, entry)
        if len(holders) >= majority:
            parts.append(say("Index {index} is held by {nodes}, a majority, but its entry is of generation {old}: a "
                             "leader counts replicas only for an entry of its own generation, {generation}.",
                             index=hwm + 1, nodes=node_list(holders), old=entry[1], generation=node.get("generation")))
        else:
            parts.append(say("Index {index} is held only by {nodes}: fewer than {majority}.", index=hwm + 1,
                             nodes=node_list(holders), majority=majority))
    return Joined(parts, " ")


TRUNCATION_WHY = {
    "conflict": lambda: say("they conflict with the leader's entries (another generation at the same index)"),
    "restart-hwm": lambda: say("on restart it cut its log back to its own high-water mark (the high-water-mark "
                               "strategy)"),
    "leader-epoch": lambda: say("the leader said where their generation ended (the leader-epoch strategy)"),
    "lost-tail": lambda: say("they had never been written to its disk"),
}


def rule_why(ask: Ask) -> Text:
    """The rule that decides a question, said without figures: what a reveal says when the stage departed from it
    (the model's figures would tell of a run the room did not watch)."""
    if ask.kind == "hwm":
        return say("The leader's high-water mark is the highest index that a majority holds; a follower learns the "
                   "mark from its leader's messages.")
    if ask.kind == "read":
        return say("A node serves an index only at or below its own high-water mark.")
    if ask.kind == "leader":
        return say("A candidate leads once a majority votes for it, and a node votes only for a candidate whose log "
                   "is at least as up to date as its own.")
    return say("A follower takes its leader's entries, and removes only the entries that conflict with them (or, "
               "with the high-water-mark strategy, everything above its own mark when it restarts).")


def _restarted(name: str, events: list[dict]) -> bool:
    return any(e.get("type") == NODE_RESTARTED and e.get("target") == name for e in events)


def _why_entries(name: str, before: dict, after: dict, events: list[dict], truncation: str | None = None) -> Text:
    parts = []
    truncated = any(e.get("node") == name and e.get("type") == TRUNCATED for e in events)
    if _restarted(name, events) and not truncated:
        strategy = truncation or (after.get("settings") or {}).get("truncation")
        parts.append(say("{node} restarted and kept its whole log: with the {strategy} strategy a restarted node "
                         "removes entries only where its leader's log shows a conflict, and no leader has shown it "
                         "one yet.", node=name, strategy=strategy) if strategy and strategy != "high-water-mark"
                     else say("{node} restarted and kept its whole log.", node=name))
    for e in events:
        if e.get("node") == name and e.get("type") == TRUNCATED:
            reason = TRUNCATION_WHY.get(e.get("reason"), lambda: say("it truncated"))()
            parts.append(say("{node} removed index {index} and after: {reason}.", node=name,
                             index=e.get("from_index"), reason=reason))
        elif e.get("type") == NODE_KILLED and e.get("target") == name and e.get("lost_entries"):
            held = outcome(Ask("entries", name), before)
            lost = held[len(held) - e["lost_entries"]:]
            parts.append(say("{node} lost {entries}: not yet on its disk when its power failed.", node=name,
                             entries=" ".join(lost)))
    appended = [str(e.get("payload")) for e in events if e.get("node") == name
                and e.get("type") in (LEADER_APPEND, FOLLOWER_APPEND)]
    leader = after.get("leader")
    if appended and leader and leader != name:
        parts.append(say("{node} appended {entries}: a follower takes its leader's entries, and its leader {leader} "
                         "holds {held}.", node=name, entries=" ".join(appended), leader=leader,
                         held=" ".join(outcome(Ask("entries", leader), after))))
    elif appended:
        parts.append(say("{node} appended {entries}.", node=name, entries=" ".join(appended)))
    if not parts:
        parts.append(say("Nothing removed or added an entry on {node} in this step: its log is as it was.",
                         node=name))
    held = outcome(Ask("entries", name), after)
    parts.append(say("{node} holds {entries}.", node=name, entries=" ".join(held)) if held
                 else say("{node} holds no entries.", node=name))
    return Joined(parts, " ")


# ---- a question from two states, and from the model ---------------------------------------------------------------

def question(ask: Ask, before: dict, after: dict, events: list[dict], source: dict) -> Question:
    values, right = choose(ask, candidates(ask, before, after, events))
    return Question(ask, prompt(ask), tuple(_label(ask.kind, v) for v in values), values, right,
                    why(ask, before, after, events, source.get("truncation")), source)


def live_read(node: str, index: int, truncation: str | None = None) -> Question:
    """A read the instructor is about to make on the live cluster: its answer is decided when it is made."""
    ask = Ask("read", node, index)
    values = (SERVED, REFUSED, DOWN)
    return Question(ask, prompt(ask, live=True), tuple(_label("read", v) for v in values), values, -1,
                    say("decided by the read"), {"live": True, **({"truncation": truncation} if truncation else {})})


def electable(before: dict, step) -> set[str]:
    """Who could win the step's election, by the vote rule alone (links aside, which only take votes away): a live
    node whose log is at least as up to date (last generation, then length) as the logs of a majority of the live
    nodes, its own included; the node the step tells to campaign, when it could. Nobody, when nobody could."""
    nodes = {n["id"]: n for n in before.get("nodes") or []}
    alive = {name for name, n in nodes.items() if n.get("state") == "running"}
    campaign = None
    for command in step.commands:
        head, *args = command.words
        names = set(nodes) if args and args[0] == "all" else set(args[0].split(",")) if args else set()
        if head == "kill":
            alive -= names
        elif head == "restart":
            alive |= names & set(nodes)
        elif head == "campaign":
            campaign = args[0]

    def up_to(name):
        log = nodes[name].get("log") or []
        return (log[-1][1] or 0, len(log)) if log else (0, 0)
    could = {x for x in alive if sum(up_to(x) >= up_to(v) for v in alive) > len(nodes) // 2}
    return {campaign} if campaign in could else could


def asks_of(scenario, step: int) -> list[Ask]:
    return [Ask.of(c) for c in scenario.steps[step].commands if c.words[0] == "ask"]


class Model:
    """A scenario run on the simulator with the reference solutions, once per seed: every step's states before
    and after it, and its events. The lab's answer to a question about a step, whatever code the stage runs."""

    def __init__(self, scenario, seeds=SEEDS):
        self.scenario = scenario
        self.runs = [self._run(seed) for seed in seeds]

    def _run(self, seed: int) -> list[tuple[dict, dict, list[dict]]]:
        s = self.scenario
        cluster = SimCluster(s.nodes, seed=seed, truncation=s.truncation, impl="solutions",
                             fsync={n: s.fsync.get(n, "always") for n in node_names(s.nodes)},
                             **({"segment_bytes": s.segment_bytes} if s.segment_bytes else {}))
        run = Run(s, SimDriver(cluster), seed=seed, wait_timeout=wait_seconds(TIMING))
        steps, before, seen = [], cluster.status(), 0
        while run.next_step < len(s.steps) and not run.verdict.aborted:
            run.run_step()
            after = cluster.status()
            steps.append((before, after, list(cluster.events[seen:])))
            before, seen = after, len(cluster.events)
        cluster.close()
        return steps

    def questions(self, step: int, replayed: bool = False) -> list[Question]:
        """The questions of a step (0-based) that every run of the model answers alike (and, of who leads, that
        the election's rule leaves to one node: timing never decides an answer)."""
        found = []
        for ask in asks_of(self.scenario, step):
            if any(step >= len(run) for run in self.runs):
                continue
            answers = {outcome(ask, run[step][1]) for run in self.runs}
            if ask.kind == "leader" and answers != electable(self.runs[0][step][0], self.scenario.steps[step]):
                continue
            if len(answers) == 1:
                before, after, events = self.runs[0][step]
                source = {"scenario": self.scenario.name, "step": step + 1, "truncation": self.scenario.truncation,
                          **({"replay": True} if replayed else {})}
                found.append(question(ask, before, after, events, source))
        return found


class Replayed:
    """The questions of a replayed scenario's steps: the model's, with the trace's own strategy (a student's trace
    is judged by the lab's rule, not by what its code did), and where each step ends in the replay, where what the
    run showed is read."""

    def __init__(self, replay):
        from lab.harness import script as scripts
        from lab.harness.commands import ScenarioError

        self.replay, self.questions, self.ends = replay, [], []
        name, steps = replay.meta.get("scenario"), [s["n"] for s in replay.info()["steps"]]
        try:
            scenario = scripts.load(str(name)) if name else None
        except ScenarioError:
            scenario = None
        if scenario is None or len(scenario.steps) != len(steps):
            return  # not one of the scenarios (or not as the scripts have it now): nothing to ask
        model = Model(replace(scenario, truncation=replay.meta.get("truncation") or scenario.truncation))
        self.questions = [model.questions(k, replayed=True) for k in range(len(steps))]
        self.ends = [n - 1 for n in steps[1:]] + [len(replay)]

    def prompts(self) -> list[list[Text]]:
        return [[q.prompt for q in step] for step in self.questions]

    def end_of(self, step: int) -> int:
        """The replay's position once step `step` (from 1) has played."""
        return self.ends[step - 1]
