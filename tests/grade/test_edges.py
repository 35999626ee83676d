"""The job's edges: Ctrl-C ends it in one line with the staging folder removed and exit 130 (tests/grade/
test_interrupt.py: at any moment, --out left as it was); Spark's own log goes to DIR/spark.log, not among the
progress lines; local mode binds to loopback; feedback never says None."""

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.grade.inputs.storage import LocalStorage
from lab.grade.inputs.submissions import catalog
from lab.grade.outputs import feedback
from lab.grade.inputs.rubric import load, score

from .helpers import make_class

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.spark
def test_ctrl_c_ends_the_job_in_one_line_and_removes_the_staging_folder(tmp_path):
    make_class(tmp_path / "subs")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "lab.grade", str(tmp_path / "subs"), "--out", str(out),
                             "--max-file-mb", "1", "--trust-traces"], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # Ctrl-C once Spark is parsing the class
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            if "submissions" in line and "read" in line and (out / "_new" / "_staging").exists():
                break
        assert (out / "_new" / "_staging").exists(), "".join(lines)
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    after = [x for x in rest.splitlines() if x.strip() and not x.startswith("[grade] read ")]
    assert proc.returncode == 130, rest
    assert len(after) == 1 and after[0].startswith("grade: interrupted"), rest
    # A first grade: --out did not exist, and does not now; Spark's log is kept in the temporary folder, named
    assert not out.exists()
    said = "".join(lines) + rest
    assert "Traceback" not in said and "WARN" not in said and "py4j" not in said
    log = Path(re.search(r"this grade's log: (.*)\)$", after[0]).group(1))
    try:
        assert "Spark" in log.read_text()
    finally:
        log.unlink()


def test_an_unfinished_grade_leaves_out_as_it_was_and_the_next_grade_removes_its_log(tmp_path):
    from lab.grade.outputs import outdir

    storage, out = LocalStorage(), tmp_path / "out"
    for before in ("absent", "empty"):  # a grade into a folder that held no grade: it holds none after
        if before == "empty":
            out.mkdir()
        new = Path(outdir.begin(storage, str(out)))
        (new / "grades.csv").write_text("half of a grade")
        (new / "spark.log").write_text("Spark said this")
        kept = Path(outdir.abandon(storage, str(out), "spark.log"))
        assert kept.read_text() == "Spark said this" and kept.parent != out
        kept.unlink()
        assert (out.exists(), list(out.iterdir()) if out.exists() else None) == \
            ((False, None) if before == "absent" else (True, []))
    # A folder with a grade in it keeps the unfinished grade's log beside it, until the next grade is in place.
    new = Path(outdir.begin(storage, str(out)))
    (new / "grades.csv").write_text("the first grade")
    outdir.commit(storage, str(out))
    new = Path(outdir.begin(storage, str(out)))
    (new / "spark.log").write_text("the second grade's log")
    assert outdir.abandon(storage, str(out), "spark.log") == str(out / outdir.INTERRUPTED_LOG)
    assert sorted(p.name for p in out.iterdir()) == ["grades.csv", outdir.INTERRUPTED_LOG]
    new = Path(outdir.begin(storage, str(out)))
    (new / "grades.csv").write_text("the third grade")
    outdir.commit(storage, str(out))
    assert sorted(p.name for p in out.iterdir()) == ["grades.csv"]
    assert (out / "grades.csv").read_text() == "the third grade"


@pytest.mark.spark
def test_spark_log_stays_out_of_the_progress_lines_and_binds_to_loopback(tmp_path):
    from .synth import write_submission
    from .helpers import full_runs

    write_submission(tmp_path / "subs", "alice", full_runs())
    done = subprocess.run([sys.executable, "-m", "lab.grade", str(tmp_path / "subs"), "--out", str(tmp_path / "out"),
                           "--trust-traces"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert all(x.startswith(("[grade] ", "grade: ")) for x in done.stderr.splitlines()), done.stderr
    log = (tmp_path / "out" / "spark.log").read_text()
    assert "Using Spark's default log4j profile" in log or "WARN" in log
    assert "resolves to a loopback address" not in log  # Spark was never left to pick an outward address


def test_local_mode_is_configured_for_loopback(monkeypatch):
    from lab.grade.spark import edges

    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    assert edges.loopback_conf("local[2]") == {"spark.driver.host": "127.0.0.1",
                                               "spark.driver.bindAddress": "127.0.0.1"}
    assert edges.loopback_conf("spark://10.0.0.5:7077") == {}
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.1.2.3")  # told otherwise
    assert edges.loopback_conf("local[*]") == {}


def test_feedback_never_shows_none():
    rubric = load(None)
    runs = [("ex1", 1, "s1")]
    s = score(rubric, runs, {("ex1", "scenario"): 1})
    r = feedback.StudentResult("amy", "amy.zip", "ok", s, runs)
    # A run-wide violation: no node, no time, no detail.
    r.first[(1, "scenario")] = {"run": "ex1", "node": None, "time": None, "detail": None, "seq": None}
    texts = [feedback.feedback_md(rubric, r), feedback.feedback_html(rubric, r),
             json.dumps(feedback.gradescope(rubric, r))]
    assert "First violation (run ex1)" in texts[0]
    for text in texts:
        assert "None" not in text and "null" not in text


def test_a_manifest_without_a_format_is_said_so_in_words(tmp_path):
    sub = tmp_path / "subs" / "amy"
    sub.mkdir(parents=True)
    (sub / "manifest.json").write_text(json.dumps({"version": 1, "student": "amy", "runs": []}))
    cat = catalog(LocalStorage(), str(tmp_path / "subs"), str(tmp_path / "staging"))
    status = cat.submissions[0].status
    assert status.startswith("malformed: manifest.json has no format") and "None" not in status


def test_re_execution_needs_the_reference_answers_which_a_handout_has_not(tmp_path, monkeypatch, capsys):
    from lab.grade.spark import job

    monkeypatch.setattr(job, "course_folder", lambda name: None)  # as in a handout: no solutions/ beside the lab
    (tmp_path / "subs").mkdir()
    (tmp_path / "course.key").write_text("a course secret of 32 bytes, ok.")
    args = job.build_parser().parse_args([str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--course-secret",
                                          str(tmp_path / "course.key"), "--unsandboxed"])
    assert job.run(args) == 2
    assert "this is a handout (no solutions/ beside the lab)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
