"""`hwm-lab exercise list|check` and `hwm-lab submit`: the student workflow, in the language of --lang or of the
environment (LANGUAGE, LC_ALL, LC_MESSAGES, LANG); --json stays English."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

from lab import i18n
from lab.commands.options import limit_option
from lab.core.impl import ImplError
from lab.core.impl import load as load_impl
from lab.i18n import complaint, localize
from lab.core.reasons import because
from lab.student.check_text import STATUS_WORDS
from lab.student.checks import EXERCISES, check_rules, last_verdict, package_dir, run_check
from lab.student.ids import student_id
from lab.student.submit import NothingToSubmit, check_student_id, submit, table_text

CHECKS_DIR = Path(".hwm-lab") / "checks"


def register(subparsers) -> None:
    exercise = subparsers.add_parser("exercise", help="list the exercises or check one",
                                     description="List the exercises with their status, or check one.")
    sub = exercise.add_subparsers(dest="exercise_command", metavar="ACTION", required=True)
    p = sub.add_parser("list", help="each exercise, its status for your code and what to read")
    p.add_argument("--impl", default="exercises", help="the code to check (default: exercises)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _lang_option(p)
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("check", help="run an exercise's rules and scenarios against your code; writes traces",
                       description="Run exercise N's rules, then its scenarios on the simulator (and with --real "
                                   "as processes). Traces go to --dir (default .hwm-lab/checks beside your exercises/ "
                                   "folder, wherever you run it from) for hwm-lab submit.")
    p.add_argument("number", type=int, help="exercise number (1 to 6)")
    p.add_argument("--impl", default="exercises", help="the code to check (default: exercises)")
    p.add_argument("--seed", type=int, default=7, help="simulator seed (default 7)")
    p.add_argument("--real", action="store_true", help="also run the scenarios as real processes")
    p.add_argument("--dir", help="where to write the traces (default .hwm-lab/checks beside the code's folder)")
    limit_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _lang_option(p)
    p.set_defaults(func=cmd_check)

    p = subparsers.add_parser("submit", help="check every exercise again and pack the runs, your files and a "
                                             "manifest into one zip",
                              description="Check every exercise again on your current files (rules and simulator "
                                          "scenarios), add your `--real` runs made from these same files, and pack "
                                          "them with your exercise files and a manifest into a zip for your "
                                          "instructor.",
                              epilog="exit codes: 0 every exercise passes; 1 the zip is written but some exercise "
                                     "is failing or not started (it is graded as it is); 2 nothing to submit or "
                                     "bad arguments")
    p.add_argument("--student", required=True, help="your student id")
    p.add_argument("--out", help="the zip to write (default: submission-STUDENT.zip)")
    p.add_argument("--impl", default="exercises", help="the code to submit (default: exercises)")
    p.add_argument("--seed", type=int, default=7, help="simulator seed (default 7)")
    p.add_argument("--dir", help="where the check traces are (default .hwm-lab/checks beside the code's folder)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _lang_option(p)
    p.set_defaults(func=cmd_submit)


def _lang_option(p) -> None:
    p.add_argument("--lang", choices=[c for c in i18n.LANGUAGES], default=None,
                   help="language of the report: en, es or zh (default: from LANGUAGE, LC_ALL, LC_MESSAGES or LANG)")


def this_folders_code(args, start: Path | None = None) -> Path | None:
    """With `--impl exercises`, run from inside a copy of the lab (a folder that holds lab/ and exercises/, a copy of
    the handout): that copy's exercises/, even when Python would import another folder's (the lab installed from the
    handout the student copied); the node processes of --real runs too. Returns the folder that holds the code
    checked, or None when it is not a copy of the lab's (another --impl, or run from elsewhere)."""
    if args.impl != "exercises":
        return None
    here = (start or Path.cwd()).resolve()
    project = next((d for d in (here, *here.parents) if (d / "exercises" / "__init__.py").is_file()
                    and (d / "lab" / "__init__.py").is_file()), None)
    if project is None:
        return None
    spec = importlib.util.find_spec("exercises") if "exercises" not in sys.modules else None
    found = Path(spec.origin).resolve().parent.parent if spec is not None and spec.origin else None
    if found != project and "exercises" not in sys.modules:
        sys.path.insert(0, str(project))
        importlib.invalidate_caches()
        os.environ["PYTHONPATH"] = os.pathsep.join([str(project), *filter(None, [os.environ.get("PYTHONPATH")])])
    return project


def checks_dir(args) -> str:
    """--dir, or .hwm-lab/checks in the folder that holds the code's package (the project), so that a check run
    from any folder writes where `hwm-lab submit` looks, and leaves no .hwm-lab/ behind elsewhere."""
    if args.dir:
        return args.dir
    try:
        path = package_dir(args.impl).resolve().parent / CHECKS_DIR
    except Exception:  # the package does not import: the check says why; traces would go nowhere anyway
        return str(CHECKS_DIR)
    try:
        return str(path.relative_to(Path.cwd().resolve()))  # as short as before when run from the project
    except ValueError:
        return str(path)


def _lang(args) -> str:
    return args.lang or i18n.from_environment()


def cmd_list(args) -> int:
    lang = _lang(args)
    this_folders_code(args)
    try:
        impl = load_impl(args.impl)
    except ImplError as exc:
        print(complaint("hwm-lab exercise list", _said(exc), lang), file=sys.stderr)
        return 2
    rows = []
    for ex in EXERCISES:
        status, rules = check_rules(ex, impl)
        if status == "passing":  # one verdict: the last whole check of these same files may have found more
            status = last_verdict(ex.number, args.impl) or status
        rows.append({"exercise": ex.number, "title": ex.title, "file": ex.module, "status": status,
                     "rules_ok": sum(r.ok for r in rules), "rules": len(ex.rules), "read": ex.read})
    if args.json:
        print(json.dumps(rows))
    else:
        titles = [localize(r["title"], lang) for r in rows]
        statuses = [localize(STATUS_WORDS[r["status"]], lang) for r in rows]
        rules = [localize(i18n.say("{ok}/{total} rules", ok=r["rules_ok"], total=r["rules"]), lang) for r in rows]
        # Each column as wide as its widest cell in this language (a long Spanish title must not shift the rest).
        widths = [max(i18n.columns(text) for text in column) for column in (titles, statuses, rules)]
        for r, title, status, rule in zip(rows, titles, statuses, rules):
            read = localize(i18n.say("read: {what}", what=r["read"]), lang)
            print(f"{r['exercise']}. {_pad(title, widths[0])}  {_pad(status, widths[1])}  {_pad(rule, widths[2])}  "
                  f"{r['file']}\n     {read}")
    return 0


class Progress:
    """What a check is running, on stderr: on a terminal one line, overwritten and cleared before the report, so that
    the report's first lines (where a fault is said) are the screen's first; elsewhere (a pipe, a log) a line each."""

    def __init__(self, lang: str, quiet: bool):
        self.lang, self.quiet = lang, quiet
        self.terminal = sys.stderr.isatty()
        self.shown = False

    def __call__(self, text) -> None:
        if self.quiet:
            return
        line = f"... {localize(text, self.lang)}"
        if self.terminal:
            print(f"\r\033[K{line}", end="", file=sys.stderr, flush=True)
            self.shown = True
        else:
            print(line, file=sys.stderr, flush=True)

    def clear(self) -> None:
        if self.shown:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
            self.shown = False


def cmd_check(args) -> int:
    lang = _lang(args)
    this_folders_code(args)
    progress = Progress(lang, args.json)
    try:
        report = run_check(args.number, args.impl, out_root=checks_dir(args), seed=args.seed, real=args.real,
                           progress=progress, limit=args.limit)
    except (ValueError, ImplError) as exc:
        progress.clear()
        print(complaint("hwm-lab exercise check", _said(exc), lang), file=sys.stderr)
        return 2
    finally:
        progress.clear()
    if args.json:
        print(json.dumps({"exercise": args.number, "status": report.status,
                          "rules": [r.__dict__ for r in report.rules], "scenarios": report.scenarios,
                          "exploration": _plain(report.exploration)}))
    else:
        print(report.text(lang))
    return 0 if report.status == "passing" else 1


def cmd_submit(args) -> int:
    lang = _lang(args)
    this_folders_code(args)
    progress = Progress(lang, args.json)
    try:
        args.student = student_id(args.student)
        check_student_id(args.student)
        result = submit(args.student, impl=args.impl, checks_dir=checks_dir(args), seed=args.seed,
                        out=args.out or f"submission-{args.student}.zip", lab_version=_version(), progress=progress)
    except (NothingToSubmit, ImplError) as exc:
        progress.clear()
        print(complaint("hwm-lab submit", _said(exc), lang), file=sys.stderr)
        return 2
    finally:
        progress.clear()
    if args.json:
        print(json.dumps({"ok": result.complete, "out": str(result.out), "table": result.table,
                          "manifest": result.manifest}))
    else:
        print(table_text(result, lang))
    return 0 if result.complete else 1


def _plain(exploration: dict | None) -> dict | None:
    return None if exploration is None else {**exploration, "text": str(exploration["text"])}


def _said(exc: Exception):
    message = exc.args[0] if exc.args else ""
    return message if isinstance(message, i18n.Text) else because(exc)


def _pad(text: str, width: int) -> str:
    """`text` padded to `width` terminal columns (a CJK character takes two)."""
    return text + " " * (width - i18n.columns(text))


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("hwm-lab")
    except Exception:
        return "unknown"
