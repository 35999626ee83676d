"""Two searches over the runs of a World, both deterministic for a seed: breadth-first with visited-state hashing
to a depth bound (as DSLabs does), then seeded random walks under random fault mixes (swarm testing).

A run is a list of choices; the first rule a step breaks ends the search with that run. A step that reaches a
function not written yet (NotImplementedError) is left out, with the runs that go through it: the search covers
what the code written so far can do, and says which functions cut it short.
"""

from __future__ import annotations

import gc
import random
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Callable

from lab.core.monitor import Violation
from lab.core.rules import STATE_CHECKS
from lab.explore import parallel
from lab.sim.reach import Reach
from lab.sim.world import ALWAYS, SEGMENT_BYTES, WALK_KINDS, Bounds, World


# The rules of the cluster's state that a run is checked against as it goes (the grader's others, liveness and the
# scenario's expectations, are read from whole traces)
CLUSTER_RULES = frozenset(STATE_CHECKS - {"liveness", "scenario"})


@dataclass(frozen=True)
class Config:
    """One cluster to search: its size, truncation strategy and implementation."""

    nodes: int = 3
    truncation: str = "generation"
    impl: str = "solutions"
    limit: float = 1.0
    rules: frozenset | None = None  # only these checks count (None: every rule, and the student's faults)
    segment_bytes: int = SEGMENT_BYTES

    def world(self, **extra) -> World:
        return World(self.nodes, truncation=self.truncation, impl=self.impl, limit=self.limit,
                     segment_bytes=self.segment_bytes, **({"fast": True} | extra))

    def broken(self, world: World) -> list[Violation]:
        found = world.violations()
        if self.rules is None:
            return found
        return [v for v in found if v.check in self.rules or v.check in ALWAYS]



@dataclass
class Found:
    config: Config
    choices: list  # the script words of each step, in order
    violation: Violation
    search: str  # "bfs" or "walk"


@dataclass
class Figures:
    states: int = 0  # steps taken (every successor made)
    distinct: int = 0  # distinct states reached by the breadth-first search
    depth: int = 0  # the deepest level the breadth-first search finished, or the longest walk
    walks: int = 0
    walk_steps: int = 0
    seconds: float = 0.0
    bfs_seconds: float = 0.0
    bytes_per_state: int = 0  # the memory one state of the breadth-first search takes, measured as it began
    bfs_bound: int = 0  # the distinct states the breadth-first search may hold: its memory over bytes_per_state
    called: set = field(default_factory=set)  # the student's functions the search called
    unwritten: set = field(default_factory=set)  # those not written yet: the runs that reach them are left out
    reach: Reach = field(default_factory=Reach)  # the choices made, the calls' inputs, the lines of code run

    def heard(self, world: World) -> None:
        self.called |= world.called
        self.unwritten |= world.unwritten

    def as_dict(self) -> dict:
        rate = self.states / self.seconds if self.seconds else 0.0
        return {"states": self.states, "distinct_states": self.distinct, "depth": self.depth, "walks": self.walks,
                "states_per_second": round(rate, 1), "seconds": round(self.seconds, 3),
                "bytes_per_state": self.bytes_per_state, "bfs_bound": self.bfs_bound,
                "left_out": sorted(self.unwritten), "reach": self.reach.as_dict()}


class OutOfTime(Exception):
    pass


def run(config: Config, choices, **extra) -> tuple[list, Violation | None, World]:
    """Replay choices from the start, skipping those that cannot be done; stops at the first broken rule."""
    world = config.world(**extra)
    done = []
    for choice in choices:
        try:
            words = world.apply(tuple(choice))
        except NotImplementedError:  # this run needs a function not written yet: it breaks nothing written
            return done, None, world
        if words is None:
            continue
        done.append(words)
        found = config.broken(world)
        if found:
            return done, found[0], world
    return done, None, world


def bfs(config: Config, bounds: Bounds, *, depth: int, max_states: int, deadline: float, figures: Figures,
        tick: Callable[[], None] = lambda: None, jobs: int = 1) -> Found | None:
    """Breadth-first from the start, level by level, up to `depth` choices or `max_states` distinct states; with
    `jobs` > 1, a large frontier's levels in that many processes (lab/explore/parallel.py: the same runs found)."""
    root = config.world(reach=figures.reach)
    try:
        return _bfs(config, root, bounds, depth, max_states, deadline, figures, tick, jobs)
    finally:
        figures.heard(root)  # its clones share what they heard


def _bfs(config, root, bounds, depth, max_states, deadline, figures, tick, jobs=1) -> Found | None:
    seen = {root.key()}
    frontier = [(root, ())]
    for level in range(1, depth + 1):
        if jobs > 1 and len(frontier) >= jobs * parallel.SPLIT:
            return parallel.levels(sys.modules[__name__], config, frontier, seen, bounds, level, depth, max_states,
                                   deadline, figures, tick, jobs)
        following = []
        for item in _level(config, frontier, bounds, seen, figures, deadline, tick):
            if isinstance(item, Found):
                return item
            child, path, key = item
            seen.add(key)
            figures.distinct += 1
            if len(seen) >= max_states:
                return None
            following.append((child, path))
        figures.depth = max(figures.depth, level)
        frontier = following  # the level's dropped worlds are freed as they go: they hold no cycle (World._view)
        if not frontier:
            break
    return None


def _level(config, frontier, bounds, seen, figures, deadline, tick):
    """The successors of one level's `frontier`, in order: each whose state is not in `seen` as (world, run, key),
    or, last, the first run that breaks a rule (a Found). The caller adds the keys it keeps to `seen`."""
    made = figures.reach.made
    for world, path in frontier:
        for choice in world.choices(bounds):
            if choice[0] == "read":  # a read changes no state (its successor is its parent): judged in place
                found = _read_in_place(config, world, choice, path, figures)
                if found:
                    yield found
                    return
                continue
            child = world.clone()
            try:
                words = child.apply(choice)
            except NotImplementedError:  # a function not written yet: this branch is left out
                continue
            if words is None:
                continue
            figures.states += 1
            made(words)
            found = config.broken(child)
            if found:
                yield Found(config, [*path, words], found[0], "bfs")
                return
            key = child.key()
            if key in seen:
                continue
            yield child, (*path, words), key
            if not figures.states & 255:
                tick()
                if time.monotonic() > deadline:
                    raise OutOfTime


def _read_in_place(config, world, choice, path, figures) -> Found | None:
    """A read judged on the world itself, not on a copy: it steps no node's state (the replica answers; the rules
    and the judge of check_read look), so the world stays the state it was."""
    try:
        words = world.apply(choice)
    except NotImplementedError:  # check_read not written yet: the runs that read are left out
        return None
    if words is None:
        return None
    figures.states += 1
    figures.reach.made(words)
    found = config.broken(world)
    return Found(config, [*path, words], found[0], "bfs") if found else None


BFS_MEMORY = 32 * 2**20  # bytes the breadth-first searches of one search may hold (--memory)
SAMPLE = 200  # distinct states over which a breadth-first search's bytes per state are measured (at 3 nodes,
# 200 and 400 give the same kilobytes)
_MEASURED: dict = {}  # (nodes, truncation, impl, segment bytes) -> bytes per state, measured once per process
LARGEST = 16 * 1024  # bytes per state when they cannot be measured: about the most measured (20,000 states deep)


def measured(config: Config, bounds: Bounds) -> int:
    """The bytes one distinct state of a breadth-first search takes (its world, its key, its place in the
    frontier): a first search of SAMPLE states traced by tracemalloc, at its peak, rounded up to a kilobyte (the
    same on every machine with this Python, so the bound, hence the search, does not depend on the machine)."""
    import tracemalloc

    known = (config.nodes, config.truncation, config.impl, config.segment_bytes)
    if known in _MEASURED:
        return _MEASURED[known]
    if tracemalloc.is_tracing():  # someone else measures: do not disturb them; the most a state was seen to take
        return LARGEST
    tracemalloc.start()
    try:
        sample = Figures()
        _bfs(config, config.world(reach=Reach()), bounds, 40, SAMPLE, float("inf"), sample, lambda: None)
        per = tracemalloc.get_traced_memory()[1] // max(1, sample.distinct)
    except NotImplementedError:
        return LARGEST
    finally:
        tracemalloc.stop()
    per = _MEASURED[known] = -(-per // 1024) * 1024
    return per


def swarm(rng: random.Random) -> tuple[Bounds, dict[str, float]]:
    """A random fault mix for one walk: which kinds of choice it may make, how often, and its bounds."""
    # A leader's fsync (`sync`) is always among them: a walk without it would never see a leader count itself.
    kinds = {"deliver", "campaign", "write", "sync"} | {k for k in sorted(WALK_KINDS - {"sync"}) if rng.random() < 0.5}
    if "cut" in kinds:
        kinds.add("heal")
    if "kill" in kinds:
        kinds.add("restart")
    if "pause" in kinds:
        kinds.add("resume")
    weights = {k: (12.0 if k == "deliver" else rng.choice((0.5, 1.0, 2.0, 4.0))) for k in sorted(kinds - {"sync"})}
    weights["sync"] = rng.choice((2.0, 6.0, 12.0))  # a disk as quick as the network, or slower
    bounds = Bounds(writes=rng.randint(1, 6), generation=rng.randint(2, 5), kills=rng.randint(1, 3),
                    per_link=3, kinds=frozenset(kinds))
    return bounds, weights


def signature(world: World) -> tuple:
    """What makes a state worth starting walks from: each node's log generations, mark, role, and whether it is
    down or, restarted, still asks the leader where its log ends."""
    out = []
    for name in world.names:
        r = world.replicas[name]
        out.append((r.role, tuple(e.generation for e in r.log._entries), r.high_water_mark, r.awaiting_epoch_answer)
                   if r else (world.states[name], world.logs[name].log_end))
    return tuple(out)


def parted(world: World) -> bool:
    """Whether one node holds at least two entries that another node's log contradicts (a different entry at the
    first index where they part): the runs from which a truncation across WAL segments is one restart away."""
    logs = [[e.generation for e in world.log_of(name)] for name in world.names]
    for a in logs:
        for b in logs:
            common = 0
            for x, y in zip(a, b):
                if x != y:
                    break
                common += 1
            if len(a) - common >= 2 and len(b) > common:
                return True
    return False


def walk(config: Config, rng: random.Random, length: int, figures: Figures, prefix=(), corpus=None,
         tilt: dict | None = None) -> Found | None:
    """A random walk, from the start or from the end of `prefix` (a run that reached a new kind of state);
    each new kind of state it reaches joins `corpus` (signature -> run), as coverage-guided fuzzers keep inputs.
    `tilt` sets some kinds' weights (and allows them)."""
    bounds, weights = swarm(rng)
    if tilt:
        bounds = replace(bounds, kinds=bounds.kinds | set(tilt))
        weights = {**weights, **tilt}
    world = config.world(reach=figures.reach)
    try:
        return _walk(config, world, rng, length, figures, prefix, corpus, bounds, weights)
    except NotImplementedError:  # the walk reached a function not written yet: it ends there
        return None
    finally:
        figures.heard(world)


def _walk(config, world, rng, length, figures, prefix, corpus, bounds, weights) -> Found | None:
    path = []
    for words in prefix:
        if world.apply(words) is not None:
            path.append(words)
            figures.states += 1
            figures.reach.made(words)
            found = config.broken(world)
            if found:
                return Found(config, path, found[0], "walk")
    for _ in range(length):
        options = world.choices(bounds)
        if not options:
            break
        choice = rng.choices(options, [weights[c[0]] for c in options])[0]
        words = world.apply(choice)
        if words is None:
            continue
        path.append(words)
        figures.states += 1
        figures.walk_steps += 1
        figures.reach.made(words)
        found = config.broken(world)
        if found:
            return Found(config, path, found[0], "walk")
        if corpus is not None and len(corpus) < CORPUS:
            mark = signature(world)
            if mark not in corpus:
                corpus[mark] = len(corpus)
                corpus.setdefault("runs", []).append(tuple(path))
                if parted(world):
                    corpus.setdefault("parted", []).append(tuple(path))
    figures.depth = max(figures.depth, len(path))
    return None


CORPUS = 20_000  # kinds of state kept per cluster to start walks from
PARTED_AFTER = 40  # walks made as they come before the rest lean toward runs whose logs have parted (`_tilted`: a
# truncation of several entries, across segments, needs such logs; the first walks stay as they were, so what the
# grader's short searches and the quick findings find does not change)


def search(configs: list[Config], *, budget: float, seed: int = 0, bfs_depth: int = 6, bfs_states: int | None = None,
           bfs_memory: int = BFS_MEMORY, walk_length: int = 60, progress: Callable[[Figures], None] | None = None,
           max_walks: int | None = None, jobs: int = 1) -> tuple[Found | None, Figures]:
    """Each config's breadth-first search (bounded by memory: `bfs_memory` bytes shared by the configs, over the
    bytes a state takes, measured the same on every machine, so the same seed makes the same run; or by
    `bfs_states` states when given), then random walks over the configs in turn until `budget` seconds are spent,
    or `max_walks` walks are made (a bound by count: the grader's, so that two grades of a class search the same
    runs on a fast or a slow machine)."""
    figures = Figures()
    start = time.monotonic()
    deadline = start + budget
    last = [start]

    def tick():
        now = time.monotonic()
        figures.seconds = now - start
        if progress is not None and now - last[0] >= 1.0:
            last[0] = now
            progress(figures)

    # The collector off: a search holds thousands of worlds, and each automatic collection would walk them all
    # (measured: 2.4x the distinct states per second). A dropped world holds no cycle (World._view): its reference
    # count frees it; what else a walk leaves in cycles (the student's code may make some) goes every 200 walks.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for config in configs:  # the breadth-first searches share one bound, so more sizes cost no more
            if bfs_states is not None:
                bound = max(500, bfs_states // len(configs))  # the grader's and the check's, as they were
            else:  # measured on the first size only: a state takes about the same at 3, 4 and 5 nodes (9.3 kB)
                per = figures.bytes_per_state or measured(configs[0], Bounds())
                figures.bytes_per_state = per
                bound = max(1, bfs_memory // len(configs) // per)
            figures.bfs_bound += bound
            found = bfs(config, Bounds(), depth=bfs_depth, max_states=bound, deadline=deadline, figures=figures,
                        tick=tick, jobs=jobs)
            if found:
                return _done(found, figures, start)
        figures.bfs_seconds = time.monotonic() - start
        number = 0
        walked = _with_small_segments(configs)
        corpora = [dict() for _ in walked]
        while time.monotonic() < deadline and (max_walks is None or number < max_walks):
            which = number % len(walked)
            config, corpus = walked[which], corpora[which]
            rng = random.Random(f"{seed}-walk-{number}")
            number += 1
            figures.walks += 1
            prefix, tilt = (), None
            runs = corpus.get("runs")
            if runs and rng.random() < 0.75:
                prefix = runs[rng.randrange(len(runs))]
            if number > PARTED_AFTER:
                prefix, tilt = _tilted(corpus, rng, prefix)
            found = walk(config, rng, walk_length, figures, prefix, corpus, tilt)
            if found:
                return _done(found, figures, start)
            tick()
            if not number % 200:
                gc.collect()
    except OutOfTime:
        pass
    finally:
        if collecting:
            gc.enable()
    return _done(None, figures, start)


# The tilts of the later walks: slow deliveries (writes pile up on a leader before they reach the others, and
# logs part), and restarts (a node whose log has parted is restarted from its WAL).
SLOW = {"deliver": 3.0, "write": 4.0, "drop": 2.0}
RESTARTS = {"kill": 4.0, "restart": 4.0}


def _tilted(corpus: dict, rng: random.Random, prefix: tuple) -> tuple[tuple, dict | None]:
    """Where a walk after the first PARTED_AFTER starts, and how it leans: a quarter from runs whose logs have
    parted (half of them killing and restarting nodes), some with slow deliveries (a third of the rest, or more when
    no logs have parted yet); the rest as the first walks."""
    parted_runs = corpus.get("parted")
    r = rng.random()
    if r < 0.25 and parted_runs:
        return parted_runs[rng.randrange(len(parted_runs))], RESTARTS if r < 0.125 else None
    if r < 0.6:
        return prefix, SLOW
    return prefix, None


SMALL_SEGMENTS = 20  # bytes: one entry per segment file, so that a short log already spans several


def _with_small_segments(configs: list[Config]) -> list[Config]:
    """The walks' clusters: each config, then each again with a segment file per entry. With the world's own
    segments (two entries each) a truncation that spans segments needs a log of three entries cut in its first two,
    which random walks seldom make; with one entry each, any cut below a log's end spans segments."""
    return [c for config in configs for c in (config, replace(config, segment_bytes=SMALL_SEGMENTS))]


def _done(found, figures, start):
    figures.seconds = time.monotonic() - start
    return found, figures
