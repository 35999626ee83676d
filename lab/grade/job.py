"""The Spark grading job: read a class's submissions -> run every check -> write grades, violations, feedback,
Gradescope results and the class report into one output folder.

Entry points (all run the same job):
    hwm-lab grade SUBMISSIONS --out DIR [--master URL] [--rubric FILE]
    python -m lab.grade SUBMISSIONS --out DIR [--master URL] [--rubric FILE]
    spark-submit --master spark://HOST:PORT lab/grade/job.py SUBMISSIONS --out DIR [--rubric FILE]

pyspark is imported only once the job runs, so `--help` and the rest of the lab stay fast and JVM-free.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING

if __package__ in (None, ""):  # run as a file by spark-submit: make the `lab` package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from lab.grade import load as loader
from lab.grade import rubric as rubric_module
from lab.grade.rules import RULES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXCERPT = 4  # events shown before and after the first violation of a check


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("submissions", metavar="SUBMISSIONS",
                        help="folder of submission zips (from `hwm-lab submit`) or unpacked submission folders; "
                             "a local path or any URI Spark reads (hdfs://, s3a://, file://)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output folder (created; the grader writes nowhere else)")
    parser.add_argument("--master", default=None, metavar="URL",
                        help="Spark master: local[*] (default), local[N], spark://HOST:PORT; under spark-submit "
                             "the master given to spark-submit is used")
    parser.add_argument("--rubric", metavar="FILE", help="rubric TOML (default: the one shipped, see docs/grading.md)")
    parser.add_argument("--shuffle-partitions", type=int, default=8, metavar="N",
                        help="spark.sql.shuffle.partitions (default 8; adaptive execution merges small ones)")
    parser.add_argument("--driver-memory", default="2g", metavar="SIZE",
                        help="memory of the driver JVM when this command starts it (default 2g)")
    parser.add_argument("--max-file-mb", type=float, default=128, metavar="MB",
                        help="largest events file accepted (default 128)")
    parser.add_argument("--max-submission-mb", type=float, default=1024, metavar="MB",
                        help="largest submission accepted, uncompressed (default 1024)")
    parser.add_argument("--keep-staging", action="store_true",
                        help="keep DIR/_staging (the extracted events and per-check results) for inspection")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def build_parser(prog: str = "python -m lab.grade") -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(
        prog=prog, description="Grade a whole class's HWM Lab submissions with Spark (docs/grading.md)."))


def spark_session(master: str | None = None, *, app_name: str = "hwm-lab-grade", shuffle_partitions: int = 8,
                  driver_memory: str | None = None, local_dir: str | None = None) -> "SparkSession":
    """A Spark session for grading: no UI, few shuffle partitions, UTC, quiet logs."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        master = "local[*]"  # not under spark-submit
    if master:
        builder = builder.master(master)
        if master.startswith("spark://127.0.0.1") or master.startswith("spark://localhost"):
            builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress",
                                                                              "127.0.0.1")
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.files.maxPartitionBytes": str(64 * 1024 * 1024),
    }
    if driver_memory:
        conf["spark.driver.memory"] = driver_memory
    if local_dir:
        conf["spark.local.dir"] = local_dir
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run(args: argparse.Namespace, spark: "SparkSession | None" = None) -> int:
    """Run the job; returns the exit code. Uses `spark` when given (and leaves it running)."""
    say = (lambda msg: None) if getattr(args, "quiet", False) else _say
    try:
        rubric = rubric_module.load(args.rubric) if args.rubric and not loader.is_uri(args.rubric) else None
    except (OSError, rubric_module.RubricError) as exc:
        print(f"grade: {exc}", file=sys.stderr)
        return 2
    if not loader.is_uri(args.submissions) and not os.path.isdir(args.submissions):
        print(f"grade: {args.submissions} is not a folder of submissions", file=sys.stderr)
        return 2
    own = spark is None
    if own:
        say(f"starting Spark ({args.master or 'local[*]'})")
        spark = spark_session(args.master, shuffle_partitions=args.shuffle_partitions,
                              driver_memory=args.driver_memory)
    try:
        uri = loader.is_uri(args.submissions) or loader.is_uri(args.out)
        storage = loader.HadoopStorage(spark) if uri else loader.LocalStorage()
        if rubric is None:
            rubric = rubric_module.load(args.rubric, storage.read) if args.rubric else rubric_module.load(None)
        return _grade(spark, storage, args, rubric, say)
    except rubric_module.RubricError as exc:
        print(f"grade: {exc}", file=sys.stderr)
        return 2
    finally:
        if own:
            spark.stop()


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


def _say(msg: str) -> None:
    print(f"[grade] {msg}", file=sys.stderr, flush=True)


def _grade(spark, storage, args, rubric, say) -> int:
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from lab.grade import report
    from lab.grade.checks import CHECKS
    from pyspark.storagelevel import StorageLevel

    from lab.grade.schema import EVENTS

    started = time.monotonic()
    out = args.out
    staging = loader.join(out, "_staging")
    storage.makedirs(out)
    storage.remove(staging)
    storage.makedirs(staging)
    limits = loader.Limits(max_file_bytes=int(args.max_file_mb * loader.MiB),
                           max_submission_bytes=int(args.max_submission_mb * loader.MiB))
    cat = loader.catalog(storage, args.submissions, staging, limits, exclude=[out], progress=say)
    subs = {s.student: s for s in cat.submissions}
    for name in cat.skipped:
        say(f"skipped {name}: neither a .zip nor a folder")

    events = kept = None
    n_events = 0
    if cat.files:
        # Parse every line once and keep what the checks read, in memory (spilling to disk if need be),
        # partitioned by run: the checks then never shuffle the events again.
        kept = loader.read_events(spark, cat, storage, partitions=args.shuffle_partitions).persist(
            StorageLevel.MEMORY_AND_DISK)
        notes = (kept.filter(F.col("file_status").isNotNull() | F.col("warning").isNotNull())
                 .groupBy("file_id", "submission")
                 .agg(F.min_by("file_status", F.when(F.col("file_status").isNotNull(), F.col("line")))
                      .alias("file_status"), F.first("warning", ignorenulls=True).alias("warning"))
                 .orderBy("file_id").collect())
        for row in notes:
            sub = subs[row["submission"]]
            if row["warning"]:
                sub.warnings.append(row["warning"])
            if row["file_status"] and sub.ok:
                sub.status = row["file_status"]
        bad = [s.student for s in cat.submissions if not s.ok]
        events = (kept.filter(F.col("seq").isNotNull() & F.col("warning").isNull() & F.col("file_status").isNull()
                              & ~F.col("submission").isin(bad))
                  .select(*EVENTS.fieldNames()))
        n_events = events.count()
    graded = [s for s in cat.submissions if s.ok]
    say(f"parsed {len(cat.files)} files: {n_events} events of the types the checks read; {len(graded)} of "
        f"{len(cat.submissions)} submissions gradable ({time.monotonic() - started:.1f} s)")

    runs_rows = [(s.student, r.run, r.exercise, r.scenario) for s in graded for r in s.runs]
    counts: dict[str, dict[tuple[str, str], int]] = {s.student: {} for s in graded}
    firsts: dict[tuple[str, str, str], dict] = {}
    common: list[dict] = []
    check_totals: dict[str, int] = {}
    if events is not None and graded:
        vdir = loader.join(staging, "violations")
        for i, (name, check) in enumerate(CHECKS, 1):
            t0 = time.monotonic()
            path = loader.join(vdir, name)
            check(events).write.mode("overwrite").parquet(storage.for_spark(path))
            check_totals[name] = spark.read.parquet(storage.for_spark(path)).count()
            say(f"check {i}/{len(CHECKS)} {name}: {check_totals[name]} violations ({time.monotonic() - t0:.1f} s)")
        runs_df = loader.small_table(spark, storage, loader.join(staging, "runs.jsonl"), runs_rows, T.StructType([
            T.StructField("submission", T.StringType()), T.StructField("run", T.StringType()),
            T.StructField("exercise", T.IntegerType()), T.StructField("scenario", T.StringType())]))
        violations = (spark.read.parquet(*[storage.for_spark(loader.join(vdir, n)) for n, _ in CHECKS])
                      .join(F.broadcast(runs_df), ["submission", "run"], "left")
                      .select("submission", "run", "exercise", "scenario", "check", "node", "index", "detail",
                              "seq", "time")
                      .orderBy("submission", "run", "check", "time", "seq"))
        violations.coalesce(1).write.mode("overwrite").parquet(storage.for_spark(loader.join(out,
                                                                                            "violations.parquet")))
        violations = spark.read.parquet(storage.for_spark(loader.join(out, "violations.parquet")))
        _write_single_csv(violations, storage, staging, loader.join(out, "violations.csv"))
        for row in violations.groupBy("submission", "run", "check").count().collect():
            counts[row["submission"]][(row["run"], row["check"])] = row["count"]
        first = Window.partitionBy("submission", "run", "check").orderBy("time", "seq", "node", "index")
        for row in (violations.withColumn("n", F.row_number().over(first)).filter("n = 1").drop("n").collect()):
            firsts[(row["submission"], row["run"], row["check"])] = row.asDict()
        shape = F.regexp_replace(F.regexp_replace("detail", "[0-9a-f]{16}", "<digest>"), r"\d+(\.\d+)?", "N")
        common = [r.asDict() for r in violations.groupBy("check", shape.alias("message"))
                  .agg(F.count("*").alias("violations"), F.countDistinct("submission").alias("students"))
                  .orderBy(F.desc("students"), F.desc("violations"), "check").limit(15).collect()]

    results = []
    for s in sorted(cat.submissions, key=lambda s: s.student):
        runs = [(r.run, r.exercise, r.scenario) for r in s.runs]
        score = rubric_module.score(rubric, runs, counts.get(s.student, {})) if s.ok else None
        results.append(report.StudentResult(student=s.student, source=s.source, status=s.status, score=score,
                                            runs=runs, warnings=list(s.warnings)))
    if events is not None:
        _attach_first_violations(storage, cat, results, firsts)
        kept.unpersist()

    report.write_all(storage, out, rubric, results, common, check_totals, n_events)
    if not getattr(args, "keep_staging", False):
        storage.remove(staging)
    elapsed = time.monotonic() - started
    totals = [r.score.total for r in results if r.score]
    mean = sum(totals) / len(totals) if totals else 0.0
    say(f"done in {elapsed:.1f} s: {len(results)} students, {len(graded)} graded, "
        f"{len(results) - len(graded)} not gradable; {n_events} events ({n_events / max(elapsed, 1e-9):,.0f}/s); "
        f"mean total {mean:.2f} of {rubric_module.fmt(rubric.max_total)}")
    for r in results:
        if not r.score:
            say(f"  {r.student}: {r.status}")
    say(f"outputs in {out}: grades.csv, violations.parquet, violations.csv, feedback/, gradescope/, report.html")
    return 0


def _write_single_csv(df, storage, staging, dest) -> None:
    """One CSV file (not Spark's folder of parts), for people and spreadsheets."""
    tmp = loader.join(staging, "csv")
    df.coalesce(1).write.mode("overwrite").option("header", True).option("escape", '"').csv(storage.for_spark(tmp))
    part = [name for name, kind, _ in storage.listdir(tmp) if name.startswith("part-") and name.endswith(".csv")]
    if part:
        storage.rename(loader.join(tmp, part[0]), dest)
    else:  # no rows: Spark may write no part file
        storage.write(dest, (",".join(df.columns) + "\n").encode())
    storage.remove(tmp)


def _attach_first_violations(storage, cat, results, firsts) -> None:
    """For every failed (exercise, check) of a student: its first violation and the lines of its events file
    around it, as written (line N of a file is its event with seq N)."""
    staged = {(student, run, node): loader.join(cat.events_dir, f"f{file_id:07d}.jsonl")
              for file_id, student, run, node, _ in cat.files}
    for r in results:
        if not r.score:
            continue
        texts: dict[str, list[str]] = {}  # this student's files only: memory stays small
        order = {run: i for i, (run, _, _) in enumerate(r.runs)}
        for cs in r.score.checks:
            if not cs.failed_runs:
                continue
            run = min(cs.failed_runs, key=lambda x: order[x])
            v = firsts.get((r.student, run, cs.check))
            if not v:
                continue
            r.first[(cs.exercise, cs.check)] = v
            path = staged.get((r.student, run, v.get("node")))
            if v.get("seq") is None or path is None:
                continue
            if path not in texts:
                texts[path] = storage.read(path).decode("utf-8", errors="replace").split("\n")
            at = int(v["seq"])
            lines = texts[path]
            v["excerpt"] = [(n, lines[n - 1], n == at) for n in range(max(1, at - EXCERPT), at + EXCERPT + 1)
                            if n <= len(lines) and lines[n - 1].strip()]


if __name__ == "__main__":
    sys.exit(main())
