"""`hwm-lab handout --out DIR`: the students' repository, made from the course's: the stubs, the docs, the
scenarios, the tools and the students' tests, with no `solutions/` and no reference answer anywhere in it."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

from lab import i18n
from lab.i18n import Joined, counted, localize, say

ROOT = Path(__file__).resolve().parents[2]
# Left out: the reference answers, and what only the instructor runs (the grader's tests and data, the browser
# tests, the wrong variants of the answers, the benchmarks).
LEFT_OUT = ("solutions/", "tests/grade/", "tests/dashboard/", "tests/wrong_variants/", "bench/")
# The students' tests: each runs against `--impl exercises` and waits for the exercises it needs.
TESTS = ("conftest.py", "tests/conftest.py", "tests/diskutil.py", "tests/test_exercises.py",
         "tests/test_high_water_mark.py", "tests/test_replica.py", "tests/test_wal.py")
MIN_BODY_LINES = 2  # a reference body this long or longer is looked for in every file


class HandoutError(Exception):
    pass


def tracked_files(root: Path = ROOT) -> list[str]:
    """The course repository's files: git's list when it is a checkout, else every file but caches and venvs."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True)
        files = [f for f in out.stdout.decode().split("\0") if f]
        if files:
            return sorted(f for f in files if (root / f).is_file())
    except (OSError, subprocess.CalledProcessError):
        pass
    skip = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "runs", ".hwm-lab"}
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip]
        found += [os.path.relpath(os.path.join(folder, n), root) for n in names]
    return sorted(found)


def chosen(files: list[str]) -> list[str]:
    keep = []
    for f in files:
        if f.startswith(LEFT_OUT):
            continue
        if f.startswith("tests/") and f not in TESTS:
            continue
        keep.append(f)
    return keep


def reference_bodies(root: Path = ROOT) -> dict[str, list[str]]:
    """function name -> the stripped lines of its body in solutions/ (docstring left out)."""
    bodies = {}
    for path in sorted((root / "solutions").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.FunctionDef):
                continue
            body = node.body[1:] if (node.body and isinstance(node.body[0], ast.Expr)
                                     and isinstance(getattr(node.body[0], "value", None), ast.Constant)) else node.body
            if not body:
                continue
            block = [ln.strip() for ln in lines[body[0].lineno - 1:body[-1].end_lineno] if ln.strip()
                     and not ln.strip().startswith("#")]
            if len(block) >= MIN_BODY_LINES:
                bodies[f"{path.name}:{node.name}"] = block
    return bodies


def holds_body(text: str, block: list[str]) -> bool:
    """Whether the text's stripped, non-comment lines hold the block, line after line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    n = len(block)
    first = block[0]
    return any(lines[i:i + n] == block for i, line in enumerate(lines) if line == first)


def leaks(folder: Path, bodies: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(file, function) of every reference body found in a file under folder."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found += [(str(path.relative_to(folder)), name) for name, block in bodies.items() if holds_body(text, block)]
    return found


# The students' test command: the README's second command, and the handout's .ci/run (a class's CI runs it on the
# students' code, not the course's command, which needs solutions/).
TEST_COMMAND = "bash .ci/setup && .venv/bin/python -m pytest --impl exercises"

README = """# HWM Lab

A teaching lab for the **High-Water Mark** pattern of replicated logs: several OS processes act as leader and
followers over TCP, each with a write-ahead log on disk; the leader advances the high-water mark (HWM) when a
majority holds an entry; clients read only up to it. You write the key pieces, in `exercises/`: start with
[the student guide](docs/student-guide.md) ([español](docs/es/student-guide.md), [中文](docs/zh/student-guide.md)).

## Set-up: two commands

Run the demo on your own code (a 3-node cluster and the dashboard; it prints the URL, Ctrl-C stops everything).
It first lists your exercises; one not started yet stops the node that needs it, and says which:

```
bash .ci/setup && .venv/bin/hwm-lab demo
```

Run the tests against your code. Each exercise not started yet is one failure that says so (six at first), and
the tests that need it are skipped, naming it; once all six are done, every test passes:

```
{TEST_COMMAND}
```

Then, after `source .venv/bin/activate`: check one exercise with `hwm-lab exercise check N`, and hand in with
`hwm-lab submit --student ID`.
""".replace("{TEST_COMMAND}", TEST_COMMAND)

CI_RUN = f"""#!/usr/bin/env bash
# CI entry point: the README's test command, verbatim (the students' code, in exercises/).
set -euo pipefail
cd "$(dirname "$0")/.."
{TEST_COMMAND}
"""


def make(out: Path, root: Path = ROOT, *, git: bool = True) -> list[str]:
    """Write the handout at `out` (a new or empty folder); returns the files written."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise HandoutError(say("{out} is not empty: choose a new folder", out=str(out)))
    if not (root / "solutions").is_dir():
        raise HandoutError(say("{root} has no solutions/: make the handout from the course's repository",
                               root=str(root)))
    files = chosen(tracked_files(root))
    out.mkdir(parents=True, exist_ok=True)
    for f in files:
        (out / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / f, out / f)
    (out / "README.md").write_text(README, encoding="utf-8")
    (out / ".ci").mkdir(exist_ok=True)
    (out / ".ci" / "run").write_text(CI_RUN, encoding="utf-8")
    (out / ".ci" / "run").chmod(0o755)
    found = leaks(out, reference_bodies(root))
    if found:
        shutil.rmtree(out)
        raise HandoutError(say("a reference answer would leak: {where}",
                               where=Joined([say("{file} holds {name}", file=f, name=name) for f, name in found])))
    if git and shutil.which("git"):
        env = {**os.environ, "GIT_AUTHOR_NAME": "HWM Lab", "GIT_AUTHOR_EMAIL": "hwm-lab@localhost",
               "GIT_COMMITTER_NAME": "HWM Lab", "GIT_COMMITTER_EMAIL": "hwm-lab@localhost"}
        for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "HWM Lab handout"]):
            subprocess.run(["git", "-C", str(out), *cmd], check=True, env=env, capture_output=True)
    return files


def register(subparsers) -> None:
    p = subparsers.add_parser("handout", help="write the students' repository, without the reference answers",
                              description="Write the students' repository: stubs, docs, scenarios, tools and the "
                                          "students' tests; no solutions/ and no reference answer in any file, "
                                          "in a fresh git history.")
    p.add_argument("--out", required=True, metavar="DIR", help="a new or empty folder")
    p.add_argument("--no-git", action="store_true", help="do not make it a git repository")
    i18n.lang_option(p)
    p.set_defaults(func=main)


def main(args) -> int:
    lang = i18n.lang_of(args)
    try:
        files = make(Path(args.out), git=not args.no_git)
    except HandoutError as exc:
        print(localize(say("{command}: {what}", command="handout", what=exc.args[0]), lang), file=sys.stderr)
        return 2
    made = counted("{count} file in {out}, no solutions/ and no reference answer in it",
                   "{count} files in {out}, no solutions/ and no reference answer in any of them", len(files) + 1,
                   count=len(files) + 1, out=args.out)
    print(localize(say("{command}: {what}", command="handout", what=made), lang))
    return 0


def announce(impl_name: str, write=print, lang: str | None = None) -> bool:
    """Before a demo on the student's own code: each exercise's status, so that one not started is shown as such
    (the node that reaches it stops, naming it). Returns whether every exercise is started."""
    from lab.core import impl as impl_module
    from lab.student.check_text import STATUS
    from lab.student.checks import EXERCISES, check_rules

    lang = lang or i18n.from_environment()
    name = impl_name
    if name == impl_module.REFERENCE and not impl_module.has_reference():
        name = impl_module.STUDENT
    if name == impl_module.REFERENCE:
        return True
    try:
        impl = impl_module.load(name)
    except impl_module.ImplError:
        return True  # the demo itself says what is wrong with it
    write(localize(say("The nodes run your code ({impl}):", impl=name), lang))
    started = True
    for ex in EXERCISES:
        status = check_rules(ex, impl)[0]
        started = started and status != "not started"
        write("  " + localize(say("Exercise {number}: {title} ({module}) -- {status}", number=ex.number,
                                  title=ex.title, module=ex.module, status=STATUS[status]), lang))
    if not started:
        write(localize(say("A node that needs an exercise not started stops, and says which."), lang))
    return started


if __name__ == "__main__":  # what `hwm-lab demo` prints first: python -m lab.student.handout [IMPL]
    announce(sys.argv[1] if len(sys.argv) > 1 else "solutions")
