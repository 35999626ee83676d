"""One submission's re-execution, as the Spark job hands it to an executor: the task (its files once, one part per
exercise, each with the grader's runs under the student's seeds and the submitted runs to re-simulate), and its run
in the two sandboxes (lab.grade.sandbox.pair: the harness, harness_box.py, beside the student's process), whose
results are read back as data. The job plans the tasks and applies their results (lab.grade.spark.reexec)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from pathlib import Path

from lab.explore.counterexample import TRACE
from lab.grade.inputs.archive import EVENTS_FILE
from lab.grade.inputs.seeds import seeds
from lab.grade.sandbox import bubblewrap, pair
from lab.grade.sandbox.harness_box import EXPLORED

GRADER_PREFIX = "grader-"  # the names of the grader's own runs
RESULT_BYTES = 4 * 1024 * 1024  # result.json read back at most
MODULE = re.compile(r"^exercises/[A-Za-z_][A-Za-z0-9_]{0,63}\.py$")  # a student's file the grader runs


# ---- the driver: a task ---------------------------------------------------------------------------------------

def task(student: str, ex, files: dict[str, bytes], secret: bytes, limits: bubblewrap.Limits,
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
        "meta": {"exercise": ex.number, "files_sha256": {module: file_sha(files[module])} if module in files else {}},
        "call_seconds": limits.call_seconds, "processes": limits.processes, "explore": ex.explore,
        "submitted": module in files,
        "files": {m: files[m] for m in {module, *(c for run in reproduce for c in run.get("code", ()))} if m in files}}


def bundle(student: str, parts: list[dict]) -> dict:
    """One submission's exercises as one task: its files once, then one part per exercise."""
    files: dict[str, bytes] = {}
    for part in parts:
        files.update(part.pop("files"))
    return {"student": student, "files": files, "exercises": parts}


def file_sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


# ---- the executor: run -------------------------------------------------------------------------------------

_TOOL: dict[str, str | None] = {}


def _tool(unsandboxed: bool) -> str | None:
    if "bwrap" not in _TOOL:
        _TOOL["bwrap"] = bubblewrap.bwrap()
    if _TOOL["bwrap"] is None and not unsandboxed:
        import socket

        raise bubblewrap.NoSandbox(f"no working bubblewrap (bwrap) on {socket.gethostname()}: install Debian's "
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


def execute(task: dict, limits_table: dict, unsandboxed: bool, grade: str = "",
            budget: float | None = None) -> list[dict]:
    """One submission on an executor, in its two sandboxes (lab.grade.sandbox.pair): one result per exercise. Everything
    the harness wrote is read back as data and removed. `grade` names the grade in the folder's name, so that the
    driver can find what an interrupted grade left. `budget`: the submission's seconds for all its exercises
    together (lab.grade.sandbox.proof); what is not done by then is its timeout."""
    import lab

    limits = bubblewrap.Limits.from_table(limits_table)
    tool = _tool(unsandboxed)
    workdir = tempfile.mkdtemp(prefix=f"{bubblewrap.FOLDER_PREFIX}{grade}-" if grade else bubblewrap.FOLDER_PREFIX)
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
        lab_view = bubblewrap.student_lab(lab_root, os.path.join(workdir, "hwm"))
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


def _exercise_result(student: str, part: dict, out: str, outcome: bubblewrap.Outcome, limits: bubblewrap.Limits) -> dict:
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


def _trace(folder: str, limits: bubblewrap.Limits) -> dict:
    """A trace directory the child wrote: trace.json and events files, compressed, read as data."""
    files = {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if name == "trace.json" or EVENTS_FILE.match(name):
            data = _read_data(os.path.join(folder, name), limits.file_mb * 1024 * 1024)
            if data is not None:
                files[name] = zlib.compress(data, 3)
    return files
