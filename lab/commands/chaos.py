"""`hwm-lab chaos`: the nemesis of bench/chaos.py (random kills, pauses, cuts and delays under writes and reads,
then a check of every acknowledged write and every read) against a cluster it starts, on any `--impl`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from lab.processes.errors import SupervisorError

BENCH = Path(__file__).resolve().parents[2] / "bench" / "chaos.py"


def register(subparsers) -> None:
    if not BENCH.exists():
        return  # an installation without the repository's bench/: no nemesis to offer
    chaos = _load()
    parser = subparsers.add_parser(
        "chaos", help="attack a cluster with random faults, then check every acknowledged write and read",
        description=chaos.__doc__.split("\n\n")[0] + " Exit 1 if a target is missed, 4 if the cluster cannot start.")
    chaos.add_arguments(parser)
    parser.set_defaults(func=lambda args: run(chaos, args))


def run(chaos, args) -> int:
    try:
        return chaos.command(args)
    except SupervisorError as exc:
        print(f"hwm-lab chaos: {exc}", file=sys.stderr)
        return 4


def _load():
    spec = importlib.util.spec_from_file_location("hwm_lab_bench_chaos", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
