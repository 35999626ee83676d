"""Re-execution of a class in the Spark job: the driver plans one task per submission, of one part per exercise;
Python tasks on the executors run each submission in the sandbox (lab.grade.rerun inside lab.grade.sandbox: the
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
import stat
import tempfile
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from lab.grade.archive import EVENTS_FILE, UNREADABLE, Limits, open_box
from lab.grade.storage import MiB, Rejected, is_uri, join
from lab.grade.submissions import FILES_DIR, RunInfo
from lab.grade import pair, sandbox
from lab.grade.rerun import EXPLORED
from lab.explore.counterexample import TRACE
from lab.grade.seeds import seeds

GRADER_PREFIX = "grader-"  # the names of the grader's own runs
RESULT_BYTES = 4 * 1024 * 1024  # result.json read back at most


@dataclass
class Outcome:
    """What re-execution decided, per student, for the scores and the feedback."""

    status: dict[tuple[str, int], str] = field(default_factory=dict)  # (student, exercise) -> status
    rules: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
    probes: dict[str, dict[tuple[int, str], bool]] = field(default_factory=dict)
    probe_details: dict[tuple[str, int, str], str] = field(default_factory=dict)
    weights: dict[str, dict[str, float]] = field(default_factory=dict)  # student -> run -> weight (real runs)
    # For the feedback (lab/grade/report.py, playable.py): each rule's result with its input and values, each
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
    box_limits = sandbox.Limits.from_table(rubric.sandbox)
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


def task(student: str, ex, files: dict[str, bytes], secret: bytes, limits: sandbox.Limits,
         reproduce: list[dict] = ()) -> dict:
    """One (submission, exercise) to re-execute: the rubric's exercise `ex`, the student's files (module -> bytes),
    the grader's runs with the student's seeds, and the submitted runs to re-simulate."""
    from lab.student.checks import exercise

    spec = exercise(ex.number)
    drawn = seeds(secret, student, ex.number, ex.seeds)
    module = spec.module
    return {
        "student": student, "exercise": ex.number, "module": module, "functions": list(spec.functions),
        "impl": f"exercises:{','.join(spec.functions)}",
        "runs": [{"run": f"{GRADER_PREFIX}ex{ex.number}-{name}-{strategy}-seed{seed}", "scenario": name,
                  "truncation": strategy, "seed": seed} for name, strategy in spec.scenarios for seed in drawn],
        "reproduce": list(reproduce),
        "meta": {"exercise": ex.number, "files_sha256": {module: _sha(files[module])} if module in files else {}},
        "call_seconds": limits.call_seconds, "processes": limits.processes, "explore": ex.explore,
        "submitted": module in files,
        "files": {m: files[m] for m in {module, *(c for run in reproduce for c in run.get("code", ()))} if m in files}}


def bundle(student: str, parts: list[dict]) -> dict:
    """One submission's exercises as one task: its files once, then one part per exercise."""
    files: dict[str, bytes] = {}
    for part in parts:
        files.update(part.pop("files"))
    return {"student": student, "files": files, "exercises": parts}


def _impl_name(name) -> str | None:
    """The implementation a run names (its trace.json's `impl`: `exercises:high_water_mark`), if it reads as one."""
    return name if isinstance(name, str) and IMPL_NAME.match(name) and name != "solutions" else None


IMPL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,99}(:[a-z_]{1,40}(,[a-z_]{1,40}){0,9})?$")


def _seed_ok(meta: dict) -> bool:
    seed = meta.get("seed")
    return isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2 ** 63 \
        and isinstance(meta.get("scenario"), str) and isinstance(meta.get("truncation"), str)


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def lab_zip(path: str) -> str:
    """lab/ and solutions/ in one zip for the executors (SparkContext.addPyFile)."""
    root = Path(__file__).resolve().parents[2]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for package in ("lab", "solutions"):
            for file in sorted((root / package).rglob("*")):
                if file.is_file() and "__pycache__" not in file.parts and file.suffix in (".py", ".toml", ".po",
                                                                                          ".txt", ".json"):
                    z.write(file, file.relative_to(root).as_posix())
    return path


# ---- the executors: run ---------------------------------------------------------------------------------------

_TOOL: dict[str, str | None] = {}


def _tool(unsandboxed: bool) -> str | None:
    if "bwrap" not in _TOOL:
        _TOOL["bwrap"] = sandbox.bwrap()
    if _TOOL["bwrap"] is None and not unsandboxed:
        import socket

        raise sandbox.NoSandbox(f"no working bubblewrap (bwrap) on {socket.gethostname()}: install Debian's "
                                f"bubblewrap there, or grade with --unsandboxed (docs/security.md)")
    return _TOOL["bwrap"]


def _read_data(path: str, limit: int) -> bytes | None:
    """A file the child wrote, read as data: a regular file, no link followed, at most `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        data = f.read(limit + 1)
    return data if len(data) <= limit else None


def _code_root(module, workdir: str) -> str:
    """Where the child imports `module`'s package from. Shipped to a worker as the job's zip (a path Spark may give
    relative), it is unpacked into the child's folder: the lab reads its scenario scripts as files."""
    root = Path(os.path.abspath(module.__file__)).parents[1]
    if root.is_dir():
        return str(root)
    unpacked = Path(workdir, "lab-code")
    with zipfile.ZipFile(root) as z:
        z.extractall(unpacked)
    return str(unpacked)


MODULE = re.compile(r"^exercises/[A-Za-z_][A-Za-z0-9_]{0,63}\.py$")  # a student's file the grader runs


def execute(task: dict, limits_table: dict, unsandboxed: bool, grade: str = "",
            budget: float | None = None) -> list[dict]:
    """One submission on an executor, in its two sandboxes (lab.grade.pair): one result per exercise. Everything
    the harness wrote is read back as data and removed. `grade` names the grade in the folder's name, so that the
    driver can find what an interrupted grade left. `budget`: the submission's seconds for all its exercises
    together (lab.grade.proof); what is not done by then is its timeout."""
    import lab

    limits = sandbox.Limits.from_table(limits_table)
    tool = _tool(unsandboxed)
    workdir = tempfile.mkdtemp(prefix=f"{sandbox.FOLDER_PREFIX}{grade}-" if grade else sandbox.FOLDER_PREFIX)
    try:
        code = Path(workdir, "code", "exercises")
        code.mkdir(parents=True)
        (code / "__init__.py").write_text("")
        for module, data in task["files"].items():
            if MODULE.match(module):
                Path(workdir, "code", module).write_bytes(data)
        Path(workdir, "tmp").mkdir()
        Path(workdir, "box").mkdir()
        Path(workdir, "box", "task.json").write_text(json.dumps({
            "exercises": task["exercises"],
            "limits": {"processes": limits.processes, "cpu_seconds": limits.cpu_seconds,
                       "wall_seconds": limits.wall_seconds}}))
        lab_root = _code_root(lab, workdir)
        lab_view = sandbox.student_lab(lab_root, os.path.join(workdir, "hwm"))
        wall = limits.wall_seconds * max(1, len(task["exercises"])) + 30
        outcome = pair.run(workdir, lab_root, lab_view, limits, tool, min(wall, budget or wall), grade)
        results = [_exercise_result(task["student"], part,
                                    os.path.join(workdir, "box", "out", f"ex{part['exercise']}"), outcome, limits)
                   for part in task["exercises"]]
        # Each exercise's own time, plus its share of what the submission's child spent besides (start, imports).
        shared = max(0.0, outcome.wall_seconds - sum(r["wall_seconds"] for r in results)) / max(1, len(results))
        for r in results:
            r["wall_seconds"] += shared
        return results
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _exercise_result(student: str, part: dict, out: str, outcome: sandbox.Outcome, limits: sandbox.Limits) -> dict:
    raw = _read_data(os.path.join(out, "result.json"), RESULT_BYTES)
    result = json.loads(raw) if raw else None
    said = _read_data(os.path.join(out, "status.json"), RESULT_BYTES)
    if result:
        status = result["status"]
    elif said:
        status = str(json.loads(said).get("status", "crashed"))[:300]
    else:  # the whole child was stopped (processes, its wall clock) or died before this exercise
        status = outcome.status if outcome.status != "ok" else "crashed: the re-execution wrote no result"
    budget = round(outcome.wall_seconds) if outcome.out_of_time and not result else None
    traces = {}
    for run in (result or {}).get("runs", []) if status == "ok" else []:
        traces[run["run"]] = _trace(os.path.join(out, "runs", run["run"]), limits)
    explored = (_trace(os.path.join(out, EXPLORED, TRACE), limits) if status == "ok"
                and (result or {}).get("counterexample") else {})
    return {"student": student, "exercise": part["exercise"], "status": status, "result": result,
            "traces": traces, "counterexample": explored, "wall_seconds": (result or {}).get("wall_seconds", 0.0),
            "stderr": outcome.stderr[-600:], "out_of_time": budget, "student_peak_bytes": outcome.student_peak}


def _trace(folder: str, limits: sandbox.Limits) -> dict:
    """A trace directory the child wrote: trace.json and events files, compressed, read as data."""
    files = {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if name == "trace.json" or EVENTS_FILE.match(name):
            data = _read_data(os.path.join(folder, name), limits.file_mb * 1024 * 1024)
            if data is not None:
                files[name] = zlib.compress(data, 3)
    return files


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
    from lab.grade.probes import PROBES

    out = Outcome()
    subs = {s.student: s for s in cat.submissions if s.ok}
    next_id = max((f[0] for f in cat.files), default=-1) + 1
    staged = {(f[1], f[2], f[3]): join(cat.events_dir, f"f{f[0]:07d}.jsonl") for f in cat.files}
    kept: set[tuple[str, str]] = set()  # (student, run): reproduced, weighed as a real run, or the grader's own
    tried: dict[tuple[str, str], dict] = {}  # (student, run) -> its row of Outcome.submitted, once decided

    def said(sub, run, state: str, counts: bool, why: str = "") -> None:
        tried[(sub.student, run.run)] = {"student": sub.student, "exercise": run.exercise, "run": run.run,
                                         "reproduction": state, "counts": counts, "why": why}

    for sub in subs.values():
        out.rules[sub.student] = {ex.number: (0, 0) for ex in rubric.exercises}
        out.probes[sub.student] = {}
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
                said(sub, run, NOT_TRIED, False, "format version 1: the run records no files it was made from")
                _drop(storage, cat, sub, run, staged, None)
                continue
            elif meta.get("source") != "sim":
                if rubric.real_weight > 0:
                    out.weights.setdefault(sub.student, {})[run.run] = rubric.real_weight
                    kept.add((sub.student, run.run))
                    said(sub, run, NOT_TRIED, True, f"a real-process run cannot be simulated again: it weighs "
                                                    f"{rubric.real_weight:g} (the rubric's real_weight)")
                    continue
                why = "a real-process run cannot be reproduced, and the rubric gives such runs no weight"
            if why:
                said(sub, run, NOT_TRIED, False, why)
                _drop(storage, cat, sub, run, staged, f"run {run.run} (exercise {run.exercise}) counts for "
                                                      f"nothing: {why}")
    for res in sorted(results, key=lambda r: (r["student"], r["exercise"])):
        sub, number = subs[res["student"]], res["exercise"]
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
        for rep in result.get("reproduced", []):
            run = next((r for r in sub.runs if r.run == rep["run"]), None)
            if run is None:
                continue
            others = [m for m in run.code if m != _module(number)]
            if _same(storage, staged, sub.student, run, rep["events"]) and others:
                # Made with the student's code for other exercises too (a handout runs it for the whole cluster):
                # honest, and said nowhere but here, yet its failures could be another exercise's: the grader's
                # own runs (the student's file for this exercise, the reference for the rest) grade it.
                said(sub, run, MATCHED, False, f"made with {_listed(run.code)}: the grader's runs of exercise "
                                               f"{number} (your {_module(number)}, the reference for the rest) "
                                               f"grade it")
                _drop(storage, cat, sub, run, staged, None)
            elif _same(storage, staged, sub.student, run, rep["events"]):
                said(sub, run, MATCHED, True)
                kept.add((sub.student, run.run))
            else:
                crashed = f" (the re-simulation crashed: {rep['crashed']})" if rep.get("crashed") else ""
                said(sub, run, DIFFERED, False, f"re-simulated from its own seed with {_listed(run.code)}, "
                                                f"its events differ{crashed}")
                _drop(storage, cat, sub, run, staged, f"not reproducible: run {run.run} (exercise {number}) "
                      f"counts for nothing: re-simulated from its own seed with {_listed(run.code)}, the files it "
                      f"was made from, its events differ{crashed}")
        if status != "ok":
            for run in [r for r in sub.runs if r.exercise == number]:
                said(sub, run, NOT_TRIED, False, f"exercise {number}: {status}")
                _drop(storage, cat, sub, run, staged, None)
            continue
        for run in result.get("runs", []):
            files = res["traces"].get(run["run"], {})
            if "trace.json" in files:
                out.metas[(sub.student, run["run"])] = json.loads(zlib.decompress(files["trace.json"]))
            next_id = _stage(storage, cat, sub, number, run, files, next_id)
            kept.add((sub.student, run["run"]))
    for sub in subs.values():  # what nothing above vouched for counts for nothing
        for run in [r for r in sub.runs if (sub.student, r.run) not in kept]:
            if (sub.student, run.run) not in tried:
                said(sub, run, NOT_TRIED, False, "its trace.json gives no scenario, truncation and seed, or the "
                                                 f"rubric does not grade exercise {run.exercise}")
            _drop(storage, cat, sub, run, staged, f"not reproducible: run {run.run} (exercise {run.exercise}) counts "
                  f"for nothing: the grader could not simulate it again (its trace.json gives no scenario, "
                  f"truncation and seed, or the rubric does not grade exercise {run.exercise})")
    out.submitted = sorted(tried.values(), key=lambda r: (r["student"], r["exercise"], r["run"]))
    return out


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
        submitted[f"events-{node}.jsonl"] = _sha(storage.read(path)) if path else None
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
