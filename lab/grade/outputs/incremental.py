"""Re-grading only what changed: a grade into an --out that holds a previous grade of the same rubric, limits and
grader keeps the results of every submission whose content (sha256) is unchanged and grades the rest; the new
outputs then replace every file of the previous run (an --out with other files is refused without --force), so that
no stale file survives."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources

from lab.grade.outputs.outdir import OURS

STATE = "grade-state.json"
# What a grade writes into --out; a folder holding only these (and the state) holds a previous grade.
OUTPUTS = ("grades.csv", "violations.csv", "violations.parquet", "similarity.csv", "report.html", "feedback",
           "gradescope", "lms", "spark.log", "reexec.csv", STATE, "_staging", *OURS)
HASH_THREADS = 4  # at most, to hash a local class


class Refused(Exception):
    """--out holds files the grader did not write, and --force was not given."""


def grader_version() -> str:
    """A digest of the grader's own code: any change to how it grades re-grades everything."""
    h = hashlib.sha256()
    for name, file in sorted(_grader_files(resources.files("lab.grade"))):
        h.update(name.encode() + b"\0" + file.read_bytes())
    return h.hexdigest()[:16]


def _grader_files(folder, prefix: str = "") -> list:
    """(path under lab/grade/, file) of every .py and .toml of the grader, its rooms' included."""
    found = []
    for entry in folder.iterdir():
        if entry.is_dir() and entry.name != "__pycache__":
            found += _grader_files(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith((".py", ".toml")):
            found.append((prefix + entry.name, entry))
    return found


def rubric_digest(rubric) -> str:
    """A digest of the rubric's content, the same in every process (a set's order is not: string hashing is
    seeded per process)."""
    canon = {"name": rubric.name, "credit": rubric.credit, "decimals": rubric.decimals,
             "skip": {s: [sorted(k.checks), sorted(k.indexes)] for s, k in sorted(rubric.skip.items())},
             "exercises": [[e.number, e.title, sorted(e.points.items()), sorted(e.scenarios), sorted(e.progress)]
                           for e in rubric.exercises]}
    return hashlib.sha256(json.dumps(canon, sort_keys=True).encode()).hexdigest()[:16]


def fingerprint(rubric, args) -> dict:
    """What a previous grade must share with this one for its results to be reused."""
    return {"grader": grader_version(), "rubric": rubric_digest(rubric), "runs": runs_source(args),
            "max_file_mb": float(args.max_file_mb), "max_submission_mb": float(args.max_submission_mb)}


def runs_source(args) -> str:
    """Where the graded runs come from: the submissions as sent, or the grader's re-execution with this course
    secret (named by a keyed digest, never the secret itself: other seeds give other runs)."""
    secret = getattr(args, "secret", None)
    if secret is None:
        return "submitted"
    return "re-executed " + hmac.new(secret, b"hwm-lab-grade-state", hashlib.sha256).hexdigest()[:16]


@dataclass
class Previous:
    """A previous grade of the same rubric and grader: per SUBMISSIONS entry, its hash and what it gave."""

    entries: dict[str, dict] = field(default_factory=dict)
    violations: str | None = None  # its violations.parquet (in place until the new outputs replace it)


def prepare(storage, out: str, rubric, args, say) -> Previous | None:
    """Read a previous grade in --out that can be reused (nothing in --out changes before the new outputs are put
    in place: lab/grade/outputs/outdir.py)."""
    from lab.grade.inputs.storage import join

    kind = storage.kind(out)
    if kind is None:
        return None
    names = [name for name, _, _ in storage.listdir(out)]
    foreign = [n for n in names if n not in OUTPUTS]
    if foreign and not getattr(args, "force", False):
        raise Refused(f"{out} holds files the grader did not write ({', '.join(sorted(foreign)[:5])}); "
                      f"choose an empty folder, or give --force to empty it")
    previous = None
    if STATE in names:
        try:
            state = json.loads(storage.read(join(out, STATE)).decode("utf-8"))
        except (OSError, ValueError):
            state = {}
        if state.get("fingerprint") == fingerprint(rubric, args) and "violations.parquet" in names:
            previous = Previous(entries=state.get("entries", {}), violations=join(out, "violations.parquet"))
        else:
            say("the previous grade in the output folder used another rubric, limits or grader: grading everything")
    return previous


def entry_hashes(storage, submissions: str, out: str) -> dict[str, str]:
    """sha256 of every zip or submission folder in SUBMISSIONS (a folder: over its files' paths and contents). Local
    files are hashed by a few threads (hashlib and file reads let go of the GIL): a class of 2.5 GB in about 1 s."""
    from lab.grade.inputs.storage import LocalStorage, join

    entries = [(name, kind) for name, kind, _ in storage.listdir(submissions)
               if not name.startswith((".", "_")) and not storage.same(join(submissions, name), out)
               and ((kind == "file" and name.lower().endswith(".zip")) or kind == "dir")]

    def digest(entry: tuple[str, str]) -> str:
        name, kind = entry
        path = join(submissions, name)
        try:
            if kind == "file":
                return hashlib.sha256(storage.read(path)).hexdigest()
            h = hashlib.sha256()
            for rel in _walk(storage, path, ""):
                if "\0" in rel:  # a link or another kind of file: its presence is content, it is never read
                    h.update(os.fsencode(rel))
                else:
                    h.update(os.fsencode(rel) + b"\0" + hashlib.sha256(storage.read(join(path, rel))).digest())
            return h.hexdigest()
        except (OSError, ValueError, RuntimeError) as exc:  # unreadable: graded again each time, and refused then
            return f"unreadable ({type(exc).__name__}) {uuid.uuid4().hex}"

    workers = min(HASH_THREADS, os.cpu_count() or 1) if isinstance(storage, LocalStorage) else 1
    with ThreadPoolExecutor(workers) as pool:
        return dict(zip((name for name, _ in entries), pool.map(digest, entries)))


def _walk(storage, root: str, rel: str) -> list[str]:
    from lab.grade.inputs.storage import join

    out = []
    for name, kind, _ in storage.listdir(join(root, rel) if rel else root):
        sub = f"{rel}/{name}" if rel else name
        if kind == "dir":
            out.extend(_walk(storage, root, sub))
        elif kind == "file":
            out.append(sub)
        else:
            out.append(sub + "\0" + kind)  # a link: the loader refuses it; its presence is content too
    return out


def reusable(previous: Previous | None, hashes: dict[str, str]) -> dict[str, dict]:
    """The entries of SUBMISSIONS whose previous results hold: same name, same content, and a student that no
    other entry of the previous grade also submitted as (two submissions by one student are decided together)."""
    if previous is None:
        return {}
    students: dict[str, int] = {}
    for entry in previous.entries.values():
        students[entry["student"]] = students.get(entry["student"], 0) + 1
    return {name: entry for name, entry in previous.entries.items()
            if hashes.get(name) == entry["hash"] and students[entry["student"]] == 1}


# ---- results, kept and restored -----------------------------------------------------------------------------

def record(r, sub, hash_: str, counts: dict, events: int, graded=None) -> dict:
    """What the state keeps of one graded entry (its StudentResult r, its submissions.Submission sub): enough to
    rebuild its result with the same rubric. `graded`: what the grader's re-execution found (lab.grade.spark.reexec's
    Outcome), whose rules, probes and run weights then replace the submission's own word."""
    rules = graded.rules.get(r.student) if graded else sub.rules
    return {"hash": hash_, "student": r.student, "status": r.status, "runs": [list(x) for x in r.runs],
            "warnings": list(r.warnings), "rules": {str(k): list(v) for k, v in (rules or {}).items()},
            "reexecuted": graded is not None,
            "probes": [[ex, probe, ok] for (ex, probe), ok in sorted((graded.probes.get(r.student) or {}).items())]
            if graded else [],
            "weights": dict(graded.weights.get(r.student) or {}) if graded else {},
            "timings": [t for t in graded.timings if t["student"] == r.student] if graded else [],
            "submitted": [x for x in graded.submitted if x["student"] == r.student] if graded else [],
            "version": sub.version, "events": events,
            "counts": [[run, check, n] for (run, check), n in sorted(counts.items())],
            "first": [[ex, check, v] for (ex, check), v in sorted(r.first.items())],
            "feedback": {"statuses": r.statuses, "rule_results": r.rule_results, "playable": r.playable}}


def restore(entry: dict, source: str, rubric):
    """The StudentResult of a reused entry, scored again with the (same) rubric."""
    from lab.grade.outputs import feedback
    from lab.grade.inputs import rubric as rubric_module

    runs = [(run, exercise, scenario) for run, exercise, scenario in entry["runs"]]
    score = None
    if entry["status"] == "ok":
        counts = {(run, check): n for run, check, n in entry["counts"]}
        graded = entry.get("reexecuted", False)
        rules = ({int(k): tuple(v) for k, v in entry["rules"].items()} if graded or entry["version"] >= 2
                 else None)
        probes = {(ex, probe): ok for ex, probe, ok in entry.get("probes", [])} if graded else None
        score = rubric_module.score(rubric, runs, counts, rules, probes, entry.get("weights") if graded else None)
    first = {}
    for ex, check, v in entry["first"]:
        if "excerpt" in v:
            v["excerpt"] = [tuple(x) for x in v["excerpt"]]
        first[(ex, check)] = v
    r = feedback.StudentResult(student=entry["student"], source=source, status=entry["status"], score=score,
                               runs=runs, warnings=list(entry["warnings"]), first=first)
    kept = entry.get("feedback") or {}
    for name in ("statuses", "rule_results", "playable"):  # keyed by exercise: JSON made the numbers text
        getattr(r, name).update({int(k): v for k, v in (kept.get(name) or {}).items()})
    return r


def save(storage, out: str, fp: dict, entries: dict[str, dict]) -> None:
    from lab.grade.inputs.storage import join

    storage.write(join(out, STATE), (json.dumps({"fingerprint": fp, "entries": entries}, indent=1, default=str)
                                     + "\n").encode("utf-8"))


def merge_violations(spark, storage, previous: Previous, students: set[str], out: str, staging: str):
    """violations.parquet of this grade (the changed submissions) with the previous grade's rows of the students
    whose results are reused; returns the merged DataFrame, written at DIR/violations.parquet."""
    from pyspark.sql import functions as F

    from lab.grade.inputs.storage import join

    old = spark.read.parquet(storage.for_spark(previous.violations)).filter(F.col("submission").isin(sorted(students)))
    new_path = join(out, "violations.parquet")
    merged = old
    if storage.kind(new_path) is not None:
        merged = spark.read.parquet(storage.for_spark(new_path)).unionByName(old)
    target = join(staging, "merged-violations")
    (merged.coalesce(1).sortWithinPartitions("submission", "run", "check", "time", "seq")
     .write.mode("overwrite").parquet(storage.for_spark(target)))
    storage.remove(new_path)
    storage.rename(target, new_path)
    return spark.read.parquet(storage.for_spark(new_path))
