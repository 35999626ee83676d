"""The same job on a real Spark standalone cluster on loopback (a master and one worker started from pyspark's
own bin/spark-class), submitted with spark-submit, gives the same grades as local mode."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from . import synth

from .helpers import executor_commands, full_runs, rewrite_zip

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """A master and one worker started as `hwm-lab spark-cluster up` starts them, stopped also when a test fails."""
    from lab.grade import standalone as cluster

    folder = str(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield cluster.up(folder)["master"], cluster.environment(folder)
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
    # so). (`python -m lab.grade --master spark://...` on a cluster: tests/grade/test_reexec_cluster.py.)
    import pyspark

    from lab.grade import job

    master, env = standalone
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
    assert "[grade] check 13/13 epoch-truncation" in said
    # A small class: the executors compile with C1 only, as their command lines in the worker's folder show.
    assert "(the master spark-submit was given; the class is small: a cluster's executors compile with C1 only" in said
    assert executor_commands(env) and all("-XX:TieredStopAtLevel=1" in c for c in executor_commands(env))
    assert (out / "grades.csv").read_text().splitlines()[1:] == EXPECTED
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "subs"]  # nothing written beside the output
    local = tmp_path / "local"
    assert job.run(job.build_parser().parse_args([str(subs), "--out", str(local), "--trust-traces"]), spark) == 0
    assert (out / "grades.csv").read_text() == (local / "grades.csv").read_text()
