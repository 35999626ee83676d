"""The grades and violations of a class with every kind of violation are those the grading job wrote before its
checks were rewritten for speed (tests/grade/data/make_baseline.py says how the class and its expected output
were made)."""

import csv
import shutil
from pathlib import Path

import pytest

from lab.grade import job

pytestmark = pytest.mark.spark

BASELINE = Path(__file__).parent / "data" / "baseline"


ADDED_SINCE = {"progress"}  # checks the job has gained since the baseline was written: not in it


def violation_rows(path: Path, columns: int = 10) -> list[tuple]:
    """The rows of a violations.csv, sorted, in the baseline's ten columns (the job has since added `graded`), of
    the checks the baseline's job had."""
    with open(path, newline="") as f:
        rows = [r[:columns] for r in csv.reader(f)]
    return [tuple(rows[0])] + sorted(tuple(r) for r in rows[1:] if r[4] not in ADDED_SINCE)


@pytest.fixture(scope="module")
def graded(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("baseline")
    # A copy: the grader hard-links unpacked folders into its staging area, and the checkout stays untouched.
    shutil.copytree(BASELINE / "submissions", root / "submissions")
    args = job.build_parser().parse_args([str(root / "submissions"), "--out", str(root / "out"), "--max-file-mb",
                                          "1", "--rubric", str(BASELINE / "rubric.toml"), "--trust-traces"])
    assert job.run(args, spark) == 0
    return root / "out"


def test_the_class_breaks_every_check():
    checks = {row[4] for row in violation_rows(BASELINE / "violations.csv")[1:]}
    assert {"hwm-majority", "read-above-hwm", "hwm-monotonic", "committed-never-change", "acked-in-final-logs",
            "logs-agree", "truncation-safe", "liveness", "scenario"} == checks


def test_grades_are_those_of_the_previous_job(graded):
    assert (graded / "grades.csv").read_text() == (BASELINE / "grades.csv").read_text()


def test_violations_are_those_of_the_previous_job(graded):
    got, expected = violation_rows(graded / "violations.csv"), violation_rows(BASELINE / "violations.csv")
    assert got[0] == expected[0]
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing and not extra, f"missing {missing[:5]}, extra {extra[:5]}"
    assert got == expected  # and as many of each
