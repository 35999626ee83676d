"""Benchmark: hwm-lab explore. The breadth-first search's distinct states per second and the random walks' steps per
second on the reference at 3 and 5 nodes, next to the floor measured in the same run (one replica step alone, and
one step of the explorer's world); then the time to the first violation and the shrunk length for every wrong
variant (tests/wrong_variants) and every classic mistake (tests/test_mistakes.py, plus a follower that answers its
log end as match index), each replayed by `hwm-lab simulate --script`; KIP-101 rediscovered under high-water-mark;
and the reference searched for --reference-seconds at 3, 4 and 5 nodes under generation and leader-epoch.

    python bench/explore.py [--reference-seconds 120] [--skip-reference] [--seeds 5] [--budget 10] [--memory 256]
                            [--only-speed] [--skip-speed] [--jobs N] [--save DIR] [--only-refusal]

Each counterexample is then checked as a student would read it: every explanation and feed line against the run's
own states (tests/explanations.py), and 1-minimal for the rule it shows (each step left out in turn, replayed).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.core.interface import FUNCTIONS  # noqa: E402
from lab.core.messages import ReplicationRequest  # noqa: E402
from lab.explore.search import Config, Figures, bfs, measured, search, walk  # noqa: E402
from lab.explore.shrink import shrink  # noqa: E402
from lab.sim.world import Bounds, World  # noqa: E402

VARIANTS = [("ex1_article_formula", 1), ("ex2_no_generation_check", 2), ("ex3_truncates_matching", 3),
            ("ex4_serves_above_hwm", 4), ("ex5_off_by_one", 5), ("ex6_keeps_everything", 6)]


def floor(n: int = 3, count: int = 20000) -> tuple[float, float]:
    """Microseconds of one replica step alone (a follower handling a heartbeat), and of one world step (the same
    delivery through the driver, the ports and the rules' monitor)."""
    world = World(n, fast=True)
    for words in (("campaign", "A"), ("deliver", "A->B", "VoteRequest"), ("deliver", "B->A", "VoteResponse")):
        world.apply(words)
    world.violations()
    beat = ReplicationRequest(generation=1, leader="A", prev_index=0, prev_generation=0, entries=(),
                              high_water_mark=0)
    replica = world.replicas["B"]
    t = time.perf_counter()
    for _ in range(count):
        replica.receive("A", beat)
    alone = (time.perf_counter() - t) / count * 1e6
    t = time.perf_counter()
    for _ in range(count):
        world.inflight.append(("A", "B", beat))
        world.apply(("deliver", "A->B", "ReplicationRequest"))
        world.violations()
        del world.inflight[:]
    stepped = (time.perf_counter() - t) / count * 1e6
    return alone, stepped


# Every function named as a student's: the reference's answers, each call judged by its exercise's rule
# (lab/core/judges.py), as a student's code is in a search; against the reference alone, the judges' cost.
JUDGED = "solutions:" + ",".join(FUNCTIONS)


def bfs_rate(n: int, memory: int, impl: str = "solutions", jobs: int = 1) -> tuple[float, float, int, int, int]:
    """Distinct states per second of a breadth-first search bounded by `memory` bytes, as `explore` bounds it: the
    bytes a state takes, measured first (printed), set how many states it holds."""
    per = measured(Config(n, impl=impl), Bounds())
    states = memory // per
    figures = Figures()
    gc.disable()
    t = time.monotonic()
    bfs(Config(n, impl=impl), Bounds(), depth=40, max_states=states, deadline=float("inf"), figures=figures,
        jobs=jobs)
    seconds = time.monotonic() - t
    gc.enable()
    gc.collect()
    return figures.distinct / seconds, figures.states / seconds, figures.depth, per, states


def walk_rate(n: int, seconds: float) -> float:
    import random

    figures = Figures()
    gc.disable()
    t = time.monotonic()
    number = 0
    while time.monotonic() - t < seconds:
        walk(Config(n), random.Random(f"bench-{number}"), 60, figures)
        number += 1
        if not number % 200:
            gc.collect()
    gc.enable()
    return figures.walk_steps / (time.monotonic() - t)


def hunt(name: str, impl: str, truncation: str, budget: float, rules=None, seed: int = 0,
         save: Path | None = None) -> dict:
    """Search, shrink, replay by `simulate --script`; then check what is shown: each explanation and feed line
    against the run's own states (tests/explanations.py), and that no single step can go with the rule still broken.
    With `save`, the script goes there (tests/explore_cases/bench/ holds the last run's, which the tests replay)."""
    from lab.core.impl import student_functions
    from lab.explore.counterexample import script, tell
    from lab.explore.explain import explanation
    from lab.harness.scenario import simulate
    from tests.explanations import check_explanation, check_feed, one_minimal, replay
    from web.fold import Replay

    configs = [Config(n, truncation, impl, 1.0, frozenset(rules) if rules else None) for n in (3, 4, 5)]
    t = time.monotonic()
    found, figures = search(configs, budget=budget, seed=seed)
    first = time.monotonic() - t
    if found is None:
        return {"name": name, "seed": seed, "found": False, "seconds": first, "states": figures.states}
    t = time.monotonic()
    small = shrink(found, seed=seed)
    shrunk = time.monotonic() - t
    steps, calls, story = tell(small)
    said = explanation(small.violation, steps, calls, students=bool(student_functions(impl)), story=story,
                       truncation=small.config.truncation)
    run = replay(small.config, small.choices)
    problems = check_explanation(said, run, small.violation)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "counterexample.txt"
        text = script(small, steps, seed=seed, impl=impl)
        path.write_text(text)
        verdict = simulate(str(path), impl=impl, out=Path(tmp) / "trace", file=True)
        feed = Replay(Path(tmp) / "trace")
        problems += check_feed(feed.texts, feed.events, run)
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        (save / f"{name}-seed{seed}.txt").write_text(text)
    same = verdict.violation is not None and verdict.violation.detail == small.violation.detail
    return {"name": name, "seed": seed, "found": True, "seconds": first, "search": found.search,
            "nodes": small.config.nodes, "shrunk": shrunk, "steps": len(small.choices), "rule": small.violation.check,
            "replayed": same, "problems": problems,
            "removable": one_minimal(small.config, small.choices, small.violation.check)}


def mistakes(root: Path) -> list[tuple[str, str, str]]:
    """(name, impl, truncation) of each classic mistake, written into a copy of the reference under `root`."""
    from tests.studentcode import StudentCode
    from tests.test_mistakes import MISTAKES, Mistake

    from lab.commands.explore import target

    extra = Mistake("match-index-log-end", 3, "a follower answers its log end as match index", "follower.py",
                    "        match_index=prev_index + len(entries),",
                    "        match_index=(truncate_from - 1 if truncate_from else log.log_end) + len(new),")
    out = []
    for number, m in enumerate((*MISTAKES, extra)):
        code = StudentCode(root / m.id, name=f"mistake_{number}")
        code.edit(m.file, m.old, m.new)
        sys.path.insert(0, str(root / m.id))
        impl, strategy = target(code.name, m.exercise)
        out.append((m.id, impl, strategy))
    return out


def line(r: dict) -> str:
    head = f"  {r['name']:<28} seed {r['seed']}"
    if not r["found"]:
        return f"{head}  NOT FOUND in {r['seconds']:.1f} s ({r['states']:,} steps)"
    out = (f"{head} {r['seconds']:6.2f} s (+{r['shrunk']:.1f} s shrinking)  {r['search']:<4} {r['nodes']} nodes  "
           f"{r['steps']:>2} steps  {r['rule']:<24} replayed: {'yes' if r['replayed'] else 'NO'}  "
           f"1-minimal: {'yes' if not r['removable'] else 'NO'}  explained: {'yes' if not r['problems'] else 'NO'}")
    return "\n".join([out, *(f"      can go: {x}" for x in r["removable"]),
                      *(f"      untrue: {x}" for x in r["problems"])])


def refusal() -> None:
    """How long `hwm-lab explore --exercise 1` takes to say it cannot run, in a handout where only exercise 1 is
    written, beside the floor measured in the same run: `hwm-lab exercise list` there (the interpreter, the lab's
    imports and a look at every exercise)."""
    import subprocess

    from tests.handoututil import LAUNCH

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "lab"
        subprocess.run([sys.executable, "-m", "lab.cli", "handout", "--out", str(folder)], cwd=ROOT, check=True,
                       capture_output=True, timeout=300)
        (folder / "exercises" / "high_water_mark.py").write_text((ROOT / "solutions" / "high_water_mark.py")
                                                                 .read_text())

        def timed(*argv) -> tuple[float, subprocess.CompletedProcess]:
            t = time.monotonic()
            done = subprocess.run([sys.executable, "-c", LAUNCH, "lab.cli", *argv], cwd=folder, capture_output=True,
                                  text=True, timeout=300)
            return time.monotonic() - t, done

        timed("exercise", "list")  # (the first start compiles the handout's modules)
        floors, refusals = [], []
        for _ in range(3):
            floors.append(timed("exercise", "list")[0])
            seconds, done = timed("explore", "--exercise", "1")
            refusals.append(seconds)
        said = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "(nothing)"
    print(f"explore refuses what cannot run: median {sorted(refusals)[1]:.2f} s (exit {done.returncode}; target "
          f"< 2 s); floor, exercise list in the same handout: median {sorted(floors)[1]:.2f} s\n  {said}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reference-seconds", type=float, default=120.0)
    p.add_argument("--skip-reference", action="store_true")
    p.add_argument("--budget", type=float, default=10.0, help="seconds per wrong variant or mistake and seed")
    p.add_argument("--seeds", type=int, default=5, help="seeds 0 to N-1 for each wrong variant and mistake")
    p.add_argument("--memory", type=int, default=256, help="megabytes the timed breadth-first searches hold")
    p.add_argument("--only-speed", action="store_true", help="the floors and the rates only")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="processes of the breadth-first search also timed (default: the machine's cores)")
    p.add_argument("--only", action="append", help="only this wrong variant or mistake (repeatable)")
    p.add_argument("--save", type=Path, help="write each counterexample's script there (NAME-seedK.txt): the tests "
                                             "replay tests/explore_cases/bench/")
    p.add_argument("--skip-speed", action="store_true", help="no floors nor rates: the mistakes' searches only")
    p.add_argument("--only-refusal", action="store_true", help="only the time explore takes to refuse what cannot "
                                                                "run, beside the floor")
    args = p.parse_args(argv)
    refusal()
    if args.only_refusal:
        return 0

    if args.skip_speed:
        return hunts(args)
    alone, stepped = floor()
    print(f"floor: one replica step {alone:.1f} us ({1e6 / alone:,.0f}/s); one world step (driver, ports, rules) "
          f"{stepped:.1f} us ({1e6 / stepped:,.0f}/s)")
    for n in (3, 5):
        distinct, successors, depth, per, states = bfs_rate(n, args.memory * 2**20)
        print(f"bfs {n} nodes: {distinct:,.0f} distinct states/s ({successors:,.0f} successors/s, {states:,} "
              f"distinct to depth {depth}: {args.memory} MB at {per:,} bytes per state); target at 3 nodes 17,000")
        if args.jobs > 1:
            dealt, dealt_successors, *_ = bfs_rate(n, args.memory * 2**20, jobs=args.jobs)
            print(f"bfs {n} nodes, {args.jobs} processes (--jobs): {dealt:,.0f} distinct states/s "
                  f"({dealt_successors:,.0f} successors/s; {dealt / distinct:.2f} of one process's); target at 3 "
                  f"nodes 17,000")
        judged, *_ = bfs_rate(n, args.memory * 2**20, JUDGED)
        print(f"bfs {n} nodes, every call judged (as a student's code): {judged:,.0f} distinct states/s "
              f"({judged / distinct:.2f} of the reference's above)")
    for n in (3, 5):
        print(f"walks {n} nodes: {walk_rate(n, 5.0):,.0f} steps/s")

    if args.only_speed:
        return 0
    return hunts(args)


def hunts(args) -> int:
    seeds = range(args.seeds)
    print(f"wrong variants (nodes 3,4,5; seeds 0-{args.seeds - 1}; budget {args.budget:g} s; target: first violation "
          "<= 10 s, <= 20 steps):")
    for module, exercise in VARIANTS:
        if args.only and module not in args.only:
            continue
        strategy = "leader-epoch" if exercise == 6 else "generation"
        for seed in seeds:
            print(line(hunt(module, f"tests.wrong_variants.{module}", strategy, args.budget, seed=seed,
                            save=args.save)), flush=True)
    print("classic mistakes (one exercise's functions from the student, the rest from the reference):")
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, str(ROOT / "tests"))
        for name, impl, strategy in mistakes(Path(tmp)):
            if args.only and name not in args.only:
                continue
            for seed in seeds:
                print(line(hunt(name, impl, strategy, args.budget, seed=seed, save=args.save)), flush=True)
    if args.only:
        return 0
    print("KIP-101 (the reference under high-water-mark, rule acked-in-final-logs):")
    print(line(hunt("kip-101", "solutions", "high-water-mark", 120.0, rules={"acked-in-final-logs"}, save=args.save)),
          flush=True)
    if not args.skip_reference:
        print(f"the reference, {args.reference_seconds:g} s each (target: nothing found):")
        for strategy in ("generation", "leader-epoch"):
            for n in (3, 4, 5):
                t = time.monotonic()
                found, figures = search([Config(n, strategy)], budget=args.reference_seconds, seed=0)
                verdict = found.violation.sentence() if found else "nothing found"
                print(f"  {strategy:<12} {n} nodes: {verdict} ({figures.states:,} steps, {figures.distinct:,} "
                      f"distinct in the bfs, {figures.walks:,} walks, {time.monotonic() - t:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
