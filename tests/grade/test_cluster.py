"""The same job on a real Spark standalone cluster on loopback (a master and two workers started from pyspark's own
bin/spark-class) gives the same grades as local mode: submitted with spark-submit, trusting the traces; and started
with `python -m lab.grade --master`, re-executing, where the executors run the sandboxed tasks from the lab zip the
job ships them, not from a checkout. One cluster for both (starting one costs seconds of three JVMs)."""

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.grade import job, sandbox

from . import synth

from .helpers import executor_commands, full_runs, rewrite_zip, rubric_without_exploring
from .test_reexec import LOG_END, SECRET, submit

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """A master and two workers (`hwm-lab spark-cluster`'s own start), stopped also when a test fails. The workers'
    Python is the tests' interpreter, without this checkout on the path (PYTHONPATH empty): the lab reaches them
    as the job's zip."""
    from lab.grade import standalone as cluster

    folder = str(tmp_path_factory.mktemp("spark-cluster"))
    try:
        state = cluster.up(folder, workers=2, env={"PYTHONPATH": ""})
        yield state["master"], cluster.environment(folder, {"PYTHONPATH": ""})
    finally:
        cluster.down(folder)


EXPECTED = ["alice,10,10,0,0,0,0,20,ok", "bob,0,10,0,0,0,0,10,ok", "hank,0,0,0,0,0,0,0,missing manifest"]


def small_class(folder: Path) -> Path:
    synth.write_submission(folder, "alice", full_runs()[:2])
    synth.write_submission(folder, "bob", full_runs(frozenset({"majority"}))[:2])
    synth.write_submission(folder, "hank", full_runs()[:1])
    rewrite_zip(folder / "hank.zip", lambda n, d: None if n == "manifest.json" else d)
    return folder


def test_spark_submit_runs_the_job_file_on_the_cluster_and_gives_the_grades_of_local_mode(spark, standalone,
                                                                                           tmp_path):
    # The documented entry point: spark-submit --master spark://HOST:PORT lab/grade/job.py SUBMISSIONS --out DIR,
    # from a folder outside the checkout (the job file puts its checkout on the path itself). The executors'
    # Python is `false`, which runs no Python: grading the traces as sent must need none there (docs/grading.md says
    # so). (`python -m lab.grade --master spark://...` on a cluster: the next test.)
    import pyspark

    master, env = standalone
    before = set(executor_commands(env))
    subs = small_class(tmp_path / "subs")
    out = tmp_path / "out"
    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    proc = subprocess.run([str(spark_submit), "--master", master, "--driver-memory", "1g",
                           "--driver-java-options", "-XX:TieredStopAtLevel=1",  # a small class (docs/grading.md)
                           str(ROOT / "lab" / "grade" / "job.py"),
                           str(subs), "--out", str(out), "--trust-traces"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=420,
                          env={**env, "PYTHONPATH": "", "PYSPARK_DRIVER_PYTHON": sys.executable,
                               "PYSPARK_PYTHON": shutil.which("false")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    # spark-submit hands the Python driver's stderr to its own stdout, so the progress lines may be in either.
    said = proc.stdout + proc.stderr
    assert "[grade] check 14/14 progress" in said
    # A small class: the executors compile with C1 only, as their command lines in the worker's folder show.
    assert (f"started Spark ({master}, given to spark-submit; the class is small: the cluster's executors compile "
            "with C1 only") in said
    started = [c for p, c in executor_commands(env).items() if p not in before]
    assert started and all("-XX:TieredStopAtLevel=1" in c for c in started)
    assert (out / "grades.csv").read_text().splitlines()[1:] == EXPECTED
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "subs"]  # nothing written beside the output
    local = tmp_path / "local"
    assert job.run(job.build_parser().parse_args([str(subs), "--out", str(local), "--trust-traces"]), spark) == 0
    assert (out / "grades.csv").read_text() == (local / "grades.csv").read_text()


@pytest.mark.skipif(sandbox.bwrap() is None, reason="bubblewrap (Debian's bubblewrap) is not installed")
def test_two_workers_re_execute_and_give_the_same_grades_as_local_mode(spark, standalone, tmp_path, monkeypatch):
    master, env = standalone
    before = set(executor_commands(env))
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
    started = [c for p, c in executor_commands(env).items() if p not in before]
    assert len(started) == 2 and all("-XX:TieredStopAtLevel=1" in c for c in started)  # one executor per worker
    assert (remote / "grades.csv").read_text() == (local / "grades.csv").read_text()
    with open(remote / "reexec.csv", newline="") as f:
        assert [r["status"] for r in csv.DictReader(f) if not r["run"]] == ["ok"] * 12
    grades = (local / "grades.csv").read_text().splitlines()
    assert grades[1].startswith("alice,10,10,10,10,10,10,60,") and grades[2].startswith("lena,10,10,")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["local", "made", "remote", "subs"]
