"""The grading job's Spark session: its JIT (C1 only for a small class), memory, loopback in local mode, and how
many partitions and which settings a class's size asks for (lab.grade.spark.job)."""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import zipfile

from lab.grade.spark import edges, jvm
from lab.grade.inputs.storage import is_uri


QUICK_JIT_BYTES = 64 * 1024 * 1024
QUICK_JIT = "-XX:TieredStopAtLevel=1"


def class_bytes(folder: str, skip: frozenset[str] | set[str] = frozenset()) -> int:
    """Bytes the submissions in a local folder hold, a zip counted by what it says it unpacks to (nothing is
    unpacked here); an unreadable file counts for nothing (the job says what is wrong with it). The entries named
    in `skip` (unchanged since a previous grade, whose results are reused) are left out."""
    total = 0
    for root, dirs, names in os.walk(folder):
        if root == folder:
            dirs[:] = [d for d in dirs if d not in skip]
            names = [n for n in names if n not in skip]
        for name in names:
            path = os.path.join(root, name)
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):  # a pipe named .zip would block the read
                    continue
                if name.lower().endswith(".zip"):
                    with zipfile.ZipFile(path) as z:
                        total += sum(info.file_size for info in z.infolist())
                else:
                    total += os.path.getsize(path)
            except (OSError, zipfile.BadZipFile):
                continue
    return total


def quick_jit(args: argparse.Namespace, reused: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether the grade's JVMs should compile with C1 only: a small part to grade, read from a local folder (a small
    class, or a re-grade where only a few submissions changed: `reused` names the others). It holds for the job's own
    driver (not one spark-submit started) and for a cluster's executors, on any master."""
    return not is_uri(args.submissions) and class_bytes(args.submissions, reused) <= QUICK_JIT_BYTES


def session_conf(*, driver_memory: str | None = None, local_dir: str | None = None,
                 quick: bool = False, java_options: list[str] | None = None) -> dict[str, str]:
    """The settings a grading session starts with (the job's SQL settings come later, in `settings`)."""
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
    }
    if driver_memory:
        conf["spark.driver.memory"] = driver_memory
    if local_dir:
        conf["spark.local.dir"] = local_dir
    if java_options is None:  # the class archive, when it has been made (lab/grade/spark/jvm.py)
        java_options = jvm.java_options(archive=jvm.ready())
    options = ([QUICK_JIT] if quick else []) + java_options
    if options:
        conf["spark.driver.extraJavaOptions"] = " ".join(options)
    if quick:  # a cluster's executors too (local mode has none): before any extraJavaOptions of the instructor's
        conf["spark.executor.defaultJavaOptions"] = QUICK_JIT
    return conf


def spark_session(master: str | None = None, *, app_name: str = "hwm-lab-grade", driver_memory: str | None = None,
                  local_dir: str | None = None, quick: bool = False,
                  java_options: list[str] | None = None) -> "SparkSession":
    """A Spark session for grading: no UI, UTC, quiet logs. The job's own SQL settings are applied by the job
    (`settings`), so they hold in a session made elsewhere too (spark-submit, tests)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        master = "local[*]"  # not under spark-submit
    if master:
        builder = builder.master(master)
        if master.startswith("spark://127.0.0.1") or master.startswith("spark://localhost"):
            builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress",
                                                                              "127.0.0.1")
    conf = session_conf(driver_memory=driver_memory, local_dir=local_dir, quick=quick, java_options=java_options)
    if master and edges.is_local(master):
        conf.update(edges.loopback_conf(master))
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")  # to DIR/spark.log when the job started the JVM (edges.jvm_output_to)
    return spark


PARTITION_BYTES = 128 * 1024 * 1024  # of events files per partition, at most (about)
MEMORY_CACHE_BYTES = 512 * 1024 * 1024  # events files up to this size are cached in memory, larger on disk


def partitions_for(spark, wanted: int | None = None, events_bytes: int = 0) -> int:
    """Partitions of the events: one per core in local mode (a task per core, no more), twice the cores on a
    cluster (so that a slow worker does not hold the others up); more when the events files add up to more than
    PARTITION_BYTES a partition, so that a task's share of the cache and of the checks' sorts stays well within
    the default driver memory (16M events in 2 partitions ran out of a 2g heap)."""
    if wanted:
        return wanted
    sc = spark.sparkContext
    cores = sc.defaultParallelism
    by_size = -(-events_bytes // PARTITION_BYTES)
    return max(1, cores if sc.master.startswith("local") else 2 * cores, by_size)


# The SQL settings the plans are written for (docs/grading.md, "How the job runs").
SETTINGS = {
    # The events are hash-partitioned by (submission, run) once; joins on (submission, run, node, ...) stay inside
    # that partitioning instead of shuffling both sides again by all their keys.
    "spark.sql.requireAllClusterKeysForCoPartition": "false",
    "spark.sql.requireAllClusterKeysForDistribution": "false",
    # No broadcast of a small side: it is a job of its own, and the partitioning already brings both sides together.
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1",
    # Nothing to adapt: the checks run without a shuffle, and the partitions are few and even.
    "spark.sql.adaptive.enabled": "false",
    # A class is many small files: pack them into few read tasks (the default counts each file as 4 MB).
    "spark.sql.files.openCostInBytes": str(64 * 1024),
    "spark.sql.files.maxPartitionBytes": str(64 * 1024 * 1024),
}


def on_disk(events_bytes: int) -> bool:
    """Whether the parsed events are cached on disk rather than in memory: Spark's in-memory cache of 16M events
    ran a 2g driver out of heap although it may spill (it builds many column batches on the heap first)."""
    return events_bytes > MEMORY_CACHE_BYTES


@contextlib.contextmanager
def settings(spark, partitions: int):
    """The job's SQL settings for the time of the job; the session's own come back afterwards."""
    wanted = {**SETTINGS, "spark.sql.shuffle.partitions": str(partitions)}
    before = {key: spark.conf.get(key, None) for key in wanted}
    for key, value in wanted.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
