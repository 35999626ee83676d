"""The `hwm-lab` command line as a parser: each group of commands lives in its own module and registers itself here;
`main` parses a line and runs its command. lab/cli.py, the entry point, is this and nothing else; the help's
extractor (lab.commands.helps) and the guides' samples (lab.commands.guides) read the parser from here."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from lab.core.impl import has_reference

# Each module offers register(subparsers); a command's handler is set with parser.set_defaults(func=...)
# and returns an exit code. The grader's module must not import pyspark until its command runs.
COMMAND_MODULES = (
    "lab.commands.cluster",  # up, status, write, read, kill, restart, pause, resume, partition, heal, down, scenario
    "lab.commands.simulate",  # simulate
    "lab.commands.exercise",  # exercise, submit
    "lab.student.handout",  # handout
    "lab.commands.chaos",  # chaos (the nemesis, lab/harness/chaos.py)
    "lab.commands.history",  # history (the clients' history of a run, lab/harness/history.py)
    "lab.commands.explore",  # explore (lab/explore: search, shrink, explain)
    "lab.grade.cli",  # grade
    "web.cli",  # demo, dashboard, replay
)
# What only the instructor runs, from the course's repository: a handout (no reference answers) leaves them out.
INSTRUCTOR_MODULES = ("lab.student.handout", "lab.grade.cli")


def build_parser(lang: str = "en") -> argparse.ArgumentParser:
    """Every command's parser; its help said in `lang`."""
    from lab.commands.options import parser_class
    from lab.i18n import LANGUAGES

    parser = parser_class(lang)(
        prog="hwm-lab",
        description="HWM Lab: the High-Water Mark pattern as real processes, a simulator and a live dashboard.",
    )
    parser.add_argument("--version", action="version", version=f"hwm-lab {_version()}",
                        help="show program's version number and exit")
    parser.add_argument("--lang", choices=list(LANGUAGES), default=None, dest="lang_first", help=argparse.SUPPRESS)
    # (main lifts a known `--lang X` from anywhere on the line; this one refuses an unknown language with the choices)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    students = not has_reference()
    for name in COMMAND_MODULES:
        if students and name in INSTRUCTOR_MODULES:
            continue
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):
                continue  # that group of commands is not installed in this checkout
            raise
        module.register(subparsers)
    return parser


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("hwm-lab")
    except Exception:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    from lab.commands.options import argparse_speaks, language_of, lifted_lang

    argv = sys.argv[1:] if argv is None else list(argv)
    lang = language_of(argv)
    given, argv = lifted_lang(argv)  # `--lang es` anywhere: before the command, after it, between its words
    with argparse_speaks(lang):
        parser = build_parser(lang)
        args = parser.parse_args(argv)
    if given:
        args.lang = given
    if not getattr(args, "func", None):
        with argparse_speaks(lang):
            parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt as exc:
        print(_interrupted(exc), file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`hwm-lab exercise list | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _interrupted(exc: KeyboardInterrupt) -> str:
    """What Ctrl-C stopped: the student's function, its inputs and its line when one was running."""
    from lab.i18n import from_environment, localize
    from lab.student.faults import interrupted_text

    return localize(interrupted_text(exc), from_environment())
