"""`hwm-lab chaos`: the nemesis (lab/harness/chaos.py: random kills, pauses, cuts and delays under writes and
reads, then a check of every acknowledged write and every read) against a cluster it starts, on any `--impl`; its
progress and report in the reader's language (lab/i18n/chaos.py)."""

from __future__ import annotations

import sys

from lab.commands.options import lang_of, lang_option
from lab.harness import chaos
from lab.i18n import complaint, localize, say
from lab.i18n.chaos import progress, report
from lab.processes.errors import SupervisorError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "chaos", help="attack a cluster with random faults, then check every acknowledged write and read",
        description=chaos.__doc__.split("\n\n")[0] + " Exit 1 if a target is missed, 4 if the cluster cannot start.")
    chaos.add_arguments(parser)
    lang_option(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    lang = lang_of(args)
    try:
        return chaos.command(args, out=lambda kind, **values: print(localize(progress(kind, **values), lang),
                                                                     flush=True),
                             show=lambda found: print(localize(report(found), lang)))
    except SupervisorError as exc:
        print(complaint("hwm-lab chaos", exc.args[0] if exc.args else say("the cluster could not start"), lang),
              file=sys.stderr)
        return 4
