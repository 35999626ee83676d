"""The grader's harness for one submission, in its own sandbox: it reads WORKDIR/task.json, imports the lab once,
then forks one child per exercise that runs the exercise's rules and the grader's probes on the student's functions,
the rubric's scenarios with the student's seeds and the re-simulation of each submitted run, and writes
WORKDIR/out/ex<N>/result.json and its trace directories (WORKDIR/out/ex<N>/runs/<run>/); an exercise whose child
hits a limit gets WORKDIR/out/ex<N>/status.json instead. The student's functions run in a process of their own,
which the executor starts on request over the socket FD (lab/grade/proxy.py, lab/grade/pair.py): nothing of the
student's is imported or run here.

    python -B -m lab.grade.rerun WORKDIR FD
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import resource
import signal
import socket
import sys
import time
from dataclasses import replace
from pathlib import Path

from lab.grade import privileges
from lab.grade.sandbox import EXIT_MEMORY, PROCESSES, TIMEOUT, classify


class Faults:
    """Every StudentFault that went through a student's function."""

    def __init__(self):
        self.seen: list = []

    def watch(self, fn):
        from lab.core.guard import StudentFault

        def call(*args):
            try:
                return fn(*args)
            except StudentFault as exc:
                self.seen.append(exc.fault)
                raise
        def many(calls):
            answers = fn.many(calls)
            self.seen.extend(a.fault for a in answers if isinstance(a, StudentFault))
            return answers
        call.__name__ = getattr(fn, "__name__", "call")
        call.guard_limit = getattr(fn, "guard_limit", None)
        call.__wrapped__ = getattr(fn, "__wrapped__", fn)
        if hasattr(fn, "many"):
            call.many = many
        return call


def status_of(faults: list, crash: str | None) -> str:
    """The exercise's status from the faults seen: a time limit, memory or processes anywhere, else a crashed run."""
    from lab.core.guard import ENDED, TIMEOUT as CALL_TIMEOUT
    from lab.grade.proxy import PROCESSES as TOO_MANY

    if any(f.kind == CALL_TIMEOUT for f in faults):
        return TIMEOUT
    if any("MemoryError" in f.detail or _scratch_full(f.detail) for f in faults):
        return "memory"
    if any(f.kind == ENDED and f.detail == TOO_MANY for f in faults):
        return PROCESSES
    return f"crashed: {crash}" if crash else "ok"


def _scratch_full(detail: str) -> bool:
    """Out of memory or of room in the sandbox's scratch (/tmp and /dev/shm are RAM within the memory limit)."""
    return detail.startswith(("OSError: [Errno 12]", "OSError: [Errno 28]"))


EXPLORED = "explore"  # where an exercise's counterexample and its trace go (WORKDIR/out/ex<N>/explore/trace)
EXPLORE_SECONDS = 60.0  # a ceiling only: the search is bounded by its count of walks, the same on any machine
EXPLORE_AGAIN = 10  # an exercise that lost points on a rule or a probe, and whose first search found nothing, is
# searched again with this many times the walks (the same first walks, then more): its student gets a failing run to
# watch (lab/grade/playable.py) far more often, and only the students who lost points pay for it


def explore_counterexample(exercise: int, impl_name: str, budget: int, seed: int,
                           out: Path | None = None) -> str | None:
    """A short `hwm-lab explore` search of the student's code (lab.explore): `budget` random walks after a small
    breadth-first search, bounded by count so that two grades of a class search the same runs. Returns the shrunk
    counterexample in words (English, for the feedback), or None: nothing found, or the rubric gives the exercise
    no exploration (`explore`, a number of walks; 0: none). With `out`, its script and its trace go there (the
    feedback's run to play: lab/grade/playable.py)."""
    if budget <= 0:
        return None
    from lab.explore.counterexample import explore
    from lab.i18n import localize

    strategy = "leader-epoch" if exercise == 6 else "generation"
    try:
        result = explore(impl_name, sizes=(3, 4), truncation=strategy, budget=EXPLORE_SECONDS, seed=seed,
                         bfs_states=300, max_walks=budget, out=out)
    except NotImplementedError:  # a function of the exercise is not written: the rules already say so
        return None
    if result.found is None:
        return None
    return localize(result.explain(), "en")


def counterexample(task: dict, result: dict, out: Path) -> str | None:
    """The exercise's search (`explore_counterexample`), and once more with EXPLORE_AGAIN times the walks when it
    found nothing though a rule or a probe of `result` broke."""
    seed = task["runs"][0]["seed"] if task["runs"] else 0
    walks = task.get("explore", 0)
    found = explore_counterexample(task["exercise"], task["impl"], walks, seed, out)
    lost = any(not ok for _, ok, _ in result["rules"]) or any(not ok for ok, _ in result["probes"].values())
    if found is None and lost:
        found = explore_counterexample(task["exercise"], task["impl"], walks * EXPLORE_AGAIN, seed, out)
    return found


def events_sha256(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("events-*.jsonl"))}


def simulate(run: dict, task: dict, out: Path, faults: Faults) -> tuple[dict, float]:
    from lab.core.guard import fault_of
    from lab.harness import scenario

    t0 = time.perf_counter()
    record = {"run": run["run"], "scenario": run["scenario"], "truncation": run["truncation"], "seed": run["seed"],
              "crashed": None, "passed": False}
    try:
        verdict = scenario.simulate(run["scenario"], seed=run["seed"], truncation=run["truncation"],
                                    impl=task["impl"], out=out, meta=task["meta"])
        record["passed"] = verdict.passed
    except MemoryError:
        raise
    except Exception as exc:  # the student's code broke the run: say where
        fault = fault_of(exc)
        record["crashed"] = fault.sentence() if fault else f"{type(exc).__name__}: {str(exc)[:200]}"
        if fault and fault not in faults.seen:
            faults.seen.append(fault)
    return record, time.perf_counter() - t0


def rerun(task: dict, out: Path, control) -> dict:
    """One exercise, in its own child: the rules, the probes, the grader's runs, the reproductions."""
    result: dict = {"status": "ok", "rules": [], "probes": {}, "runs": [], "reproduced": [], "sim_seconds": 0.0,
                    "counterexample": None}
    started = time.monotonic()
    result = _rerun(task, out, result, control)
    result["wall_seconds"] = time.monotonic() - started
    return result


def _rerun(task: dict, out: Path, result: dict, control) -> dict:
    from lab.core.guard import TIMEOUT as CALL_TIMEOUT
    from lab.grade.probes import PROBES
    from lab.grade.proxy import NotImportable, student_impl
    from lab.i18n import localize
    from lab.student.checks import check_rules, exercise

    faults = Faults()
    if not task["submitted"]:
        return {**result, "status": "not submitted"}
    try:
        impl, student = student_impl(task, control, faults.watch)
    except NotImportable as exc:
        if exc.fault.kind == CALL_TIMEOUT:  # its file ran on at import
            return {**result, "status": TIMEOUT}
        return {**result, "status": f"crashed: {task['module']} does not import: {exc.fault.detail[:300]}"}
    import lab.core.impl as impl_module

    impl_module._cache[task["impl"]] = impl  # the simulator loads the implementation by this name
    ex = exercise(task["exercise"])
    verdict, rules = check_rules(ex, impl)
    result["rules"] = [[localize(r.rule, "en"), r.ok, localize(r.detail, "en")] for r in rules]
    if verdict == "not started":
        student.close()
        return {**result, "status": "not started"}
    for probe_id, (number, probe) in PROBES.items():
        if number == task["exercise"]:
            problem = probe(impl)
            result["probes"][probe_id] = [problem is None, problem or ""]
    crash = None
    before = len(faults.seen)  # a fault from here on stopped a node (the simulator fail-stops it) or the run
    for run in task["runs"]:
        record, seconds = simulate(run, task, out / "runs" / run["run"], faults)
        result["runs"].append(record)
        result["sim_seconds"] += seconds
        crash = crash or record["crashed"]
    narrow = [run for run in task["reproduce"] if set(run.get("code") or [task["module"]]) == {task["module"]}]
    for run in narrow:
        _reproduce(run, task, out, result, faults)
    result["counterexample"] = counterexample(task, result, out / EXPLORED)
    crash = crash or next((f.sentence() for f in faults.seen[before:]), None)
    result["status"] = status_of(faults.seen, crash)
    result["crossed"] = student.crossed
    student.close()
    wide = [run for run in task["reproduce"] if run not in narrow]
    if wide and result["status"] == "ok":
        result["crossed"] += _reproduce_wide(wide, task, out, result, control)
    return result


def _reproduce(run: dict, task: dict, out: Path, result: dict, faults: Faults, impl: str | None = None) -> None:
    """A submitted run simulated again from its own scenario, truncation and seed: the hashes of its events."""
    import lab.core.impl as impl_module

    folder = out / "reproduce" / run["run"]
    # Under the name the run was made with (its cluster_started event names it): the same code, the same events.
    made_as = run.get("impl") if isinstance(run.get("impl"), str) and run["impl"] != "solutions" else None
    if made_as:  # (the name is in the events too: a node that stops names the implementation it ran)
        impl_module._cache[made_as] = replace(impl_module._cache[impl or task["impl"]], name=made_as)
    record, seconds = simulate(run, {**task, "impl": made_as or impl or task["impl"]}, folder, faults)
    result["sim_seconds"] += seconds
    result["reproduced"].append({"run": run["run"], "crashed": record["crashed"],
                                 "events": events_sha256(folder) if folder.is_dir() else {}})


def _reproduce_wide(runs: list[dict], task: dict, out: Path, result: dict, control) -> int:
    """The submitted runs made with the student's code for other exercises too (a handout runs the student's code
    for the whole cluster), each simulated again with exactly those files: the functions of every exercise they
    name from the student's process, the rest the reference's. What those other files do says nothing of this
    exercise's status: their faults are the reproduction's alone. Returns the calls that crossed."""
    import lab.core.impl as impl_module
    from lab.core.interface import EXERCISES as TABLE
    from lab.grade.proxy import NotImportable, student_impl

    crossed = 0
    for code in sorted({tuple(sorted(run["code"])) for run in runs}):
        functions = [f for row in TABLE if row.path in code for f in row.names]
        name = f"exercises:{','.join(functions)}"
        try:
            impl, student = student_impl({**task, "functions": functions, "impl": name}, control)
        except NotImportable as exc:
            for run in (r for r in runs if tuple(sorted(r["code"])) == code):
                result["reproduced"].append({"run": run["run"], "crashed": exc.fault.sentence(), "events": {}})
            continue
        impl_module._cache[name] = impl
        for run in (r for r in runs if tuple(sorted(r["code"])) == code):
            _reproduce(run, task, out, result, Faults(), name)
        crossed += student.crossed
        student.close()
    return crossed


def _write(path: Path, value: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value), encoding="utf-8")
    tmp.replace(path)


def _child(task: dict, out: Path, cpu_seconds: int, control) -> int:
    """The forked child of one exercise: its own process group, CPU clock and stderr."""
    os.setpgid(0, 0)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    err = os.open(out / "stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(err, 2)
    try:
        _write(out / "result.json", rerun(task, out, control))
        return 0
    except MemoryError:
        return EXIT_MEMORY
    except BaseException:  # noqa: BLE001 - whatever went wrong, say it and end this child only
        import traceback

        traceback.print_exc()
        return 1


def run_exercise(workdir: Path, task: dict, limits: dict, control) -> None:
    """Fork one exercise's child and wait for it, within its wall clock; say how it ended if it wrote nothing."""
    out = workdir / "out" / f"ex{task['exercise']}"
    out.mkdir(parents=True)
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os._exit(_child(task, out, limits["cpu_seconds"], control))
    deadline = time.monotonic() + limits["wall_seconds"]
    code = None
    while code is None:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
        elif time.monotonic() > deadline:
            break
        else:
            time.sleep(0.01)
    try:
        os.killpg(pid, signal.SIGKILL)  # the child and whatever it started
    except (ProcessLookupError, PermissionError):
        pass
    if code is None:
        os.waitpid(pid, 0)
    try:
        control.ask(["end", 0])  # the exercise's student process, if its child left one
    except (OSError, EOFError, ValueError):
        pass
    if not (out / "result.json").exists():
        tail = (out / "stderr.txt").read_text(errors="replace")[-4000:] if (out / "stderr.txt").exists() else ""
        _write(out / "status.json", {"status": TIMEOUT if code is None else classify(code, tail)})


def main(argv: list[str] | None = None) -> int:
    privileges.drop()
    argv = sys.argv[1:] if argv is None else argv
    workdir = Path(argv[0]).resolve()
    task = json.loads((workdir / "task.json").read_text(encoding="utf-8"))
    from lab.grade.proxy import Control

    control = Control(socket.socket(fileno=int(argv[1])))
    import lab.explore.counterexample  # noqa: F401 - the lab is imported once, before the children fork
    import lab.grade.probes  # noqa: F401
    import lab.harness.scenario  # noqa: F401
    import lab.student.checks  # noqa: F401
    from lab.core.impl import has_reference, load

    if has_reference():
        load("solutions")  # the reference, for the rest of the cluster in every exercise
    # What is imported lives as long as the process: out of the collector's way, the collections during and after
    # the explorer's searches do not walk it again and again, and the children do not copy its pages by touching
    # them (measured: a quarter of the explorer's time, when its search still collected once per level).
    gc.freeze()
    for exercise_task in task["exercises"]:
        run_exercise(workdir, exercise_task, task["limits"], control)
    return 0


if __name__ == "__main__":
    os._exit(main())
