"""A class made as a course makes it: the students' repository from `hwm-lab handout`, each student's work handed in
with `hwm-lab submit` from their own copy of it (where the lab runs the student's code for the whole cluster), and
graded with a course secret. One student right, one per classic mistake, one with a different valid answer to
exercise 3: nobody's feedback carries a note (no run is said to be not reproducible: each is re-simulated with
exactly the files that made it), each mistake costs points in its own exercise only, and every submitted run of the
right student is matched in reexec.csv."""

from __future__ import annotations

import csv
import json
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lab.grade import job, sandbox
from tests.handoututil import ALL, in_handout, made_handout, variant
from tests.test_mistakes import MISTAKES, Mistake

from .helpers import rubric_without_exploring

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(sandbox.bwrap() is None, reason="bubblewrap (Debian's bubblewrap) is not installed")]
SECRET = "the course secret of a class made from the handout"
RIGHT = "zoë"  # (a student id with a letter beyond ASCII, from submit to the grade's files)
# The docstring of exercise 3 allows any retry point at or before the conflicting generation's first index.
ANOTHER_ANSWER = Mistake("retry-at-prev", 3, "a refusal names prev_index itself as where to retry from",
                         "follower.py", "        return AppendResult(success=False, conflict_index=first)",
                         "        return AppendResult(success=False, conflict_index=prev_index)")


@pytest.fixture(scope="module")
def graded(spark, tmp_path_factory):
    made = made_handout(tmp_path_factory)
    root = tmp_path_factory.mktemp("handout-class")
    subs = root / "subs"
    subs.mkdir()
    students = {RIGHT: None, ANOTHER_ANSWER.id: ANOTHER_ANSWER, **{m.id: m for m in MISTAKES}}

    def submit(student: str):
        copy = variant(made, root / student, **dict.fromkeys(ALL, "solutions"))  # the reference answers, written
        mistake = students[student]
        if mistake is not None:
            path = copy / "exercises" / mistake.file
            text = path.read_text(encoding="utf-8")
            assert text.count(mistake.old) == 1, mistake.id
            path.write_text(text.replace(mistake.old, mistake.new), encoding="utf-8")
        return in_handout(copy, "lab.cli", "submit", "--student", student, "--out", str(subs / f"{student}.zip"),
                          timeout=600)
    with ThreadPoolExecutor(max_workers=2) as pool:  # two at a time: one per core of a small machine
        done = dict(zip(students, pool.map(submit, students)))
    for student, result in done.items():
        assert (subs / f"{student}.zip").exists(), result.stdout + result.stderr
    (root / "course.key").write_text(SECRET)
    args = job.build_parser().parse_args([str(subs), "--out", str(root / "out"), "--course-secret",
                                          str(root / "course.key"), "--rubric", rubric_without_exploring(root)])
    assert job.run(args, spark) == 0
    with open(root / "out" / "grades.csv", newline="", encoding="utf-8") as f:
        grades = {r["student_id"]: r for r in csv.DictReader(f)}
    with open(root / "out" / "reexec.csv", newline="", encoding="utf-8") as f:
        reexec = list(csv.DictReader(f))
    return {"grades": grades, "reexec": reexec, "out": root / "out", "subs": subs, "students": students}


def test_the_runs_record_every_file_of_the_students_that_ran(graded):
    with zipfile.ZipFile(graded["subs"] / f"{RIGHT}.zip") as z:
        manifest = json.loads(z.read("manifest.json"))
    assert manifest["runs"] and all(sorted(run["files_sha256"]) == sorted(f"exercises/{name}.py" for name in ALL)
                                    for run in manifest["runs"])  # the handout runs the student's code throughout


def test_nobodys_feedback_carries_a_note(graded):
    for student in graded["students"]:
        md = (graded["out"] / "feedback" / f"{student}.md").read_text(encoding="utf-8")
        page = (graded["out"] / "feedback" / f"{student}.html").read_text(encoding="utf-8")
        results = json.loads((graded["out"] / "gradescope" / student / "results.json").read_text(encoding="utf-8"))
        assert "## Notes" not in md and "<h2>Notes</h2>" not in page, (student, md)
        assert results["output"] == "Graded.", (student, results["output"])
        assert "reproduc" not in md + page, student


def test_each_mistake_costs_points_in_its_own_exercise_only(graded):
    grades = graded["grades"]
    for student, mistake in graded["students"].items():
        row = grades[student]
        assert row["grading_status"] == "ok"
        points = {n: row[f"exercise_{n}"] for n in range(1, 7)}
        if mistake is None or mistake is ANOTHER_ANSWER:
            assert points == dict.fromkeys(range(1, 7), "10"), (student, row)
        else:
            assert float(points.pop(mistake.exercise)) < 10, (student, row)
            assert points == {n: "10" for n in points}, (student, row)


def test_every_submitted_run_of_the_right_student_is_matched(graded):
    with zipfile.ZipFile(graded["subs"] / f"{RIGHT}.zip") as z:
        runs = {run["run"] for run in json.loads(z.read("manifest.json"))["runs"]}
    mine = {r["run"]: r for r in graded["reexec"] if r["student"] == RIGHT and r["run"]}
    assert set(mine) == runs and len(runs) >= 9
    assert {r["reproduction"] for r in mine.values()} == {"matched"}
    # made with the student's code for the whole cluster: honest, but graded by the grader's own runs of each
    # exercise (the student's file for it, the reference for the rest), so another exercise's mistake costs nothing
    assert {r["counts"] for r in mine.values()} == {"no"}
    assert not [r for r in graded["reexec"] if r["reproduction"] == "differed"]
    pairs = [r for r in graded["reexec"] if r["student"] == RIGHT and not r["run"]]
    assert [r["status"] for r in pairs] == ["ok"] * 6
