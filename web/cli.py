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
    if getattr(args, "command_name", None) == "replay" and getattr(args, "html", None):
        return write_html(args.trace_dir, args.html, getattr(args, "lang", None))
    if getattr(args, "command_name", None) == "demo" and not getattr(args, "announced", False):
        from lab.student.handout import announce

        announce(args.impl)  # on the student's own code: each exercise's status first
    if args.async_mode == "eventlet":
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable, "-m", "web.serve", *arguments.to_argv(args)])
    from web.serve import serve_command  # Flask is imported only now, in threading mode

    return serve_command(args)


def write_html(trace_dir: str, out: str, lang: str | None = None) -> int:
    """`hwm-lab replay DIR --html FILE`: the replay as one file (web.onefile); no server, no eventlet. What it says,
    in `lang` (--lang), else the environment's language."""
    from lab import i18n
    from lab.i18n import complaint, counted, localize, say
    from lab.ports.trace import TraceError
    from web.onefile import write

    lang = lang or i18n.from_environment()
    try:
        built = write(trace_dir, out)
    except TraceError as exc:
        print(complaint("hwm-lab replay", exc.args[0] if exc.args else str(exc), lang), file=sys.stderr)
        return 2
    except OSError as exc:
        print(complaint("hwm-lab replay", say("cannot write {path}: {error}", path=out,
                                       error=exc.strerror or str(exc)), lang), file=sys.stderr)
        return 1
    size = say("{kb} KB", kb=round(built.size / 1024)) if built.size < 1024 * 1024 else \
        say("{mb} MB", mb=round(built.size / 1024 / 1024, 1))  # (1.4 MB; in Spanish 1,4 MB)
    if built.kept < built.events:
        said = counted("{file}: {kept} of {events} event shown (every rare one; the rest summarised by type), "
                       "{size}. Open it in a browser: it needs no server and no network.",
                       "{file}: {kept} of {events} events shown (every rare one; the rest summarised by type), "
                       "{size}. Open it in a browser: it needs no server and no network.", built.events, file=out,
                       kept=built.kept, events=built.events, size=size)
    else:
        said = counted("{file}: {events} event, {size}. Open it in a browser: it needs no server and no network.",
                       "{file}: {events} events, {size}. Open it in a browser: it needs no server and no network.",
                       built.events, file=out, events=built.events, size=size)
    print(localize(said, lang))
    return 0
