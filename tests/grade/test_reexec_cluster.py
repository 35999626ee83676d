"""The re-executing grade on a Spark standalone cluster of two workers on loopback (started from pyspark's own
bin/spark-class) gives the same grades as local mode: the executors run the sandboxed tasks from the lab zip the
job ships them, not from a checkout."""

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from lab.grade import job, sandbox, standalone

from .helpers import executor_commands, rubric_without_exploring
from .test_reexec import LOG_END, SECRET, submit

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(sandbox.bwrap() is None, reason="bubblewrap (Debian's bubblewrap) is not installed")]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory):
    """A master and two workers (`hwm-lab spark-cluster`'s own start), stopped also when a test fails. The workers'
    Python is the tests' interpreter, without this checkout on the path (PYTHONPATH empty): the lab reaches them
    as the job's zip."""
    folder = str(tmp_path_factory.mktemp("spark-2workers"))
    try:
        state = standalone.up(folder, workers=2, env={"PYTHONPATH": ""})
        yield state["master"], standalone.environment(folder, {"PYTHONPATH": ""})
    finally:
        standalone.down(folder)


def test_two_workers_give_the_same_grades_as_local_mode(spark, two_workers, tmp_path, monkeypatch):
    master, env = two_workers
    made = tmp_path / "made"
    made.mkdir()
    subs = tmp_path / "subs"
    subs.mkdir()
    for student, edit in (("alice", None), ("lena", LOG_END)):
        zip_path = submit(made, student, edit, "follower.py")
        zip_path.rename(subs / zip_path.name)

    # The explorer runs on the workers for exercise 1 only: its walks are most of a pair's time, and lena's
    # exercise 3, which loses points, would be searched again with ten times the walks (tests/grade/test_reexec.py
    # grades with the default rubric).
    rubric = rubric_without_exploring(made, keep=(1,))
    monkeypatch.setenv("HWM_LAB_COURSE_SECRET", SECRET)
    local = tmp_path / "local"
    assert job.run(job.build_parser().parse_args([str(subs), "--out", str(local), "--rubric", rubric]), spark) == 0

    remote = tmp_path / "remote"
    proc = subprocess.run([sys.executable, "-m", "lab.grade", str(subs), "--out", str(remote), "--master", master,
                           "--rubric", rubric, "--shuffle-partitions", "2", "--driver-memory", "1g"],
                          cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT), "HWM_LAB_COURSE_SECRET": SECRET},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "re-executed 12 (submission, exercise) pairs in the sandbox" in proc.stderr
    assert "the class is small: the driver and the executors compile with C1 only" in proc.stderr
    assert len(executor_commands(env)) == 2 and all("-XX:TieredStopAtLevel=1" in c for c in executor_commands(env))
    assert (remote / "grades.csv").read_text() == (local / "grades.csv").read_text()
    with open(remote / "reexec.csv", newline="") as f:
        assert [r["status"] for r in csv.DictReader(f)] == ["ok"] * 12
    grades = (local / "grades.csv").read_text().splitlines()
    assert grades[1].startswith("alice,10,10,10,10,10,10,60,") and grades[2].startswith("lena,10,10,")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["local", "made", "remote", "subs"]
