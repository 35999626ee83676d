"""No student holds the class (issue 49): a submission has a time budget for all its exercises together; a student
whose every call takes 0.9 s (each call within its own limit) is stopped at it, is told so, and the others' grades
are what they are without that student."""

from __future__ import annotations

import ast
import csv
import re
from pathlib import Path

import pytest

from lab.grade.spark import job
from lab.grade.sandbox import bubblewrap as sandbox

from . import synth
from .helpers import full_runs, rubric_without_exploring
from .test_secrets import article, reference_files

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(sandbox.bwrap() is None, reason="bubblewrap (Debian's bubblewrap) is not installed")]
ROOT = Path(__file__).resolve().parents[2]


def slow(text: str, seconds: float = 0.9) -> str:
    """The file with every top-level function answering after `seconds` (each call still within its 1 s limit)."""
    lines = text.split("\n")
    for node in sorted((n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)), key=lambda n: -n.lineno):
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant):
            first = node.body[1] if len(node.body) > 1 else first  # after the docstring
        indent = " " * first.col_offset
        lines.insert(first.lineno - 1, f"{indent}__import__('time').sleep({seconds})")
    return "\n".join(lines)


def grade(spark, root: Path, students: dict) -> dict:
    subs = root / "subs"
    for student, files in students.items():
        synth.write_submission(subs, student, full_runs(), version=2, files=files)
    (root / "course.key").write_text("course-secret-of-the-budget-test")
    out = root / "out"
    args = job.build_parser().parse_args([str(subs), "--out", str(out), "--course-secret", str(root / "course.key"),
                                          "--rubric", rubric_without_exploring(root)])
    assert job.run(args, spark) == 0
    assert args.proof.budget_seconds >= 30  # the default rubric's: 3 x the reference's time, at least 30 s
    with open(out / "grades.csv", newline="") as f:
        grades = {r["student_id"]: r for r in csv.DictReader(f)}
    with open(out / "reexec.csv", newline="") as f:
        pairs = {(r["student"], int(r["exercise"])): r for r in csv.DictReader(f) if not r["run"]}
    return {"grades": grades, "pairs": pairs, "out": out, "budget": args.proof.budget_seconds}


def test_a_slow_student_is_stopped_at_the_budget_and_the_others_grades_do_not_change(spark, tmp_path):
    class_ = {"alice": reference_files(), "carl": reference_files(high_water_mark=article())}
    alone = grade(spark, tmp_path / "alone", class_)
    files = reference_files()
    slowed = {module: slow(text.decode()).encode() for module, text in files.items()}
    assert slowed != files and "sleep(0.9)" in slowed["exercises/high_water_mark.py"].decode()
    together = grade(spark, tmp_path / "together", {**class_, "slow": slowed})
    for student in class_:
        assert together["grades"][student] == alone["grades"][student]
    statuses = [together["pairs"][("slow", n)]["status"] for n in range(1, 7)]
    assert statuses == ["timeout"] * 6
    spent = sum(float(together["pairs"][("slow", n)]["wall_seconds"]) for n in range(1, 7))
    assert together["budget"] <= spent <= together["budget"] + 5  # its budget, and the moment it takes to stop it
    feedback = (together["out"] / "feedback" / "slow.md").read_text()
    said = re.findall(r"the submission's time for all its exercises together \((\d+) s\) ran out", feedback)
    assert len(said) == 6 and all(int(s) >= int(together["budget"]) for s in said)
    assert together["grades"]["slow"]["total"] == "0"
