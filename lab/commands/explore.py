"""`hwm-lab explore`: search the runs of a simulated cluster driven by your functions for the smallest one that
breaks a rule; write it as a script that `hwm-lab simulate --script` replays, with its trace, and explain it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from lab import i18n
from lab.core.config import TRUNCATION_STRATEGIES
from lab.core.impl import ImplError, student_functions
from lab.core.interface import (
    EPOCH_TRUNCATION_POINT, EXERCISE_OF, FOLLOWER_APPEND, HIGH_WATER_MARK, LEADER_EPOCH_END, ON_REPLICATION_RESPONSE,
    PLAN_TRUNCATION)
from lab.core.impl import load as load_impl
from lab.grade.inputs.rubric_entries import CHECK_IDS
from lab.i18n import Listed, complaint, localize, say

CHECKS = [c for c in CHECK_IDS if c not in ("liveness", "scenario", "progress")]  # (of a scenario's run only)

EXIT_NONE, EXIT_FOUND, EXIT_USAGE = 0, 1, 2
HTML = "counterexample.html"  # the counterexample's replay in one file, beside its script and trace


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "explore", help="search the runs of a simulated cluster for the smallest one that breaks a rule",
        description="Search the runs of a simulated cluster driven by your functions (every order of messages, "
                    "lost and duplicated messages, elections, crashes, restarts, client writes and reads) for the "
                    "smallest one that breaks one of the grader's rules; write it to --out as counterexample.txt "
                    "(replay it with hwm-lab simulate --script), a trace directory (hwm-lab replay) and "
                    "counterexample.html (its replay in one file, for any browser), and explain it.",
        epilog="exit codes: 0 nothing found within the budget; 1 a rule is broken; 2 bad arguments")
    p.add_argument("--exercise", type=int, help="search with this exercise's functions from --impl and the others "
                                                "from the reference (default: every function from --impl)")
    p.add_argument("--impl", default="exercises", help="the code to search (default: exercises)")
    p.add_argument("--nodes", default="3,4,5", help="cluster sizes, searched in turn (default 3,4,5)")
    p.add_argument("--truncation", choices=TRUNCATION_STRATEGIES,
                   help="restart truncation strategy (default: `leader-epoch` for exercise 6, else `generation`)")
    p.add_argument("--budget", type=float, default=30.0, help="seconds of search at most (default 30)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random walks (default 0)")
    p.add_argument("--out", default=".hwm-lab/explore", help="where to write the counterexample and its trace")
    p.add_argument("--rule", action="append", choices=CHECKS, metavar="CHECK",
                   help="only this rule ends the search (repeatable; default: every rule): e.g. acked-in-final-logs "
                        "to see an acknowledged write lost, not only put at risk")
    p.add_argument("--memory", type=int, default=32, metavar="MB",
                   help="megabytes the breadth-first search may hold (default 32): as many states as fit, at the "
                        "bytes a state takes, measured as it starts")
    p.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 64), metavar="N",
                   help="processes for the breadth-first search (default: one per core of this machine): the same "
                        "run is found with any number")
    p.add_argument("--limit", type=float, default=1.0, help="seconds one call of your function may take (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--lang", choices=list(i18n.LANGUAGES), default=None,
                   help="language of the explanation: en, es or zh (default: from the environment)")
    p.set_defaults(func=run)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        sizes = []
    if not sizes or any(not 1 <= n <= 7 for n in sizes):
        raise ValueError(say("--nodes takes cluster sizes from 1 to 7, separated by commas, not {text}", text=text))
    return sizes


def target(impl: str, exercise: int | None) -> tuple[str, str]:
    """The implementation to search (mixed with the reference for one exercise) and its default strategy."""
    if exercise is None:
        return impl, "generation"
    from lab.student.checks import exercise as find

    ex = find(exercise)
    mixed = impl if impl == "solutions" else f"{impl}:{','.join(ex.functions)}"
    return mixed, "leader-epoch" if exercise == 6 else "generation"


def playable(trace_dir: str, out: str) -> str:
    """The counterexample's trace as one HTML file beside it, that plays in a browser (web.onefile)."""
    from web.onefile import write

    return str(write(trace_dir, Path(out) / HTML).path)


# The functions a run must go through before it calls each one (a follower answers before the leader counts).
REACHED_THROUGH = {HIGH_WATER_MARK: (ON_REPLICATION_RESPONSE, FOLLOWER_APPEND),
                   ON_REPLICATION_RESPONSE: (FOLLOWER_APPEND,), PLAN_TRUNCATION: (FOLLOWER_APPEND,),
                   LEADER_EPOCH_END: (FOLLOWER_APPEND,),
                   EPOCH_TRUNCATION_POINT: (FOLLOWER_APPEND, LEADER_EPOCH_END)}


def _named(functions, unwritten: bool = False) -> i18n.Listed:
    """`on_replication_response (exercise 2), follower_append (exercise 3)`, in the reader's language; `unwritten`:
    each says it is not written yet, inside its brackets (Chinese cannot put it after the list)."""
    return i18n.Listed(say("{function} (exercise {number}, not written yet)", function=f, number=EXERCISE_OF[f])
                       if unwritten else say("{function} (exercise {number})", function=f, number=EXERCISE_OF[f])
                       for f in sorted(functions, key=lambda f: (EXERCISE_OF[f], f)))


def searched(impl: str, exercise: int | None) -> tuple[tuple[str, ...], dict]:
    """The student's functions the search is for, and those of the run that cannot run yet (function -> why)."""
    from lab.student.checks import exercise as find
    from lab.student.runs import waiting

    yours = student_functions(impl)
    targets = tuple(f for f in yours if exercise is None or f in find(exercise).functions)
    return targets, {f: why for f, why in waiting(load_impl(impl)).items() if f in yours}


def run(args) -> int:
    from lab.explore.counterexample import explore

    lang = args.lang or i18n.from_environment()
    try:
        sizes = _sizes(args.nodes)
        impl, strategy = target(args.impl, args.exercise)
        load_impl(impl)
        if args.budget <= 0 or args.limit <= 0 or args.memory <= 0:
            raise ValueError(say("--budget, --limit and --memory must be positive"))
        if not 1 <= args.jobs <= 64:
            raise ValueError(say("--jobs takes 1 to 64 processes, not {jobs}", jobs=args.jobs))
        targets, missing = searched(impl, args.exercise)
        unsearchable = _unsearchable(targets, missing, args.exercise) or \
            _waits(missing, args.truncation or strategy, args.exercise)
        if unsearchable is not None:
            raise ValueError(unsearchable)
    except (ValueError, ImplError) as exc:
        print(complaint("hwm-lab explore", exc.args[0] if exc.args else exc, lang), file=sys.stderr)
        return EXIT_USAGE

    def progress(f) -> None:
        if not args.json:
            print("\r" + localize(say("explore: {states} states, {distinct} distinct, depth {depth}, {rate} states/s, "
                                      "{seconds} s", states=f.states, distinct=f.distinct,
                                      depth=f.depth, rate=round(f.states / max(f.seconds, 1e-9)),
                                      seconds=round(f.seconds)), lang), end="", file=sys.stderr, flush=True)

    result = explore(impl, sizes=sizes, truncation=args.truncation or strategy, budget=args.budget,
                     seed=args.seed, out=args.out, limit=args.limit, progress=progress, shown_impl=impl,
                     rules=args.rule, bfs_memory=args.memory * 2**20, jobs=args.jobs, lang=lang)
    if result.found is not None and result.files:
        result.files.append(playable(result.files[1], args.out))
    twice = None
    if result.found is not None and result.files:  # the same run, replayed in a fresh process, must end the same
        from lab.explore.twice import verdict

        twice = verdict(result.found, result.calls, Path(result.files[0]), impl)
    if not args.json:
        print("", file=sys.stderr)
    f = result.figures
    if args.json:
        print(json.dumps({**result.as_dict(), **({"twice": twice[1]} if twice else {})}))
    elif result.found is None:
        print(localize(say("Nothing found: no rule broken in {states} states ({distinct} distinct, depth {depth}, "
                           "{walks} random walks) in {seconds} s.", states=f.states,
                           distinct=f.distinct, depth=f.depth, walks=f.walks,
                           seconds=round(f.seconds, 1)), lang))
        if f.unwritten:
            print(localize(say("Left out: the runs that reach {functions}.", functions=_named(f.unwritten, True)),
                           lang))
        from lab.explore.coverage import sentences

        for sentence in sentences(f.reach):  # what was searched: "nothing found" means nothing only in there
            print(localize(sentence, lang))
    else:
        print(localize(result.explain(), lang))
        print(localize(say("Written: {files}. Replay it with: hwm-lab simulate --script {script}",
                           files=Listed(result.files), script=result.files[0]), lang))
        if twice and twice[0] is not None:
            print(localize(twice[0], lang))
    if result.found is None and targets and not set(targets) & f.called:
        before = sorted({g for t in targets for g in REACHED_THROUGH.get(t, ())} & set(missing))
        said = (say("Your {functions} never ran in the runs searched: they are called only after {before}, not "
                    "written yet: write those first.", functions=Listed(targets), before=_named(before))
                if before else say("Your {functions} never ran in the runs searched: give the search more time "
                                   "(--budget).", functions=Listed(targets)))
        print(complaint("hwm-lab explore", said, lang), file=sys.stderr)
        return EXIT_USAGE if before else EXIT_NONE
    return EXIT_NONE if result.found is None else EXIT_FOUND


def _waits(missing: dict, strategy: str, exercise: int | None):
    """What the search waits for, decided at once and as `hwm-lab exercise check` decides it (lab.student.runs): the
    exercises whose functions its runs call and that cannot run yet; None when there are none."""
    from lab.student.runs import EXPLORE_NEEDS, exercises_text, waits_for

    waiting = waits_for(EXPLORE_NEEDS.get(strategy, EXPLORE_NEEDS["generation"]), missing)
    if not waiting:
        return None
    if exercise is not None:
        return say("exercise {number} cannot be searched yet: the search needs {exercises} (not written yet, or a file "
                   "that does not import), as hwm-lab exercise check {number} says", number=exercise,
                   exercises=exercises_text(waiting))
    return say("nothing can be searched yet: the search needs {exercises} (not written yet, or a file that does not "
               "import); hwm-lab exercise check N says the same of each exercise", exercises=exercises_text(waiting))


def _unsearchable(targets, missing: dict, exercise: int | None):
    """Why nothing can be searched yet (the exercise asked for is not written, or no function is), else None."""
    if exercise is not None:
        mine = [f for f in targets if f in missing]
        if mine:
            return say("exercise {number} cannot run yet: {functions} -- {why}", number=exercise,
                       functions=Listed(mine), why=missing[mine[0]])
        return None
    if targets and all(f in missing for f in targets):
        return say("no function of yours can run yet (not written yet, or its file does not import): write one "
                   "exercise, check it with hwm-lab exercise check N, then search it with --exercise N")
    return None
