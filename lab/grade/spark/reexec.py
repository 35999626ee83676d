"""Re-execution of a class in the Spark job: the driver plans one task per submission, of one part per exercise;
Python tasks on the executors run each submission in its sandboxes (lab.grade.sandbox.one_submission: the
lab imported once, a forked child per exercise) and hand back, per exercise, its status, rule results, probes, new
traces and the hashes of re-simulated submitted runs; the driver then stages the new traces
beside the submitted ones and sets aside every run it could not reproduce (docs/grading.md, "Re-execution")."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import tempfile
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from lab.grade.inputs.archive import EVENTS_FILE, UNREADABLE, Limits, open_box
from lab.grade.inputs.storage import MiB, Rejected, is_uri, join
from lab.grade.inputs.submissions import FILES_DIR, RunInfo
from lab.grade.sandbox import bubblewrap
from lab.grade.sandbox.one_submission import GRADER_PREFIX, MODULE, bundle, execute, file_sha, task


@dataclass
class Outcome:
    """What re-execution decided, per student, for the scores and the feedback."""

    status: dict[tuple[str, int], str] = field(default_factory=dict)  # (student, exercise) -> status
    rules: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
    probes: dict[str, dict[tuple[int, str], bool]] = field(default_factory=dict)
    probe_details: dict[tuple[str, int, str], str] = field(default_factory=dict)
    weights: dict[str, dict[str, float]] = field(default_factory=dict)  # student -> run -> weight (real runs)
    # For the feedback (lab/grade/outputs/feedback.py, playable.py): each rule's result with its input and values, each
    # run's trace.json, the explorer's counterexample as a trace (its files, compressed).
    rule_results: dict[tuple[str, int], list] = field(default_factory=dict)  # (student, ex) -> [[rule, ok, detail]]
    metas: dict[tuple[str, str], dict] = field(default_factory=dict)  # (student, run) -> its trace.json
    counterexamples: dict[tuple[str, int], dict] = field(default_factory=dict)  # (student, exercise) -> files
    timings: list[dict] = field(default_factory=list)  # one per (student, exercise), for reexec.csv and the bench
    # Each submitted run, as the grader tried it again (reexec.csv): one of REPRODUCTIONS, whether it counts, and why
    submitted: list[dict] = field(default_factory=list)


MATCHED, DIFFERED, NOT_TRIED = "matched", "differed", "not tried"  # what re-simulating a submitted run gave


# ---- the driver: plan -----------------------------------------------------------------------------------------

def _box(storage, submissions_dir: str, sub, limits: Limits):
    return open_box(storage, submissions_dir, sub.source, limits)


def plan(storage, submissions_dir: str, cat, rubric, secret: bytes, limits: Limits) -> tuple[list, dict]:
    """The tasks of a class, one per submission (plain dicts, files included), and, per (student, run), the
    submitted run's trace.json."""
    from lab.student.checks import EXERCISES

    by_number = {ex.number: ex for ex in EXERCISES}
    box_limits = bubblewrap.Limits.from_table(rubric.sandbox)
    tasks, metas = [], {}
    for sub in sorted((s for s in cat.submissions if s.ok), key=lambda s: s.student):
        try:
            files, metas_of = _read_code(storage, submissions_dir, sub, limits)
        except (Rejected, *UNREADABLE) as exc:  # judged on its own: that submission only is not graded
            sub.status = f"malformed: cannot read the submission's files again ({type(exc).__name__}: {str(exc)[:100]})"
            continue
        if not any(MODULE.match(m) for m in files):  # nothing to run: refused, never a silent 0
            sub.status = (f"not re-executable: {'format version 1 holds' if sub.version < 2 else 'it holds'} no "
                          f"exercise files (files/exercises/*.py), which the grader runs; submit again with "
                          f"`hwm-lab submit`, or grade with --trust-traces to grade its runs as sent")
            continue
        metas.update(metas_of)
        parts = []
        for ex in rubric.exercises:
            if ex.number not in by_number:
                continue
            reproduce = []
            if sub.version >= 2:
                for run in sub.runs:
                    meta = metas[(sub.student, run.run)]
                    if run.exercise == ex.number and meta.get("source") == "sim" and _seed_ok(meta) \
                            and all(MODULE.match(m) and m in files for m in run.code):
                        # with exactly the code that made it: the student's files it records, under its name
                        reproduce.append({"run": run.run, "scenario": meta.get("scenario"), "seed": meta["seed"],
                                          "truncation": meta.get("truncation"), "code": list(run.code),
                                          "impl": _impl_name(meta.get("impl"))})
            parts.append(task(sub.student, ex, files, secret, box_limits, reproduce))
        tasks.append(bundle(sub.student, parts))
    return tasks, metas


def _read_code(storage, submissions_dir: str, sub, limits: Limits) -> tuple[dict, dict]:
    """A submission's exercise files (module path -> bytes) and its runs' trace.json, read again from SUBMISSIONS."""
    box = _box(storage, submissions_dir, sub, limits)
    files = {rel[len(FILES_DIR) + 1:]: box.read(rel, limits.max_meta_bytes) for rel in box.files_under(FILES_DIR)}
    metas = {}
    for run in sub.runs:
        try:
            metas[(sub.student, run.run)] = json.loads(box.read(f"{run.dir}/trace.json", limits.max_meta_bytes))
        except (ValueError, Rejected):
            metas[(sub.student, run.run)] = {}
    return files, metas


def _impl_name(name) -> str | None:
    """The implementation a run names (its trace.json's `impl`: `exercises:high_water_mark`), if it reads as one."""
    return name if isinstance(name, str) and IMPL_NAME.match(name) and name != "solutions" else None


IMPL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,99}(:[a-z_]{1,40}(,[a-z_]{1,40}){0,9})?$")


def _seed_ok(meta: dict) -> bool:
    seed = meta.get("seed")
    return isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2 ** 63 \
        and isinstance(meta.get("scenario"), str) and isinstance(meta.get("truncation"), str)


def lab_zip(path: str) -> str:
    """lab/ and solutions/ in one zip for the executors (SparkContext.addPyFile)."""
    root = Path(__file__).resolve().parents[3]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for package in ("lab", "solutions"):
            for file in sorted((root / package).rglob("*")):
                if file.is_file() and "__pycache__" not in file.parts and file.suffix in (".py", ".toml", ".po",
                                                                                          ".txt", ".json"):
                    z.write(file, file.relative_to(root).as_posix())
    return path


def execute_all(spark, tasks: list[dict], limits_table: dict, unsandboxed: bool, zip_path: str,
                grade: str = "", budget: float | None = None) -> list[dict]:
    """Every submission, as Python tasks on the executors (a few per core, so that a slow one holds little
    back); one result per (submission, exercise)."""
    if not tasks:
        return []
    sc = spark.sparkContext
    sc.addPyFile(zip_path)
    slices = min(len(tasks), max(1, sc.defaultParallelism * 4))
    return (sc.parallelize(tasks, slices)
            .flatMap(lambda task: execute(task, limits_table, unsandboxed, grade, budget))
            .collect())


# ---- the driver: apply ----------------------------------------------------------------------------------------

def apply(storage, cat, rubric, results: list[dict], metas: dict) -> Outcome:
    """Stage the grader's runs as runs of their submissions, set aside what does not count, record the rest, and
    what became of every submitted run (Outcome.submitted)."""
    out = Outcome()
    subs = {s.student: s for s in cat.submissions if s.ok}
    book = _Book(storage, cat, next_id=max((f[0] for f in cat.files), default=-1) + 1,
                 staged={(f[1], f[2], f[3]): join(cat.events_dir, f"f{f[0]:07d}.jsonl") for f in cat.files})
    for sub in subs.values():
        out.rules[sub.student] = {ex.number: (0, 0) for ex in rubric.exercises}
        out.probes[sub.student] = {}
        _sort_submitted(out, book, sub, rubric, metas)
    for res in sorted(results, key=lambda r: (r["student"], r["exercise"])):
        sub, number = subs[res["student"]], res["exercise"]
        _record(out, sub, number, res)
        _judge_reproduced(book, sub, number, res["result"] or {})
        _stage_grader_runs(out, book, sub, number, res)
    for sub in subs.values():
        _set_aside_unvouched(book, sub)
    out.submitted = sorted(book.tried.values(), key=lambda r: (r["student"], r["exercise"], r["run"]))
    return out


@dataclass
class _Book:
    """What `apply` keeps while it decides: the staged events files, the runs that count, each submitted run's row
    of Outcome.submitted once decided, and the next file id for the grader's own runs."""

    storage: object
    cat: object
    staged: dict  # (student, run, node) -> its events file, staged
    next_id: int
    # (student, run): reproduced, weighed as a real run, or the grader's own
    kept: set[tuple[str, str]] = field(default_factory=set)
    tried: dict[tuple[str, str], dict] = field(default_factory=dict)  # (student, run) -> its row of Outcome.submitted

    def said(self, sub, run, state: str, counts: bool, why: str = "") -> None:
        self.tried[(sub.student, run.run)] = {"student": sub.student, "exercise": run.exercise, "run": run.run,
                                              "reproduction": state, "counts": counts, "why": why}

    def drop(self, sub, run, note: str | None) -> None:
        _drop(self.storage, self.cat, sub, run, self.staged, note)


def _sort_submitted(out: Outcome, book: _Book, sub, rubric, metas: dict) -> None:
    """Before any result: set aside the submitted runs re-execution cannot vouch for (a name of the grader's, a
    format version 1 run, a real-process run the rubric gives no weight), and weigh the real-process runs it does."""
    if sub.version < 2 and sub.runs:  # said once, plainly: its runs record no code to reproduce them with
        sub.left_out.append(f"your submission is in format version 1, whose runs do not record the files they "
                            f"were made from: the grader graded your code from its own runs, and your "
                            f"{len(sub.runs)} submitted run{'s' if len(sub.runs) != 1 else ''} count for nothing")
    for run in list(sub.runs):
        meta = metas.get((sub.student, run.run), {})
        why = None
        if run.run.startswith(GRADER_PREFIX):
            why = f"run names starting with {GRADER_PREFIX!r} are the grader's own"
        elif sub.version < 2:
            book.said(sub, run, NOT_TRIED, False, "format version 1: the run records no files it was made from")
            book.drop(sub, run, None)
            continue
        elif meta.get("source") != "sim":
            if rubric.real_weight > 0:
                out.weights.setdefault(sub.student, {})[run.run] = rubric.real_weight
                book.kept.add((sub.student, run.run))
                book.said(sub, run, NOT_TRIED, True, f"a real-process run cannot be simulated again: it weighs "
                                                     f"{rubric.real_weight:g} (the rubric's real_weight)")
                continue
            why = "a real-process run cannot be reproduced, and the rubric gives such runs no weight"
        if why:
            book.said(sub, run, NOT_TRIED, False, why)
            book.drop(sub, run, f"run {run.run} (exercise {run.exercise}) counts for nothing: {why}")


def _record(out: Outcome, sub, number: int, res: dict) -> None:
    """One exercise's result: its status and timing, its rules and probes, and the notes it leaves the student (a
    limit hit, the explorer's counterexample)."""
    from lab.grade.sandbox.function_probes import PROBES

    status, result = res["status"], res["result"] or {}
    out.status[(sub.student, number)] = status
    out.timings.append({"student": sub.student, "exercise": number, "status": status,
                        "wall_seconds": round(res["wall_seconds"], 3),
                        "sim_seconds": round(result.get("sim_seconds", 0.0), 3),
                        "runs": len(result.get("runs", [])), "calls": result.get("crossed", 0)})
    rules = result.get("rules", [])
    out.rules[sub.student][number] = (sum(1 for r in rules if r[1]), len(rules))
    out.rule_results[(sub.student, number)] = [[str(r[0]), bool(r[1]), str(r[2])[:1000]]
                                               for r in rules if len(r) == 3]
    for probe, (ok, detail) in result.get("probes", {}).items():
        if probe in PROBES:
            out.probes[sub.student][(number, probe)] = bool(ok)
            if not ok:
                out.probe_details[(sub.student, number, probe)] = str(detail)[:500]
    if res.get("out_of_time"):
        sub.left_out.append(f"exercise {number}: {status}: the submission's time for all its exercises together "
                            f"({res['out_of_time']} s) ran out before this one was done; none of its runs count")
    elif status not in ("ok", "not started", "not submitted"):
        sub.left_out.append(f"exercise {number}: {status}; none of its runs count")
    if result.get("counterexample"):
        sub.left_out.append(f"exercise {number}: exploration found: {str(result['counterexample'])[:4000]}")
        if res.get("counterexample"):
            out.counterexamples[(sub.student, number)] = res["counterexample"]


def _judge_reproduced(book: _Book, sub, number: int, result: dict) -> None:
    """Each submitted run of the exercise re-simulated from its own seed: kept if its events match (graded by the
    grader's own runs instead if it was made with other exercises' files too), set aside if they differ."""
    for rep in result.get("reproduced", []):
        run = next((r for r in sub.runs if r.run == rep["run"]), None)
        if run is None:
            continue
        others = [m for m in run.code if m != _module(number)]
        if _same(book.storage, book.staged, sub.student, run, rep["events"]) and others:
            # Made with the student's code for other exercises too (a handout runs it for the whole cluster):
            # honest, and said nowhere but here, yet its failures could be another exercise's: the grader's
            # own runs (the student's file for this exercise, the reference for the rest) grade it.
            book.said(sub, run, MATCHED, False, f"made with {_listed(run.code)}: the grader's runs of exercise "
                                                f"{number} (your {_module(number)}, the reference for the rest) "
                                                f"grade it")
            book.drop(sub, run, None)
        elif _same(book.storage, book.staged, sub.student, run, rep["events"]):
            book.said(sub, run, MATCHED, True)
            book.kept.add((sub.student, run.run))
        else:
            crashed = f" (the re-simulation crashed: {rep['crashed']})" if rep.get("crashed") else ""
            book.said(sub, run, DIFFERED, False, f"re-simulated from its own seed with {_listed(run.code)}, "
                                                 f"its events differ{crashed}")
            book.drop(sub, run, f"not reproducible: run {run.run} (exercise {number}) counts for nothing: "
                                f"re-simulated from its own seed with {_listed(run.code)}, the files it was made "
                                f"from, its events differ{crashed}")


def _stage_grader_runs(out: Outcome, book: _Book, sub, number: int, res: dict) -> None:
    """The grader's own runs of an exercise that ran to the end, staged as the submission's; an exercise that did
    not: none of its submitted runs count."""
    if res["status"] != "ok":
        for run in [r for r in sub.runs if r.exercise == number]:
            book.said(sub, run, NOT_TRIED, False, f"exercise {number}: {res['status']}")
            book.drop(sub, run, None)
        return
    for run in (res["result"] or {}).get("runs", []):
        files = res["traces"].get(run["run"], {})
        if "trace.json" in files:
            out.metas[(sub.student, run["run"])] = json.loads(zlib.decompress(files["trace.json"]))
        book.next_id = _stage(book.storage, book.cat, sub, number, run, files, book.next_id)
        book.kept.add((sub.student, run["run"]))


def _set_aside_unvouched(book: _Book, sub) -> None:
    """What nothing above vouched for counts for nothing."""
    for run in [r for r in sub.runs if (sub.student, r.run) not in book.kept]:
        if (sub.student, run.run) not in book.tried:
            book.said(sub, run, NOT_TRIED, False, "its trace.json gives no scenario, truncation and seed, or the "
                                                  f"rubric does not grade exercise {run.exercise}")
        book.drop(sub, run, f"not reproducible: run {run.run} (exercise {run.exercise}) counts for nothing: the "
                            f"grader could not simulate it again (its trace.json gives no scenario, truncation and "
                            f"seed, or the rubric does not grade exercise {run.exercise})")


def _module(number: int) -> str:
    from lab.student.checks import exercise

    return exercise(number).module


def _listed(code) -> str:
    """The files a run was made from, in words: `exercises/leader.py` or `exercises/a.py, exercises/b.py`."""
    return ", ".join(code) if code else "the submitted files"


def _same(storage, staged: dict, student: str, run, events: dict[str, str]) -> bool:
    submitted = {}
    for file_id, node, _ in run.files:
        path = staged.get((student, run.run, node))
        submitted[f"events-{node}.jsonl"] = file_sha(storage.read(path)) if path else None
    return bool(events) and submitted == events


def _drop(storage, cat, sub, run, staged: dict, note: str | None) -> None:
    sub.runs.remove(run)
    for file_id, node, _ in run.files:
        path = staged.pop((sub.student, run.run, node), None)
        if path:
            storage.remove(path)
    cat.files[:] = [f for f in cat.files if (f[1], f[2]) != (sub.student, run.run)]
    if note:
        sub.left_out.append(note)


def _stage(storage, cat, sub, number: int, run: dict, files: dict, next_id: int) -> int:
    meta = json.loads(zlib.decompress(files["trace.json"])) if "trace.json" in files else {}
    nodes = [n for n in meta.get("nodes", []) if isinstance(n, str)]
    info = RunInfo(run=run["run"], exercise=number, scenario=run["scenario"], dir="(the grader's run)",
                          nodes=nodes, liveness_bound=meta.get("liveness_bound"))
    for name, data in sorted(files.items()):
        found = EVENTS_FILE.match(name)
        if not found:
            continue
        body = zlib.decompress(data)
        dst = join(cat.events_dir, f"f{next_id:07d}.jsonl")
        storage.write(dst, body)
        cat.events_bytes += len(body)
        info.files.append((next_id, found.group(1), f"{run['run']}/{name}"))
        cat.files.append((next_id, sub.student, run["run"], found.group(1), f"{run['run']}/{name}"))
        next_id += 1
    sub.runs.append(info)
    return next_id


REEXEC_COLUMNS = ("student", "exercise", "run", "status", "wall_seconds", "sim_seconds", "runs", "calls",
                  "reproduction", "counts", "why")


def timings_csv(outcome: Outcome) -> bytes:
    """reexec.csv: per (student, exercise) a row with an empty `run` (its status, times, the grader's runs and the
    calls across), and after it a row per submitted run of that exercise: `reproduction` matched, differed or not
    tried, whether it `counts`, and why."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(REEXEC_COLUMNS)
    runs: dict[tuple[str, int], list[dict]] = {}
    for r in outcome.submitted:
        runs.setdefault((r["student"], r["exercise"]), []).append(r)
    pairs = {(t["student"], t["exercise"]): t for t in outcome.timings}
    for key in sorted({*pairs, *runs}):
        t = pairs.get(key)
        if t is not None:
            w.writerow([t["student"], t["exercise"], "", t["status"], t["wall_seconds"], t["sim_seconds"], t["runs"],
                        t["calls"], "", "", ""])
        for r in runs.get(key, []):
            w.writerow([r["student"], r["exercise"], r["run"], "", "", "", "", "", r["reproduction"],
                        "yes" if r["counts"] else "no", r["why"]])
    return buf.getvalue().encode("utf-8", "backslashreplace")


def probe_firsts(outcome: Outcome, results) -> None:
    """A failed probe's finding as the 'first violation' the feedback shows for it."""
    for r in results:
        for (student, number, probe), detail in outcome.probe_details.items():
            if student == r.student:
                r.first[(number, probe)] = {"run": "the grader's probe", "node": None, "detail": detail,
                                            "time": None}


def elapsed(t0: float) -> float:
    return time.monotonic() - t0


def run_class(spark, storage, args, cat, rubric, staging: str, secret: bytes, say) -> Outcome:
    """Re-execute a whole class (the job calls this between reading the submissions and parsing the events)."""
    t0 = time.monotonic()
    limits = Limits(max_file_bytes=int(args.max_file_mb * MiB),
                           max_submission_bytes=int(args.max_submission_mb * MiB))
    tasks, metas = plan(storage, args.submissions, cat, rubric, secret, limits)
    # The zip goes to a local folder of the driver's (Spark ships it from there); under --out when that is local.
    local = None if is_uri(staging) else staging
    folder = tempfile.mkdtemp(prefix="hwm-lab-zip-", dir=local)
    try:
        proof = getattr(args, "proof", None)
        results = execute_all(spark, tasks, rubric.sandbox, getattr(args, "unsandboxed", False),
                              lab_zip(os.path.join(folder, "hwm_lab.zip")), getattr(args, "grade", ""),
                              proof.budget_seconds if proof is not None else None)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    outcome = apply(storage, cat, rubric, results, metas)
    outcome.metas.update((key, meta) for key, meta in metas.items() if meta)  # the submitted runs' own
    bad = sum(1 for s in outcome.status.values() if s not in ("ok", "not started", "not submitted"))
    say(f"re-executed {len(results)} (submission, exercise) pairs in the sandbox in {elapsed(t0):.1f} s "
        f"({sum(t['sim_seconds'] for t in outcome.timings):.1f} s of it simulating; {bad} hit a limit or crashed)")
    return outcome
