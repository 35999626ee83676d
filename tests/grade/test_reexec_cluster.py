"""The re-executing grade on a Spark standalone cluster of two workers on loopback (started from pyspark's own
bin/spark-class) gives the same grades as local mode: the executors run the sandboxed tasks from the lab zip the
job ships them, not from a checkout."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab.grade import job, sandbox

from .test_cluster import free_port, listening, wait_for
from .test_reexec import LOG_END, SECRET, submit

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(sandbox.bwrap() is None, reason="bubblewrap (Debian's bubblewrap) is not installed")]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory):
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    spark_class = spark_home / "bin" / "spark-class"
    logs = tmp_path_factory.mktemp("spark-2workers")
    # The workers' Python: the tests' interpreter, started in their own work folders, without this checkout on
    # the path (PYTHONPATH empty): the lab reaches them as the job's zip.
    env = {**os.environ, "SPARK_HOME": str(spark_home), "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": "",
           "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_DIRS": str(logs), "SPARK_WORKER_DIR": str(logs / "work")}
    port, ui = free_port(), free_port()
    procs = []
    try:
        procs.append(subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(ui)], env=env, stdout=open(logs / "master.log", "wb"), stderr=subprocess.STDOUT,
            start_new_session=True))
        wait_for(lambda: listening(port), 90, "the Spark master listening")
        for n in range(2):
            log = logs / f"worker{n}.log"
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}",
                 "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()),
                 "--work-dir", str(logs / f"work{n}")],
                env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True))
        for n in range(2):
            wait_for(lambda: b"Successfully registered with master" in (logs / f"worker{n}.log").read_bytes(), 90,
                     f"worker {n} registering")
        yield f"spark://127.0.0.1:{port}", env
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


def test_two_workers_give_the_same_grades_as_local_mode(spark, two_workers, tmp_path, monkeypatch):
    master, env = two_workers
    made = tmp_path / "made"
    made.mkdir()
    subs = tmp_path / "subs"
    subs.mkdir()
    for student, edit in (("alice", None), ("lena", LOG_END)):
        zip_path = submit(made, student, edit, "follower.py")
        zip_path.rename(subs / zip_path.name)

    monkeypatch.setenv("HWM_LAB_COURSE_SECRET", SECRET)
    local = tmp_path / "local"
    assert job.run(job.build_parser().parse_args([str(subs), "--out", str(local)]), spark) == 0

    remote = tmp_path / "remote"
    proc = subprocess.run([sys.executable, "-m", "lab.grade", str(subs), "--out", str(remote), "--master", master,
                           "--shuffle-partitions", "2", "--driver-memory", "1g"],
                          cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT), "HWM_LAB_COURSE_SECRET": SECRET},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "re-executed 12 (submission, exercise) pairs in the sandbox" in proc.stderr
    assert (remote / "grades.csv").read_text() == (local / "grades.csv").read_text()
    with open(remote / "reexec.csv", newline="") as f:
        assert [r["status"] for r in csv.DictReader(f)] == ["ok"] * 12
    grades = (local / "grades.csv").read_text().splitlines()
    assert grades[1].startswith("alice,10,10,10,10,10,10,60,") and grades[2].startswith("lena,10,10,")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["local", "made", "remote", "subs"]
