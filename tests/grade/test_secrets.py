"""The grader keeps the course's secrets: a class graded with a course secret kept in the instructor's home folder,
with students who try to borrow the reference (the garbage collector, sys.modules, inspect, the import system, the
file system), to read the secret, another student's submission or the reference's source, to rewrite their files,
patch the lab or forge a result. Each earns what its own functions earn; nothing secret reaches --out."""

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

from lab.grade import job, sandbox

from . import synth
from .helpers import full_runs, rubric_without_exploring

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(sandbox.bwrap() is None, reason="bubblewrap (Debian's bubblewrap) is not installed")]
ROOT = Path(__file__).resolve().parents[2]
SECRET = "course-secret-7f3a9c1e5b2d4068a1c3e5f7"
BOB = "MARKER-BOB-41c9e7"  # a line of bob's own file, which no one else may read
REFERENCE = "The majority-th largest"  # a comment of the reference's high_water_mark.py
OWN = "SNOOP-OWN-MARKER"  # the snoop's own file: what it reads of its own shows, so the test can see a leak
ARTICLE = "    return sorted(match_indexes)[len(match_indexes) // 2]\n"  # exercise 1 as the article writes it

BORROW = '''
import gc, importlib, inspect, os, sys


def _on_disk():
    """A reference answer file anywhere on the file system this process sees (searched once, at import)."""
    for root, dirs, files in os.walk("/"):
        if "high_water_mark.py" in files and not root.startswith("/code"):
            space = {}
            try:
                exec(open(os.path.join(root, "high_water_mark.py")).read(), space)
                return space["high_water_mark"]
            except Exception:
                continue
    return None


ON_DISK = _on_disk()


def _found():
    """The reference's high_water_mark, wherever this process could reach it."""
    for obj in gc.get_objects():
        try:  # (a proxy of another library may raise when looked at)
            if callable(obj) and getattr(obj, "__name__", "") == "high_water_mark" and \\
                    "solutions" in str(getattr(obj, "__module__", "")):
                return obj
        except Exception:
            continue
    for name, module in list(sys.modules.items()):
        if name.startswith("solutions") and hasattr(module, "high_water_mark"):
            return module.high_water_mark
    try:
        return importlib.import_module("solutions.high_water_mark").high_water_mark
    except Exception:
        pass
    for frame in inspect.stack(0):
        for value in list(frame.frame.f_globals.values()) + list(frame.frame.f_locals.values()):
            if callable(value) and "solutions" in str(getattr(value, "__module__", "")):
                return value
    return ON_DISK


_tries = []

def high_water_mark(match_indexes):
    if len(_tries) < 5:
        _tries.append(_found())
    borrowed = next((f for f in _tries if f is not None), None)
    if borrowed is not None:
        return borrowed(match_indexes)
    return sorted(match_indexes)[len(match_indexes) // 2]
'''

SNOOP = '''# SNOOP-OWN-MARKER
import os

FOUND = []
for root, dirs, files in os.walk("/"):
    for name in files:
        path = os.path.join(root, name)
        if name.endswith((".key", ".zip", ".py", ".json")) or "secret" in name or "course" in name:
            try:
                with open(path, "rb") as f:
                    FOUND.append(f"{path}: {f.read(20000)!r}")
            except OSError as exc:
                FOUND.append(f"{path}: {exc}")
SAID = " | ".join(sorted((x for x in FOUND if "/exercises/" in x or ".key" in x or ".zip" in x or "solutions" in x),
                         key=lambda x: "reads.py" not in x))  # its own file first

def check_read(index, high_water_mark):
    raise RuntimeError(SAID[:5000])  # what it found, into its feedback
'''

TAMPER = ARTICLE.join(['''
import os, sys

for target in ("exercises/high_water_mark.py", "exercises/follower.py", "result.json", "/box/out/ex1/result.json",
               "../box/out/ex1/result.json", "/tmp/../box/out/ex1/status.json"):
    try:
        with open(target, "w") as f:
            f.write('{"status": "ok", "rules": [["every rule", true, ""]], "probes": {}, "runs": []}')
    except OSError:
        pass
try:
    import lab.core.guard as guard
    guard.RETURNS["high_water_mark"] = ((object,), "anything")
    guard.guard_function = lambda name, fn, limit=1.0: fn
    import lab.core.interface as interface
    interface.AppendResult = object
except Exception:
    pass
try:
    import lab.student.checks as checks
    checks.check_rules = lambda ex, impl: ("passing", [])
except Exception:
    pass

def high_water_mark(match_indexes):
''', ''])

FORGE = '''
import os
from lab.grade import wire

def check_read(index, high_water_mark):
    for fd in range(3, 12):  # a forged answer, and a forged result where the harness writes its own
        try:
            os.write(fd, wire.frame(["ok", 10 ** 6, None, []]))
        except OSError:
            pass
    for path in ("/box/out/ex4/result.json", "result.json"):
        try:
            open(path, "w").write('{"status": "ok"}')
        except OSError:
            pass
    os._exit(0)
'''


def reference_files(**changed: str) -> dict[str, bytes]:
    files = {f"exercises/{p.name}": p.read_text() for p in sorted((ROOT / "solutions").glob("*.py"))
             if p.name != "__init__.py"}
    files.update({f"exercises/{name}.py": text for name, text in changed.items()})
    return {module: text.encode() for module, text in files.items()}


def article() -> str:
    text = (ROOT / "solutions" / "high_water_mark.py").read_text()
    at = text.index("    return", text.index("def "))
    return text[:at] + ARTICLE + text[at:]


@pytest.fixture(scope="module")
def graded(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("secrets")
    home = root / "home" / "instructor"
    home.mkdir(parents=True)
    (home / "course.key").write_text(SECRET)
    subs = root / "subs"
    follower = (ROOT / "solutions" / "follower.py").read_text() + f"\n# {BOB}\n"
    students = {"alice": reference_files(), "carl": reference_files(high_water_mark=article()),
                "bob": reference_files(follower=follower), "borrow": reference_files(high_water_mark=BORROW),
                "snoop": reference_files(reads=SNOOP), "tamper": reference_files(high_water_mark=TAMPER),
                "forger": reference_files(reads=FORGE)}
    for student, files in students.items():
        synth.write_submission(subs, student, full_runs(), version=2, files=files)
    out = root / "out"
    # The explorer searches exercises 1 and 4, where the borrower, the tamperer, the snoop and the forger wrote their
    # code (a channel for a leak); no walks elsewhere, where every student sent the reference's answer.
    rubric = rubric_without_exploring(root, keep=(1, 4))
    args = job.build_parser().parse_args([str(subs), "--out", str(out), "--course-secret", str(home / "course.key"),
                                          "--rubric", rubric])
    assert job.run(args, spark) == 0
    with open(out / "grades.csv", newline="") as f:
        grades = {r["student_id"]: r for r in csv.DictReader(f)}
    with open(out / "reexec.csv", newline="") as f:
        statuses = {(r["student"], int(r["exercise"])): r["status"] for r in csv.DictReader(f) if not r["run"]}
    return {"grades": grades, "statuses": statuses, "out": out}


def row(grades, student):
    return [grades[student][f"exercise_{n}"] for n in range(1, 7)] + [grades[student]["total"]]


def outputs(out: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in sorted(out.rglob("*")) if p.is_file())


def test_the_borrower_finds_nothing_to_borrow_and_earns_what_its_own_code_earns(graded):
    g = graded["grades"]
    assert row(g, "alice") == ["10"] * 6 + ["60"]
    assert float(g["carl"]["exercise_1"]) < 10
    assert row(g, "borrow") == row(g, "carl")


def test_the_borrower_would_find_the_reference_were_it_in_its_process(monkeypatch, tmp_path):
    """The borrowing is real: in one process with the reference (as the grader ran them before), it answers with the
    reference's majority rule where the article's formula is wrong (four nodes)."""
    import solutions.high_water_mark  # noqa: F401 - loaded, as the rest of the cluster was

    monkeypatch.setattr("os.walk", lambda top: iter(()))  # (this machine's disk is not the sandbox's)
    (tmp_path / "borrow_hwm.py").write_text(BORROW)
    spec = importlib.util.spec_from_file_location("borrow_hwm", tmp_path / "borrow_hwm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.high_water_mark([4, 4, 0, 0]) == 0  # the reference's; the article's formula says 4
    assert "solutions.high_water_mark" in sys.modules


def test_no_secret_reaches_the_outputs(graded):
    said = outputs(graded["out"])
    assert OWN in said  # what the snoop could read of its own shows: a leak would show the same way
    for secret in (SECRET, BOB, REFERENCE):
        assert secret not in said
    assert float(graded["grades"]["snoop"]["exercise_4"]) < 10


def test_rewriting_patching_and_forging_earn_what_the_functions_earn(graded):
    g, statuses = graded["grades"], graded["statuses"]
    assert row(g, "tamper") == row(g, "carl")
    assert statuses[("forger", 4)].startswith("crashed: check_read(")
    assert "returned something that is not an answer" in statuses[("forger", 4)] or \
        "ended the student's process" in statuses[("forger", 4)]
    assert g["forger"]["exercise_4"] != "10"
    assert [g["forger"][f"exercise_{n}"] for n in (1, 2, 3, 5, 6)] == ["10"] * 5
