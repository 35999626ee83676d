"""The Spark grading job: read a class's submissions -> run every check -> write grades, violations, feedback,
Gradescope results and the class report into one output folder.

Entry points (all run the same job):
    hwm-lab grade SUBMISSIONS --out DIR [--master URL] [--rubric FILE]
    python -m lab.grade SUBMISSIONS --out DIR [--master URL] [--rubric FILE]
    spark-submit --master spark://HOST:PORT lab/grade/spark/job.py SUBMISSIONS --out DIR [--rubric FILE]

pyspark is imported only once the job runs, so `--help` and the rest of the lab stay fast and JVM-free.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from typing import TYPE_CHECKING

if __package__ in (None, ""):  # run as a file by spark-submit: make the `lab` package importable
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))  # above lab/

from lab.grade.inputs import rubric as rubric_module, seeds as reexec_seeds
from lab.grade.inputs.archive import Limits
from lab.grade.inputs.storage import HadoopStorage, LocalStorage, MiB, is_uri, join
from lab.grade.inputs.submissions import NOT_A_SUBMISSION, catalog
from lab.grade.outputs import incremental, outdir
from lab.grade.outputs.lms import lms_mapping
from lab.grade.outputs.similarity import course_folder
from lab.grade.sandbox import bubblewrap, proof
from lab.grade.spark import edges, jvm
from lab.grade.spark.arguments import add_arguments
from lab.grade.spark.parse import read_events, small_table
from lab.grade.spark.session import on_disk, partitions_for, quick_jit, settings, spark_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXCERPT = 4  # events shown before and after the first violation of a check


def build_parser(prog: str = "python -m lab.grade") -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(
        prog=prog, description="Grade a whole class's HWM Lab submissions with Spark (docs/grading.md)."))


# A class whose events unpack to at most this many bytes is graded by a JVM that compiles with C1 only: its job is
# over before C2's compilations pay off, and on 2 cores they take a core from the job (bench/grading.py: the small
# class 30.3 -> 23.2 s; a 1.6M-event class is slower that way, 65 -> 73 s, so it keeps the default).
def run(args: argparse.Namespace, spark: "SparkSession | None" = None) -> int:
    """Run the job; returns the exit code. Uses `spark` when given (and leaves it running)."""
    say = (lambda msg: None) if getattr(args, "quiet", False) else _say
    try:
        rubric = rubric_module.load(args.rubric) if args.rubric and not is_uri(args.rubric) else None
    except (OSError, rubric_module.RubricError) as exc:
        print(f"grade: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "check_sandbox", False):
        return proof.check(rubric or rubric_module.load(None), getattr(args, "course_secret", None), args.out)
    if not args.submissions or not args.out:
        print("grade: give SUBMISSIONS and --out DIR (or --check-sandbox alone)", file=sys.stderr)
        return 2
    try:
        args.lms_mapping = lms_mapping(args)
    except (OSError, ValueError) as exc:
        print(f"grade: {exc}", file=sys.stderr)
        return 2
    if not is_uri(args.submissions) and not os.path.isdir(args.submissions):
        print(f"grade: {args.submissions} is not a folder of submissions", file=sys.stderr)
        return 2
    try:
        args.secret = reexec_seeds.read_secret(getattr(args, "course_secret", None))
    except reexec_seeds.SecretError as exc:
        print(f"grade: {exc}", file=sys.stderr)
        return 2
    if args.secret is None and not getattr(args, "trust_traces", False):
        print(f"grade: no course secret: the grader re-executes every submission's code with seeds drawn per student "
              f"from it. Give --course-secret FILE (or ${reexec_seeds.SECRET_FILE_ENV}), or pass --trust-traces to "
              f"grade the submitted runs as sent (docs/grading.md)", file=sys.stderr)
        return 2
    if args.secret is not None and not getattr(args, "unsandboxed", False) and bubblewrap.bwrap() is None:
        print("grade: no working bubblewrap (bwrap) here to re-execute the submissions in: install Debian's "
              "bubblewrap, or pass --unsandboxed to run them with rlimits only (docs/security.md)", file=sys.stderr)
        return 2
    if args.secret is not None and course_folder("solutions") is None:
        print("grade: re-execution runs the rest of the cluster on the reference answers, and this is a handout (no "
              "solutions/ beside the lab): grade from the course's repository, or with --trust-traces", file=sys.stderr)
        return 2
    if not is_uri(args.submissions) and not _entries(LocalStorage(), args):
        print(f"grade: {args.submissions} holds no submission (no zip, no folder: names starting with '.' or '_' "
              f"are not read): nothing to grade", file=sys.stderr)
        return 2
    own = spark is None
    storage = None
    args.grade, failure = f"{os.getpid()}-{uuid.uuid4().hex[:8]}", None  # (it names the grade's sandbox folders)
    try:
        if args.secret is not None and not getattr(args, "unsandboxed", False):
            args.proof = proof.before_grading(args, rubric or rubric_module.load(None), say)
            if args.proof is None:
                return 2
        if rubric is None and not args.rubric:
            rubric = rubric_module.load(None)
        if rubric is not None and not is_uri(args.out):  # before Spark writes its log into DIR
            args.previous = _prepare_out(LocalStorage(), args, rubric, say)
            if not is_uri(args.submissions):  # before the JVM starts: its JIT depends on what changed
                args.hashes = _hashes(LocalStorage(), args, say)
        if own:
            spark = _start(args, say)
        uri = is_uri(args.submissions) or is_uri(args.out)
        storage = HadoopStorage(spark) if uri else LocalStorage()
        if rubric is None:
            rubric = rubric_module.load(args.rubric, storage.read) if args.rubric else rubric_module.load(None)
        if not hasattr(args, "previous"):
            args.previous = _prepare_out(storage, args, rubric, say)
        return _grade(spark, storage, args, rubric, say)
    except incremental.Refused as exc:
        print(f"grade: {exc}", file=sys.stderr)
        return 2
    except rubric_module.RubricError as exc:
        print(f"grade: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Exception) as exc:  # Ctrl-C or a failed job: said in one line (edges.finish)
        failure = edges.keep_traceback(edges.interruption(exc) or exc, args)
    finally:
        edges.finish(spark if own else None, storage, args, failure)
    return edges.INTERRUPTED if isinstance(failure, KeyboardInterrupt) else 1


def _entries(storage, args) -> list[str]:
    """The names in SUBMISSIONS the grade reads (not --out, not a name starting with '.' or '_')."""
    return [name for name, kind, _ in storage.listdir(args.submissions) if not name.startswith((".", "_"))
            and not (kind == "dir" and storage.same(join(args.submissions, name), args.out))]


def _prepare_out(storage, args, rubric, say):
    """Read what a previous grade of the same rubric and grader in DIR can lend this one (lab/grade/outputs/incremental.py;
    refused if DIR holds other files, without --force), and make the folder the new outputs go to."""
    previous = incremental.prepare(storage, args.out, rubric, args, say)
    args.new = outdir.begin(storage, args.out)
    edges.sweep(args.grade, stale=True)
    if previous is not None:
        say(f"a previous grade of the same rubric and grader is in {args.out}: unchanged submissions keep it")
    return previous


def _hashes(storage, args, say) -> dict[str, str]:
    """The content hash of every SUBMISSIONS entry, by which a later grade, or this one, finds what changed."""
    t0 = time.monotonic()
    hashes = incremental.entry_hashes(storage, args.submissions, args.out)
    say(f"hashed {len(hashes)} submissions in {time.monotonic() - t0:.1f} s")
    return hashes


def _start(args, say) -> "SparkSession":
    """The job's own session: its JVM's output goes to DIR/spark.log (a local --out), and in local mode it binds
    to loopback; it compiles with C1 only when the part to grade is small (in a re-grade, the changed part)."""
    reused = set(incremental.reusable(getattr(args, "previous", None), getattr(args, "hashes", None) or {}))
    quick = quick_jit(args, reused)
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started the JVM and owns its output
    log = None if is_uri(args.out) or under_submit else os.path.join(args.new, edges.LOG_FILE)
    args.python_log = edges.python_logs_to(log)
    if under_submit:  # its JVM runs already: the master it was given is known once the session is
        with edges.jvm_output_to(None, edges.is_local(args.master)):
            spark = spark_session(args.master, driver_memory=args.driver_memory, quick=quick)
        master = spark.sparkContext.master
        say(f"started Spark ({master}, given to spark-submit{compiling(quick, reused, True, master)})")
        return spark
    archive = ("; with the JVM class archive" if jvm.ready() else
               "; no JVM class archive: `python -m lab.grade.spark.warm_jvm` makes one, once, and grades start faster")
    say(f"starting Spark ({args.master or 'local[*]'}{compiling(quick, reused, False, args.master)}{archive})"
        + (f"; its log goes to {log}" if log else ""))
    with edges.jvm_output_to(log, edges.is_local(args.master)):
        return spark_session(args.master, driver_memory=args.driver_memory, quick=quick)


def compiling(quick: bool, reused, under_submit: bool, master: str | None) -> str:
    """What the progress line says of C1 (quick_jit): which JVMs compile with it. Under spark-submit the driver's
    JVM runs already (docs/grading.md: --driver-java-options), so only a cluster's executors can."""
    if not quick or (under_submit and edges.is_local(master)):
        return ""
    jvms = ("the cluster's executors compile" if under_submit else
            "the JVM compiles" if edges.is_local(master) else "the driver and the executors compile")
    return f"; {'the part to grade' if reused else 'the class'} is small: {jvms} with C1 only"


def _similarity(spark, storage, args, cat, limits, staging, out, say, reuse) -> tuple[str, dict]:
    """similarity.csv and report.html's section on similar submissions (lab/grade/outputs/similarity.py), over the
    submissions graded now and those whose results were reused."""
    from lab.grade.outputs import similarity

    subs = [(s.student, s.source) for s in cat.submissions if s.ok and s.version >= 2]
    subs += [(e["student"], name) for name, e in reuse.items() if e["status"] == "ok" and e["version"] >= 2]
    return similarity.write(spark, storage, args.submissions, subs, limits, staging, out, say)


def _state_of(cat, results, hashes, counts, per_run, outcome=None) -> dict[str, dict]:
    """What a later grade may reuse of this one: per SUBMISSIONS entry graded now, its hash and results."""
    by_student = {r.student: r for r in results if not r.duplicate}
    events: dict[str, int] = {}
    for (student, _), n in per_run.items():
        events[student] = events.get(student, 0) + n
    return {s.source: incremental.record(by_student[s.student], s, hashes.get(s.source, ""),
                                         counts.get(s.student, {}), events.get(s.student, 0) if s.ok else 0,
                                         outcome)
            for s in cat.submissions if s.student in by_student}


def _reuse(spark, storage, previous, reuse, results, found, out, staging, rubric, say) -> int:
    """Add the reused submissions' results, and their violations to violations.parquet and .csv; the class's
    counts and common messages then come from all of them. Returns their events."""
    from lab.grade.outputs.graded import common_messages, graded_totals
    from lab.grade.inputs.rubric_entries import CHECK_IDS

    results.extend(incremental.restore(entry, name, rubric) for name, entry in reuse.items())
    results.sort(key=lambda r: r.student)
    merged = incremental.merge_violations(spark, storage, previous, {e["student"] for e in reuse.values()},
                                          out, staging)
    _write_single_csv(merged, storage, staging, join(out, "violations.csv"))
    found.common = common_messages(merged)
    for entry in reuse.values():  # counted as the full grade counts them (`_check`), from the kept counts
        student = entry["student"]
        kept = graded_totals(rubric, {(student, run, check): n for run, check, n in entry["counts"]},
                             {(student, run): (exercise, scenario) for run, exercise, scenario in entry["runs"]})
        for check, n in kept.items():
            found.check_totals[check] = found.check_totals.get(check, 0) + n
    say(f"the whole class, with the {len(reuse)} reused submissions: "
        + ", ".join(f"{check} {found.check_totals.get(check, 0)}" for check in CHECK_IDS) + " violations")
    return sum(e["events"] for e in reuse.values())


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


def _say(msg: str) -> None:
    print(f"[grade] {msg}", file=sys.stderr, flush=True)


def _grade(spark, storage, args, rubric, say) -> int:
    from lab.grade.outputs import feedback, playable, report

    started = time.monotonic()
    out = args.new  # DIR/_new, put in place of DIR's previous outputs at the end (lab/grade/outputs/outdir.py)
    staging = join(out, "_staging")
    storage.makedirs(staging)
    limits = Limits(max_file_bytes=int(args.max_file_mb * MiB), max_submission_bytes=int(args.max_submission_mb * MiB))
    previous = getattr(args, "previous", None)
    cat, reuse, hashes = _read_class(storage, args, staging, limits, previous, say)

    outcome = None
    if getattr(args, "secret", None) is not None:
        from lab.grade.spark import reexec

        outcome = reexec.run_class(spark, storage, args, cat, rubric, staging, args.secret, say)
    else:
        say("not re-executing (--trust-traces): the grades trust the submitted runs (docs/grading.md)")
    found, cached, n_events, per_run = _check_class(spark, storage, args, cat, rubric, staging, started, say)
    counts, results = _score(cat, found, outcome, rubric)
    _attach_first_violations(storage, cat, results, found.firsts)
    if outcome:
        reexec.probe_firsts(outcome, results)
        feedback.found_by_reexecution(results, outcome)
    played = playable.write(storage, out, cat, results, outcome, limits, args.submissions)  # events still staged
    if cached is not None:
        cached.unpersist()
    state = _state_of(cat, results, hashes, counts, per_run, outcome)
    if previous is not None:
        n_events += _reuse(spark, storage, previous, reuse, results, found, out, staging, rubric, say)
        reused = {e["student"] for e in reuse.values()}
        playable.restore(storage, out, [r for r in results if r.student in reused],
                         join(args.out, feedback.FEEDBACK))  # the previous grade's, still in place
        state.update(reuse)
    if outcome:  # the pairs re-executed now, and those of the unchanged submissions, as their grade found them
        outcome.timings += [t for e in reuse.values() for t in e.get("timings", [])]
        outcome.timings.sort(key=lambda t: (t["student"], t["exercise"]))
        outcome.submitted += [x for e in reuse.values() for x in e.get("submitted", [])]
        storage.write(join(out, "reexec.csv"), reexec.timings_csv(outcome))

    with settings(spark, partitions_for(spark, args.shuffle_partitions)):
        similar, similar_to = _similarity(spark, storage, args, cat, limits, staging, out, say, reuse)
    report.write_all(storage, out, rubric, results, found.common, found.check_totals, n_events, similar, similar_to,
                     trusted=outcome is None, sandbox=proof.summary(getattr(args, "proof", None)))
    say(playable.summary(results, played))
    if getattr(args, "lms", None):
        from lab.grade.outputs import lms

        lms.write(storage, out, args.lms, rubric, results, getattr(args, "lms_mapping", None), say)
    incremental.save(storage, out, incremental.fingerprint(rubric, args), state)
    if not getattr(args, "keep_staging", False):
        storage.remove(staging)
    outdir.commit(storage, args.out)
    _say_done(args, rubric, results, n_events, time.monotonic() - started, say)
    return 0


def _read_class(storage, args, staging: str, limits: Limits, previous, say):
    """The class's submissions catalogued into `staging`, but those unchanged since the previous grade (their
    results are reused); returns the catalogue, the reused entries and the submissions' hashes."""
    hashes = getattr(args, "hashes", None)  # kept, for the next grade to reuse
    if hashes is None:
        hashes = _hashes(storage, args, say)
    reuse = incremental.reusable(previous, hashes)
    cat = catalog(storage, args.submissions, staging, limits, exclude=[args.out], progress=say, skip=reuse)
    clash = {s.student for s in cat.submissions} & {e["student"] for e in reuse.values()}
    if clash:  # a student with a changed and an unchanged submission: both are read, and the newer counts
        reuse = {name: e for name, e in reuse.items() if e["student"] not in clash}
        storage.remove(staging)
        cat = catalog(storage, args.submissions, staging, limits, exclude=[args.out], progress=say, skip=reuse)
    if previous is not None:
        now = [s for s in cat.submissions if s.status != NOT_A_SUBMISSION]  # (a file that is none: a row each time)
        say(f"{len(reuse)} unchanged submissions keep their previous results; {len(now)} graded now")
    if not cat.submissions and not cat.set_aside and not reuse:
        raise incremental.Refused(f"{args.submissions} holds no submission (no zip, no folder): nothing to grade")
    return cat, reuse, hashes


def _check_class(spark, storage, args, cat, rubric, staging: str, started: float, say):
    """The submitted events parsed and checked, the ungradable submissions' left out; returns what the checks
    found, the cached events (to unpersist once the replays are written), how many events and how many a run."""
    from pyspark.sql import functions as F

    found = Found()
    cached = events = None
    n_events = 0
    per_run: dict[tuple[str, str], int] = {}
    partitions = partitions_for(spark, args.shuffle_partitions, cat.events_bytes)
    with settings(spark, partitions):
        if cat.files:
            cached, events, per_run = _parse(spark, storage, cat, partitions)
        graded = [s for s in cat.submissions if s.ok]
        if events is not None:
            bad = [s.student for s in cat.submissions if not s.ok]
            events = events.filter(~F.col("submission").isin(bad)) if bad else events
            n_events = sum(n for (student, _), n in per_run.items() if student not in bad)
        say(f"parsed {len(cat.files)} files: {n_events} events of the types the checks read; {len(graded)} of "
            f"{len(cat.submissions)} submissions gradable ({time.monotonic() - started:.1f} s)")
        if events is not None and graded:
            found = _check(spark, storage, events, graded, staging, args.new, say, rubric,
                           whole=getattr(args, "previous", None) is None)
    return found, cached, n_events, per_run


def _score(cat, found: "Found", outcome, rubric):
    """Each submission's score by the rubric, from its violations counted by run and check; returns those counts
    by student and the students' results, in the order of their names."""
    from lab.grade.outputs import feedback

    counts: dict[str, dict[tuple[str, str], int]] = {}
    for (student, run, check), n in found.counts.items():
        counts.setdefault(student, {})[(run, check)] = n
    results = []
    for s in sorted(cat.submissions, key=lambda s: s.student):
        runs = [(r.run, r.exercise, r.scenario) for r in s.runs]
        rules = outcome.rules.get(s.student) if outcome else s.rules if s.version >= 2 else None
        score = (rubric_module.score(rubric, runs, counts.get(s.student, {}), rules,
                                     outcome.probes.get(s.student) if outcome else None,
                                     outcome.weights.get(s.student) if outcome else None) if s.ok else None)
        results.append(feedback.StudentResult(student=s.student, source=s.source, status=s.status, score=score,
                                              runs=runs, warnings=[*s.left_out, *s.warnings]))
    for s in cat.set_aside:  # a student's other submissions: a row each, said in the graded one's feedback
        results.append(feedback.StudentResult(student=s.student, source=s.source, status=s.status, score=None,
                                              runs=[], duplicate=True))
    results.sort(key=lambda r: (r.student, r.duplicate, r.source))
    return counts, results


def _say_done(args, rubric, results, n_events: int, elapsed: float, say) -> None:
    totals = [r.score.total for r in results if r.score]
    mean = sum(totals) / len(totals) if totals else 0.0
    graded = [r for r in results if r.score]
    say(f"done in {elapsed:.1f} s: {len(results)} entries of {args.submissions}, {len(graded)} graded, "
        f"{len(results) - len(graded)} not gradable; {n_events} events ({n_events / max(elapsed, 1e-9):,.0f}/s); "
        f"mean total {mean:.2f} of {rubric_module.fmt(rubric.max_total)}")
    for r in results:  # every entry not graded, by its name in SUBMISSIONS: grades.csv and report.html list it too
        if not r.score:
            say(f"  not gradable: {r.source} ({r.student}): {r.status}")
    lms = [f"lms/{args.lms}.csv", f"lms/{args.lms}-not-imported.csv"] if getattr(args, "lms", None) else []
    say(f"outputs in {args.out}: " + ", ".join(
        ["grades.csv", "violations.parquet", "violations.csv", "similarity.csv", "feedback/", "gradescope/",
         *(["reexec.csv"] if getattr(args, "secret", None) is not None else []), *lms, "report.html",
         incremental.STATE]))


class Found:
    """What the checks found, in plain values for the reports."""

    def __init__(self):
        self.counts: dict[tuple[str, str, str], int] = {}  # (student, run, check) -> violations
        self.firsts: dict[tuple[str, str, str], dict] = {}  # (student, run, check) -> its first violation
        self.common: list[dict] = []
        self.check_totals: dict[str, int] = {}


def _parse(spark, storage, cat, partitions: int):
    """Parse and validate every line once and keep the events the checks read in memory (spilling to disk if need
    be), partitioned by run; mark the submissions whose lines are malformed or edited.
    Returns (the cached DataFrame, its valid events, events per (student, run))."""
    from pyspark.sql import functions as F
    from pyspark.storagelevel import StorageLevel

    from lab.grade.spark.schema import EVENTS

    subs = {s.student: s for s in cat.submissions}
    paths = {file_id: rel for file_id, _, _, _, rel in cat.files}
    cached = read_events(spark, cat, storage, partitions).persist(
        StorageLevel.DISK_ONLY if on_disk(cat.events_bytes) else StorageLevel.MEMORY_AND_DISK)
    valid = F.col("problem").isNull() & F.col("edited").isNull()
    # One pass fills the cache and brings back, per run, its number of events and the lines that have something
    # to say (usually none); it groups by the partitioning, so nothing is shuffled for it.
    said = F.struct("file_id", "line", "torn", "problem", "edited")
    per_run = {}
    notes = []
    for row in (cached.groupBy("submission", "run")
                .agg(F.count_if(valid).alias("events"),
                     F.collect_list(F.when(~valid, said)).alias("notes")).collect()):
        per_run[(row["submission"], row["run"])] = row["events"]
        notes.extend((row["submission"], note) for note in row["notes"])
    for student, note in sorted(notes, key=lambda n: (n[1]["file_id"], n[1]["line"])):
        sub = subs[student]
        at = f"{paths[note['file_id']]} line {note['line']}"
        if note["problem"] is not None and note["torn"]:
            sub.warnings.append(f"{at}{note['problem']} (torn last line, skipped)")
        elif sub.ok:
            sub.status = (f"malformed: {at}{note['problem']}" if note["problem"] is not None
                          else f"edited: {at}{note['edited']}")
    return cached, cached.filter(valid).select(*EVENTS.fieldNames()), per_run


def _check(spark, storage, events, graded, staging, out, say, rubric, *, whole: bool = True) -> Found:
    """Run every check in one job, write the violations once, and derive everything else from them. Violations
    that cost no points (a check the rubric skips on the run's scenario, or does not grade on its exercise) are
    written with graded=false and counted nowhere. Not `whole` (a re-grade): violations.csv and the common messages
    are left to `_reuse`, which makes them with the reused submissions' violations."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from lab.grade.spark.trace_checks import CHECKS
    from lab.grade.outputs.graded import common_messages, graded_column, graded_totals

    found = Found()
    t0 = time.monotonic()
    staged = storage.for_spark(join(staging, "violations"))
    jobs = write_violations(spark, events, staged)
    violations = spark.read.parquet(staged)
    say(f"checks done in {time.monotonic() - t0:.1f} s "
        f"({jobs['jobs']} Spark job{'s' if jobs['jobs'] != 1 else ''}, {jobs['stages']} stages, "
        f"{jobs['shuffle_stages']} shuffle stages, {jobs['tasks']} tasks)")

    runs_rows = [(s.student, r.run, r.exercise, r.scenario) for s in graded for r in s.runs]
    runs_df = small_table(spark, storage, join(staging, "runs.jsonl"), runs_rows, T.StructType([
        T.StructField("submission", T.StringType()), T.StructField("run", T.StringType()),
        T.StructField("exercise", T.IntegerType()), T.StructField("scenario", T.StringType())]))
    marked = (violations.join(F.broadcast(runs_df), ["submission", "run"], "left")
              .withColumn("graded", graded_column(rubric)))
    # Per run and check: how many graded violations, and the first (earliest) of them, for scores and feedback.
    first = F.min_by(F.struct(*violations.columns), F.struct("time", "seq", "node", "index"))
    for row in (marked.filter("graded").groupBy("submission", "run", "check")
                .agg(F.count(F.lit(1)).alias("n"), first.alias("first")).collect()):
        key = (row["submission"], row["run"], row["check"])
        found.counts[key] = row["n"]
        found.firsts[key] = row["first"].asDict()
    run_of = {(s.student, r.run): (r.exercise, r.scenario) for s in graded for r in s.runs}
    found.check_totals = graded_totals(rubric, found.counts, run_of)
    for i, (name, _) in enumerate(CHECKS, 1):
        say(f"check {i}/{len(CHECKS)} {name}: {found.check_totals.get(name, 0)} violations")

    ordered = (marked.select(*OUTPUT_COLUMNS)
               .coalesce(1).sortWithinPartitions("submission", "run", "check", "time", "seq"))
    ordered.write.mode("overwrite").parquet(storage.for_spark(join(out, "violations.parquet")))
    written = spark.read.parquet(storage.for_spark(join(out, "violations.parquet")))
    if whole:
        found.common = common_messages(written)
        _write_single_csv(written, storage, staging, join(out, "violations.csv"))
    return found


OUTPUT_COLUMNS = ("submission", "run", "exercise", "scenario", "check", "node", "index", "detail", "seq", "time",
                  "graded")


def write_violations(spark, events, path: str) -> dict:
    """Run every check on the events (partitioned by run) and write their violations to `path` (parquet), as one
    Spark job. Returns what it took, from Spark's status store: jobs, stages, tasks, shuffle stages."""
    from lab.grade.spark.trace_checks import all_checks

    sc = spark.sparkContext
    group = f"hwm-lab-checks-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "the checks", interruptOnCancel=False)
    try:
        all_checks(events).write.mode("overwrite").parquet(path)
    finally:
        sc.setJobGroup(None, None)
    return _jobs_of(sc, group)


def _jobs_of(sc, group: str) -> dict:
    """Spark jobs, stages and tasks that a job group ran, from Spark's status store; a shuffle stage is one that
    wrote shuffle output. Stages skipped because their output was there already (the parse, below the cache) do
    not count."""
    tracker = sc.statusTracker()
    store = sc._jsc.sc().statusStore()
    stages = tasks = shuffles = 0
    job_ids = tracker.getJobIdsForGroup(group)
    for job_id in job_ids:
        info = tracker.getJobInfo(job_id)
        for stage_id in info.stageIds if info else []:
            try:
                data = store.lastStageAttempt(stage_id)
            except Exception:  # a stage that never ran has no attempt
                continue
            if data.status().toString() not in ("COMPLETE", "ACTIVE", "FAILED"):
                continue
            stages += 1
            tasks += data.numTasks()
            shuffles += data.shuffleWriteRecords() > 0 or data.shuffleWriteBytes() > 0
    return {"jobs": len(job_ids), "stages": stages, "tasks": tasks, "shuffle_stages": shuffles}


def _write_single_csv(df, storage, staging, dest) -> None:
    """One CSV file (not Spark's folder of parts), for people and spreadsheets."""
    tmp = join(staging, "csv")
    df.coalesce(1).write.mode("overwrite").option("header", True).option("escape", '"').csv(storage.for_spark(tmp))
    part = [name for name, kind, _ in storage.listdir(tmp) if name.startswith("part-") and name.endswith(".csv")]
    if part:
        storage.rename(join(tmp, part[0]), dest)
    else:  # no rows: Spark may write no part file
        storage.write(dest, (",".join(df.columns) + "\n").encode())
    storage.remove(tmp)


def _attach_first_violations(storage, cat, results, firsts) -> None:
    """For every failed (exercise, check) of a student: its first violation and the lines of its events file
    around it, as written (line N of a file is its event with seq N)."""
    staged = {(student, run, node): join(cat.events_dir, f"f{file_id:07d}.jsonl")
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
