"""Each student's failing runs as files that play in any browser (web.onefile): for every exercise that lost points,
its first failing run (the run of its first graded violation, else the explorer's shrunk counterexample), written
as feedback/<student>-ex<N>.html beside feedback/<student>.html, which links to it."""

from __future__ import annotations

import json
import tempfile
import time
import zlib
from pathlib import Path

from lab.grade.inputs.archive import Limits, open_box
from lab.grade.outputs.feedback import FEEDBACK
from lab.grade.inputs.storage import Rejected, join

KEEP = 1500  # events a file shows at most: a longer run keeps its rare events, the rest counted (web.onefile)
COUNTEREXAMPLE = "counterexample"  # the kind of a file made from the explorer's counterexample (else "run")


def file_name(student: str, exercise: int) -> str:
    return f"{student}-ex{exercise}.html"


def chosen(r, counterexamples: dict) -> dict[int, tuple[str, str | None]]:
    """exercise -> (kind, run): the run to play for each exercise of student result `r` that lost points."""
    if not r.score:
        return {}
    order = {run: i for i, (run, _, _) in enumerate(r.runs)}
    out: dict[int, tuple[str, str | None]] = {}
    for number, points in r.score.by_exercise.items():
        checks = [cs for cs in r.score.checks if cs.exercise == number]
        if points >= sum(cs.max_points for cs in checks):
            continue
        failed = [run for cs in checks for run in cs.failed_runs if run in order]
        if failed:
            out[number] = ("run", min(failed, key=order.get))
        elif (r.student, number) in counterexamples:
            out[number] = (COUNTEREXAMPLE, None)
    return out


def _submitted_meta(storage, submissions: str, sub, run, limits: Limits) -> dict:
    """A submitted run's trace.json, read from its submission through the loader's checked views."""
    try:
        box = open_box(storage, submissions, sub.source, limits)
        return json.loads(box.read(f"{run.dir}/trace.json", limits.max_meta_bytes))
    except (OSError, ValueError, Rejected):
        return {}


def _trace_of_run(storage, cat, sub, run_name: str, meta: dict, folder: Path) -> None:
    """The run's trace directory as the job staged it: its events files, and its trace.json (or what the job knows
    of it: its name and nodes)."""
    run = next(r for r in sub.runs if r.run == run_name)
    for file_id, node, _ in run.files:
        (folder / f"events-{node}.jsonl").write_bytes(storage.read(join(cat.events_dir, f"f{file_id:07d}.jsonl")))
    meta = meta or {"run": run.run, "scenario": run.scenario, "nodes": run.nodes}
    (folder / "trace.json").write_text(json.dumps({**meta, "format": "hwm-lab-trace", "version": 1}))


def _violation(r, number: int, run: str | None) -> dict | None:
    """The first violation of exercise `number` in `run`, for the file's timeline to mark (a counterexample's
    trace marks its own)."""
    found = [v for (ex, check), v in r.first.items() if ex == number and v.get("run") == run
             and v.get("node") is not None and v.get("seq") is not None]
    if not found:
        return None
    v = min(found, key=lambda v: (v.get("time") or 0, v["seq"]))
    return {"node": v["node"], "seq": int(v["seq"]), "text": v.get("detail") or ""}


def _trace_of_counterexample(files: dict[str, bytes], folder: Path) -> None:
    for name, data in files.items():
        if name == "trace.json" or (name.startswith("events-") and name.endswith(".jsonl") and "/" not in name):
            (folder / name).write_bytes(zlib.decompress(data))


def write(storage, out: str, cat, results, outcome, limits: Limits, submissions: str) -> float:
    """Write every student's files to play, and set each result's `playable` (exercise -> what was written);
    returns the seconds it took. Nothing here runs a student's code: the traces are those the job already holds."""
    from web.onefile import build

    started = time.monotonic()
    counterexamples = outcome.counterexamples if outcome else {}
    metas = outcome.metas if outcome else {}
    subs = {s.student: s for s in cat.submissions if s.ok}
    for r in results:
        sub = subs.get(r.student)
        if sub is None:
            continue
        for number, (kind, run) in sorted(chosen(r, counterexamples).items()):
            with tempfile.TemporaryDirectory(prefix="hwm-lab-playable-") as tmp:
                folder = Path(tmp, run or COUNTEREXAMPLE)
                folder.mkdir()
                if kind == COUNTEREXAMPLE:
                    _trace_of_counterexample(counterexamples[(r.student, number)], folder)
                else:
                    meta = metas.get((r.student, run)) or _submitted_meta(storage, submissions, sub,
                                                                          next(x for x in sub.runs if x.run == run),
                                                                          limits)
                    _trace_of_run(storage, cat, sub, run, meta, folder)
                page = build(folder, keep=KEEP, violation=_violation(r, number, run))
            data = page.html.encode("utf-8")
            name = file_name(r.student, number)
            storage.write(join(out, FEEDBACK, name), data)
            r.playable[number] = {"file": name, "kind": kind, "run": run, "bytes": len(data),
                                  "events": page.events, "shown": page.kept}
    return time.monotonic() - started


def restore(storage, out: str, results, aside: str) -> None:
    """A re-grade: the files of the submissions whose results are reused, copied from the previous grade's feedback
    folder `aside` (still in place: an interrupted grade leaves it whole); one that is not there is not linked."""
    storage.makedirs(join(out, FEEDBACK))
    for r in results:
        for number, p in list(r.playable.items()):
            if storage.kind(join(aside, p["file"])) is None:
                del r.playable[number]
                continue
            storage.write(join(out, FEEDBACK, p["file"]), storage.read(join(aside, p["file"])))


def summary(results, seconds: float) -> str:
    """The progress line of the class's files to play: how many, how big in all, how long they took to write."""
    sizes = [p["bytes"] for r in results for p in r.playable.values()]
    students = sum(1 for r in results if r.score)
    return (f"runs to play: {len(sizes)} file{'' if len(sizes) == 1 else 's'} beside the feedback of "
            f"{students} student{'' if students == 1 else 's'}, "
            f"{sum(sizes) / 2 ** 20:.1f} MB in all (largest {max(sizes, default=0) / 1024:.0f} KB; a longer run "
            f"shows its rare events and the last of the rest, {KEEP} events at most), written in {seconds:.1f} s")
