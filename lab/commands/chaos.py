"""`hwm-lab chaos`: the nemesis (lab/harness/chaos.py: random kills, pauses, cuts and delays under writes and
reads, then a check of every acknowledged write and every read) against a cluster it starts, on any `--impl`."""

from __future__ import annotations

import sys

from lab.harness import chaos
from lab.processes.errors import SupervisorError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "chaos", help="attack a cluster with random faults, then check every acknowledged write and read",
        description=chaos.__doc__.split("\n\n")[0] + " Exit 1 if a target is missed, 4 if the cluster cannot start.")
    chaos.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    try:
        return chaos.command(args)
    except SupervisorError as exc:
        print(f"hwm-lab chaos: {exc}", file=sys.stderr)
        return 4
