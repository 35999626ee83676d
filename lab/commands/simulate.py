"""`hwm-lab simulate`: run a scenario on the seeded simulator and write its trace."""

from __future__ import annotations

import json
import sys

from lab.core.config import TRUNCATION_STRATEGIES
from lab.commands.options import lang_of, lang_option, limit_option
from lab.core.impl import ImplError
from lab.harness.commands import ScenarioError
from lab.harness.scenario import simulate
from lab.harness.script import available
from lab.i18n import complaint, localize, say
from lab.i18n.verdicts import summary


def register(subparsers) -> None:

    parser = subparsers.add_parser(
        "simulate", help="run a scenario on the deterministic simulator",
        description="Run a teaching scenario on the seeded simulator. Same seed, same run, byte for byte.")
    parser.add_argument("scenario", nargs="?", help=f"scenario name ({', '.join(available())}) or a script file")
    parser.add_argument("--script", help="a script file to run instead of a named scenario (e.g. the "
                                         "counterexample.txt that hwm-lab explore writes)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the network and election timers (default 0)")
    parser.add_argument("--nodes", type=int, help="cluster size (default: the scenario's)")
    parser.add_argument("--truncation", choices=TRUNCATION_STRATEGIES, help="restart truncation strategy")
    parser.add_argument("--impl", default=None, help="solutions, exercises, or a module name (default: the code a "
                                                     "script names in its `impl` line, else solutions)")
    parser.add_argument("--out", help="write the trace directory here")
    limit_option(parser)
    parser.add_argument("--no-pre-vote", action="store_true",
                        help="nodes campaign without asking for pre-votes first (see a cut-off node depose a leader)")
    parser.add_argument("--pace", choices=("normal", "classroom"), default="normal",
                        help="normal (default), or classroom: election timers of seconds, for a trace to watch")
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    lang_option(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    lang = lang_of(args)
    if bool(args.scenario) == bool(args.script):
        print(complaint("hwm-lab simulate", say("name a scenario or give --script FILE (one of them)"), lang),
              file=sys.stderr)
        return 2
    try:
        verdict = simulate(args.script or args.scenario, seed=args.seed, nodes=args.nodes, truncation=args.truncation,
                           impl=args.impl, out=args.out, pre_vote=not args.no_pre_vote, limit=args.limit,
                           pace=args.pace, file=bool(args.script))
    except (ScenarioError, ImplError, ValueError) as exc:
        print(complaint("hwm-lab simulate", exc.args[0] if exc.args else exc, lang), file=sys.stderr)
        return 2
    if args.json:
        violation = verdict.violation.as_dict() if verdict.violation is not None else None
        print(json.dumps({**verdict.as_dict(), "violation": violation, "out": args.out}))
    else:
        print(localize(summary(verdict), lang))
        if args.out:
            print(localize(say("trace written to {out}", out=args.out), lang))
    return 0 if verdict.passed else 1
