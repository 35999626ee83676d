"""The class report counts only what is graded: violations of checks the rubric skips on a run's scenario are kept
in violations.csv with graded=false and counted nowhere; the histogram spans 0 to the rubric's maximum and no
label is cut."""

import csv
import re

import pytest

from lab.grade.spark import job
from lab.grade.outputs import feedback, report
from lab.grade.inputs import rubric as rubric_module
from lab.grade.inputs.rubric import load

from . import synth
from .helpers import full_runs


def k2_runs(bugs):
    """full_runs, with the runs of exercises 3 and 6 relabelled as scenario K2, which skips truncation-safe."""
    runs = full_runs(bugs)
    for cluster, exercise in runs:
        if exercise in (3, 6):
            cluster.scenario = "k2"
    return runs


@pytest.mark.spark
def test_a_student_whose_graded_checks_all_pass_shows_no_violation_anywhere(spark, tmp_path, capsys):
    subs = tmp_path / "submissions"
    # kate drops a committed entry on restart (as frank does in test_job), but only in runs of K2, where the
    # rubric skips truncation-safe.
    synth.write_submission(subs, "kate", k2_runs(frozenset({"truncate-committed"})))
    synth.write_submission(subs, "alice", full_runs())
    # (a rubric whose K2 skips truncation-safe on the whole run: the default one skips it at index 2 only,
    # tests/grade/test_rubric.py)
    whole = tmp_path / "rubric.toml"
    whole.write_text(rubric_module.default_text().replace("index = 2\n", ""))
    args = job.build_parser().parse_args([str(subs), "--out", str(tmp_path / "out"), "--max-file-mb", "1",
                                          "--trust-traces", "--rubric", str(whole)])
    assert job.run(args, spark) == 0
    out = tmp_path / "out"
    assert "kate,10,10,10,10,10,10,60,ok" in (out / "grades.csv").read_text()

    with open(out / "violations.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    kate = [r for r in rows if r["submission"] == "kate"]
    assert kate, "the skipped check's violations are kept"
    # In K2 the rubric skips truncation-safe; in the L1 runs of exercises 2 and 4 it does not grade it at all.
    assert {r["graded"] for r in kate} == {"false"} and "k2" in {r["scenario"] for r in kate}

    err = capsys.readouterr().err
    counts = [int(n) for n in re.findall(r"check \d+/\d+ [a-z-]+: (\d+) violations", err)]
    assert len(counts) == 14 and sum(counts) == 0
    html = (out / "report.html").read_text()
    assert "<p>No violations.</p>" in html
    table = html.split("<h2>Failure rate per rule</h2>")[1].split("</table>")[0]
    rows = re.findall(r"<tr><td>([a-z-]+)</td><td>(\d+)</td><td>\d+</td><td>[\d.]+%</td><td>\d+</td><td>(\d+)</td>", table)
    assert len(rows) >= 14 and {(students, failed) for _, students, failed in rows} == {("0", "0")}, rows
    assert "Every check passed on every run" in (out / "feedback" / "kate.md").read_text()


def test_the_histogram_spans_zero_to_the_rubrics_maximum():
    svg = report._histogram_svg([12.5, 54.0, 60.0], 60.0)
    labels = re.findall(r'class="axis"[^>]*>([\d.]+)</text>', svg)
    assert labels[0] == "0" and labels[-1] == "60"
    # The full marks land in the last bin, which reaches 60.
    assert "54 to 60: 2 students" in svg


def test_no_exercise_label_is_cut():
    rubric = load(None)
    results = [feedback.StudentResult("s", "s.zip", "missing manifest", None, [])]
    html = report.class_report(rubric, results, [], {}, 0)
    for exercise in rubric.exercises:
        assert f">{exercise.number}. {exercise.title}</text>" in html
    widths = [float(w) for w in re.findall(r'<svg [^>]*width="([\d.]+)"', html)]
    longest = max(len(f"{e.number}. {e.title}") for e in rubric.exercises)
    assert max(widths) > report.CHAR_PX * longest
