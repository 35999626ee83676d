"""Version 2 submissions graded end to end: the traces carry the grade, the self-reported rule results a point per
exercise; a run made from other files than the submitted ones (stale) or missing a node's events (incomplete)
counts for nothing, and the feedback says so."""

import csv

import pytest

from lab.grade import job

from . import synth
from .helpers import full_runs, rewrite_zip

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def graded(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("v2")
    subs = root / "subs"
    synth.write_submission(subs, "vera", full_runs(), version=2)
    # edith's leader commits alone (S1: exercises 1 and 5), her reads of the HWM itself are refused (exercise 4)
    # and her WAL truncation keeps the records from the cut on (exercise 5), but her manifest claims that every
    # rule held and every run passed.
    synth.write_submission(subs, "edith", full_runs(frozenset({"majority", "read-strict", "wal-keeps"})),
                           version=2)
    # rosa's traces are clean, but her own check failed one rule of two in every exercise.
    synth.write_submission(subs, "rosa", full_runs(), version=2, rules={e: [True, False] for e in range(1, 7)})
    # stan changed exercise 1 after its run was made.
    synth.write_submission(subs, "stan", full_runs(), version=2, made_from={
        "ex1-s1": {"exercises/high_water_mark.py": synth.sha256(b"def high_water_mark(m): ...")}})
    # ines deleted the events of one node of her exercise 4 run.
    synth.write_submission(subs, "ines", full_runs(), version=2)
    rewrite_zip(subs / "ines.zip", lambda n, d: None if n == "runs/ex4-l1/events-B.jsonl" else d)
    args = job.build_parser().parse_args([str(subs), "--out", str(root / "out"), "--trust-traces"])
    assert job.run(args, spark) == 0
    return root / "out"


def grades(out) -> dict:
    with open(out / "grades.csv", newline="") as f:
        return {r["student_id"]: [r[f"exercise_{n}"] for n in range(1, 7)] + [r["total"]] for r in csv.DictReader(f)}


def test_the_traces_carry_the_grade(graded):
    g = grades(graded)
    assert g["vera"] == ["10"] * 6 + ["60"]
    # edith's exercise 1 keeps its rule point and S1's scenario (her strict gate refuses the read of e4 at the HWM,
    # so "e4 is never served" holds) and loses the other checks (7); exercise 4 loses read-gate-strict (2);
    # exercise 5 loses wal-truncation, truncation-safe and acked-in-final-logs (6).
    assert g["edith"] == ["3", "10", "10", "8", "4", "10", "45"]
    # A failed rule costs half of the one self-reported point, no more.
    assert g["rosa"] == ["9.5"] * 6 + ["57"]


def test_a_manifest_that_claims_a_pass_does_not_buy_back_the_points(graded):
    md = (graded / "feedback" / "edith.md").read_text()
    assert "(`read-gate-strict`), 0 / 2 points" in md and "(`hwm-majority`), 0 / 4 points" in md
    assert "refused a read of index" in md
    assert "(`wal-truncation`), 0 / 3 points" in md and "but its log then ends at" in md


def test_a_stale_run_counts_for_nothing_and_the_feedback_says_so(graded):
    assert grades(graded)["stan"] == ["0", "10", "10", "10", "10", "10", "50"]
    md = (graded / "feedback" / "stan.md").read_text()
    assert ("- Your run ex1-s1 (exercise 1) was not graded: it was made from another version of "
            "exercises/high_water_mark.py than the one submitted.") in md
    assert "- Exercise 1 has no run the grader could grade, so it earns nothing." in md


def test_an_incomplete_run_counts_for_nothing_and_the_feedback_says_so(graded):
    assert grades(graded)["ines"] == ["10", "10", "10", "0", "10", "10", "50"]
    md = (graded / "feedback" / "ines.md").read_text()
    assert ("- Your run ex4-l1 (exercise 4) was not graded: it is incomplete (events-B.jsonl is missing), and a "
            "missing file could hide a broken rule.") in md
    html = (graded / "feedback" / "ines.html").read_text()
    assert "Your run ex4-l1 (exercise 4) was not graded: it is incomplete" in html
