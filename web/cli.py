"""`hwm-lab demo`, `hwm-lab dashboard` and `hwm-lab replay`: the dashboard's commands.

This module imports neither Flask nor eventlet: with the default async mode (eventlet) a command re-runs itself
through `python -m web.serve`, which monkey-patches before anything else is imported. The arguments live in
web.args, which both use.
"""

from __future__ import annotations

import argparse
import os
import sys

from web import args as arguments


def register(subparsers) -> None:
    arguments.register(subparsers, run)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "command_name", None) == "demo" and not getattr(args, "announced", False):
        from lab.student.handout import announce

        announce(args.impl)  # on the student's own code: each exercise's status first
    if args.async_mode == "eventlet":
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable, "-m", "web.serve", *arguments.to_argv(args)])
    from web.serve import serve_command  # Flask is imported only now, in threading mode

    return serve_command(args)
