"""Benchmark: where one submission's re-execution goes (issue 32), in CPU seconds, beside the same work in one
process (the floor: the reference's functions called in process, as before the two-process split).

One submission made of the reference answers, graded as bench/grading.py's classes are (the default rubric):
  whole      lab.grade.sandbox.one_submission.execute, unsandboxed (bubblewrap's inner processes are not counted by the kernel's
             children's usage; the processes, sockets and calls are the same): the harness's start and imports,
             its exercises' children, the student's processes, the executor's watch
  phases     the harness's work per phase, its calls of the student's functions across the socket to the student's
             process (lab.grade.sandbox.student_box, in its sandbox), and that process's own CPU time
  floor      the same phases with the reference's functions in process (guarded)

    .venv/bin/python bench/grading_pair.py [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PHASES = ("rules", "probes", "sims", "explore")


def tasks() -> list[dict]:
    from lab.grade.sandbox import one_submission
    from lab.grade.inputs import rubric
    from lab.grade.sandbox import bubblewrap as sandbox

    files = {f"exercises/{p.name}": p.read_bytes() for p in sorted((ROOT / "solutions").glob("*.py"))
             if p.name != "__init__.py"}
    return [one_submission.task("s001", ex, files, b"the bench's course secret", sandbox.Limits(), [])
            for ex in rubric.load(None).exercises]


def whole(parts: list[dict]) -> dict:
    """One submission through the executor's path, unsandboxed: CPU of its processes and of the executor."""
    from lab.grade.sandbox import one_submission

    one_submission._TOOL["bwrap"] = None
    task = one_submission.bundle("s001", [dict(p, files=dict(p["files"])) for p in parts])
    children, me = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    results = one_submission.execute(task, {}, True)
    wall = time.perf_counter() - t0
    after, mine = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    return {"wall": wall, "statuses": sorted({r["status"] for r in results}),
            "processes_cpu": after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime,
            "executor_cpu": mine.ru_utime + mine.ru_stime - me.ru_utime - me.ru_stime}


def run_phases(task: dict, impl, out: Path, count=lambda: 0) -> dict:
    """The harness's phases of one exercise with `impl`: CPU seconds each, and the calls across each made."""
    from lab.grade.sandbox import harness_box as rerun
    from lab.grade.sandbox.function_probes import PROBES
    from lab.student.checks import check_rules, exercise

    figures = {}

    def timed(phase, work):
        calls, t0 = count(), time.process_time()
        work()
        figures[phase] = time.process_time() - t0
        figures[phase + " calls"] = count() - calls

    timed("rules", lambda: check_rules(exercise(task["exercise"]), impl))
    timed("probes", lambda: [probe(impl) for number, probe in PROBES.values() if number == task["exercise"]])
    timed("sims", lambda: [rerun.simulate(run, task, out / run["run"], rerun.Faults()) for run in task["runs"]])
    timed("explore", lambda: rerun.explore_counterexample(task["exercise"], task["impl"], task["explore"],
                                                          task["runs"][0]["seed"], out / "explore"))
    return figures


def _sandbox_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of the processes under pid (the student's sandbox): of its leaves (the exercise's process), and
    of the others (bubblewrap, and the first process that forks the exercises' processes)."""
    leaves = others = 0.0
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            below = []
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as f:
                    below.extend(int(x) for x in f.read().split())
            with open(f"/proc/{current}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        todo.extend(below)
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        if below:
            others += cpu
        else:
            leaves += cpu
    return leaves, others


def across(parts: list[dict], work: Path) -> dict:
    """The phases with the student's functions in the student's process (its sandbox), the harness here."""
    import lab.core.impl as impl_module
    from lab.grade.sandbox import pair
    from lab.grade.sandbox import student_calls as proxy
    from lab.grade.sandbox import harness_box as rerun
    from lab.grade.sandbox import bubblewrap as sandbox

    shutil.copytree(ROOT / "solutions", work / "code" / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    (work / "tmp").mkdir()
    students = pair.Students(str(work), sandbox.student_lab(str(ROOT), str(work / "hwm")), sandbox.Limits(),
                             sandbox.bwrap())
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    threading.Thread(target=lambda: [None for _ in iter(lambda: students.step(theirs), False)], daemon=True).start()
    totals: dict[str, float] = {}
    try:
        for task in parts:
            t0 = time.process_time()
            impl, student = proxy.student_impl(task, proxy.Control(ours), rerun.Faults().watch)
            figures = {"start": time.process_time() - t0}
            impl_module._cache[task["impl"]] = impl
            figures.update(run_phases(task, impl, work / "out" / str(task["exercise"]), lambda: student.crossed))
            figures["student's exercise process"] = _sandbox_cpu(students.process.pid)[0]
            student.close()
            for key, value in figures.items():
                totals[key] = totals.get(key, 0) + value
        totals["student's first process"] = sum(_sandbox_cpu(students.process.pid))  # (no exercise's now)
    finally:
        ours.close()
        students.close()
    return totals


def floor(parts: list[dict], work: Path) -> dict:
    import lab.core.impl as impl_module
    from lab.core.guard import guarded
    from lab.core.impl import load

    totals: dict[str, float] = {}
    for task in parts:
        impl = replace(guarded(load("solutions"), task["call_seconds"]), name=task["impl"])
        impl_module._cache[task["impl"]] = impl
        for key, value in run_phases(task, impl, work / "floor" / str(task["exercise"])).items():
            totals[key] = totals.get(key, 0) + value
    return totals


def shown(figures: dict) -> str:
    return ", ".join(f"{k} {v:.3f} s" if isinstance(v, float) else f"{k} {v:,}" for k, v in figures.items()
                     if not k.endswith(" calls") or v)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args(argv)
    t0 = time.process_time()
    import gc

    import lab.explore.counterexample  # noqa: F401 - what the harness imports before its children fork
    import lab.grade.sandbox.function_probes  # noqa: F401
    import lab.harness.scenario  # noqa: F401
    import lab.student.checks  # noqa: F401

    print(f"the harness's imports: {time.process_time() - t0:.3f} s CPU (here, once)")
    gc.freeze()  # as the harness does before its children fork
    parts = tasks()
    for n in range(args.repeat):
        work = Path(tempfile.mkdtemp(prefix="hwm-grading-pair-"))
        try:
            w = whole(parts)
            print(f"[{n + 1}/{args.repeat}] one submission ({len(parts)} exercises, {w['statuses']}): "
                  f"{w['processes_cpu']:.2f} s CPU in its processes + {w['executor_cpu']:.2f} s in the executor, "
                  f"{w['wall']:.2f} s wall; load {os.getloadavg()[0]:.1f}", flush=True)
            print(f"      two processes: {shown(across(parts, work))}", flush=True)
            print(f"      floor, in process: {shown(floor(parts, work))}; load {os.getloadavg()[0]:.1f}", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
