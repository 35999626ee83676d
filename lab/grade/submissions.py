"""A class's submissions read safely: manifests and traces validated, their events files staged for Spark."""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from dataclasses import dataclass, field
from typing import Callable, Iterable

from lab.core.config import MAX_NODES
from lab.grade.archive import (CLASS_DEPTH, EVENTS_FILE, UNREADABLE, Folder, Limits, Zip, class_entries,
                               open_box, unsafe_name)
from lab.grade.storage import MiB, Rejected, join
from lab.student.ids import student_id, valid_student_id
from lab.core.events import NODE_EXITED
from lab.ports.trace import parse_line

MANIFEST = "manifest.json"
VERSIONS = (1, 2)  # submission format versions this grader reads
FILES_DIR = "files"  # version 2: the student's exercise files, at files/exercises/<name>.py



@dataclass
class RunInfo:
    run: str
    exercise: int
    scenario: str | None
    dir: str
    nodes: list[str]
    liveness_bound: float | None
    files: list[tuple[int, str, str]] = field(default_factory=list)  # (file id, node, path in submission)
    code: tuple[str, ...] = ()  # version 2: the student's files the run was made from (exercises/NAME.py)


@dataclass
class Submission:
    source: str  # the zip or folder name in SUBMISSIONS
    student: str
    status: str = "ok"
    runs: list[RunInfo] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    created: str = ""
    version: int = 1
    # Version 2: per exercise, (rules the student's check found ok, rules checked), as the manifest says.
    rules: dict[int, tuple[int, int]] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)  # runs that do not count: stale or incomplete, and why

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _safe_rel(path: object, what: str) -> str:
    if not isinstance(path, str) or not path:
        raise Rejected(f"malformed: manifest.json {what} is not a path")
    parts = path.replace("\\", "/").split("/")
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path) or ".." in parts:
        raise Rejected(f"unsafe archive: manifest.json {what} {path!r} points outside the submission")
    return "/".join(p for p in parts if p not in ("", "."))


def _said(record: dict, key: str) -> str:
    """What a metadata file says of a field, for a grading_status: never the word None."""
    return f"has no {key}" if record.get(key) is None else f"{key} is {record[key]!r}"


def _json(data: bytes, name: str) -> dict:
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise Rejected(f"malformed: {name} is not JSON ({str(exc).splitlines()[0][:80]})")
    if not isinstance(value, dict):
        raise Rejected(f"malformed: {name} is not a JSON object")
    return value


def _manifest(box, sub: Submission, limits: Limits) -> dict:
    if box.kind(MANIFEST) is None:
        raise Rejected("missing manifest: the submission is empty" if box.empty() else "missing manifest")
    m = _json(box.read(MANIFEST, limits.max_meta_bytes), MANIFEST)
    if m.get("format") != "hwm-lab-submission":
        raise Rejected(f"malformed: manifest.json {_said(m, 'format')}, not 'hwm-lab-submission'")
    version = m.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise Rejected("malformed: manifest.json has no integer version")
    if version > max(VERSIONS):
        raise Rejected(f"malformed: submission format version {version} is newer than this grader "
                       f"({max(VERSIONS)})")
    sub.version = version
    student = m.get("student")
    student = student_id(student) if isinstance(student, str) else student
    if not valid_student_id(student):
        raise Rejected(f"malformed: manifest.json student {student!r} is not a valid student id (letters, digits, "
                       f"'.', '_' and '-', 1 to 64 characters, not starting with '.')")
    sub.student = student
    sub.created = str(m.get("created") or "")
    if not isinstance(m.get("runs"), list):
        raise Rejected("malformed: manifest.json runs is missing or not a list")
    if version >= 2:
        sub.rules = _rule_results(m.get("checks"))
    return m


def _rule_results(checks: object) -> dict[int, tuple[int, int]]:
    """Version 2's self-reported rule results: exercise -> (rules ok, rules)."""
    if not isinstance(checks, list):
        raise Rejected("malformed: manifest.json checks is missing or not a list")
    results = {}
    for i, c in enumerate(checks):
        exercise = c.get("exercise") if isinstance(c, dict) else None
        rules = c.get("rules") if isinstance(c, dict) else None
        if isinstance(exercise, bool) or not isinstance(exercise, int) or not isinstance(rules, list):
            raise Rejected(f"malformed: manifest.json checks[{i}] needs an integer exercise and a list of rules")
        if not all(isinstance(r, dict) and isinstance(r.get("ok"), bool) for r in rules):
            raise Rejected(f"malformed: manifest.json checks[{i}] has a rule without a true/false ok")
        results[exercise] = (sum(r["ok"] for r in rules), len(rules))
    return results


def _file_hashes(box, limits: Limits) -> dict[str, str]:
    """sha256 of every file under files/ in the submission, computed here (the manifest's own list of hashes is
    not trusted): module path (exercises/NAME.py) -> hex digest."""
    hashes = {}
    for rel in box.files_under(FILES_DIR):
        hashes[rel[len(FILES_DIR) + 1:]] = hashlib.sha256(box.read(rel, limits.max_meta_bytes)).hexdigest()
    return hashes


def _stale(run: dict, hashes: dict[str, str]) -> str | None:
    """Why a version 2 run does not match the submitted files, or None."""
    recorded = run.get("files_sha256")
    if not isinstance(recorded, dict) or not recorded:
        return "it records no files it was made from"
    for module, digest in sorted(recorded.items()):
        if module not in hashes:
            return f"it was made from {module}, which the submission does not hold"
        if digest != hashes[module]:
            return f"it was made from another version of {module} than the one submitted"
    return None


_EXITED = f'"{NODE_EXITED}"'.encode()  # a quick look before a line is parsed


def _never_started(box, rel: str, node: str, limits: Limits) -> bool:
    """Whether the run's cluster events say the node's process ended on its own (`node_exited`): a node that
    never started has nothing to trace."""
    name = f"{rel}/events-cluster.jsonl"
    if box.kind(name) is None:
        return False
    for line in box.read(name, limits.max_file_bytes).splitlines():
        if _EXITED not in line:
            continue
        try:
            event = parse_line(line)
        except ValueError:
            continue
        if event["type"] == NODE_EXITED and event.get("target") == node:
            return True
    return False


def _trace_meta(box, rel: str, limits: Limits) -> dict:
    name = f"{rel}/trace.json"
    if box.kind(name) is None:
        raise Rejected(f"malformed: {name} is missing")
    meta = _json(box.read(name, limits.max_meta_bytes), name)
    if meta.get("format") != "hwm-lab-trace":
        raise Rejected(f"malformed: {name} {_said(meta, 'format')}, not 'hwm-lab-trace'")
    if not isinstance(meta.get("version"), int) or meta["version"] > 1:
        raise Rejected(f"malformed: {name} trace format version {meta.get('version')!r} is not supported (1)")
    nodes = meta.get("nodes")
    if (not isinstance(nodes, list) or not nodes or len(nodes) > MAX_NODES
            or not all(isinstance(n, str) and EVENTS_FILE.match(f"events-{n}.jsonl") for n in nodes)
            or "cluster" in nodes or len(set(nodes)) != len(nodes)):
        raise Rejected(f"malformed: {name} nodes must be 1 to {MAX_NODES} distinct node ids")
    bound = meta.get("liveness_bound")
    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, (int, float)) or bound < 0):
        raise Rejected(f"malformed: {name} liveness_bound is not a number of seconds")
    return meta


def inspect(box, sub: Submission, limits: Limits) -> list[tuple[RunInfo, list[tuple[str, str, int]]]]:
    """Validate a submission's metadata; return the runs that count and their events files (node, path, size).
    A run that does not count (stale or incomplete) is named in sub.left_out with the reason."""
    m = _manifest(box, sub, limits)
    hashes = _file_hashes(box, limits) if sub.version >= 2 else {}
    runs, seen, total = [], set(), 0
    for i, r in enumerate(m["runs"]):
        if not isinstance(r, dict) or not isinstance(r.get("run"), str) or not r["run"]:
            raise Rejected(f"malformed: manifest.json runs[{i}] has no run name")
        name = r["run"]
        if name in seen:
            raise Rejected(f"malformed: manifest.json lists run {name!r} twice")
        seen.add(name)
        exercise = r.get("exercise")
        if isinstance(exercise, bool) or not isinstance(exercise, int):
            raise Rejected(f"malformed: manifest.json run {name!r} has no integer exercise")
        rel = _safe_rel(r.get("dir", f"runs/{name}"), f"run {name!r} dir")
        if sub.version >= 2:
            why = _stale(r, hashes)
            if why:
                sub.left_out.append(f"stale: run {name} (exercise {exercise}) counts for nothing: {why}")
                continue
        meta = _trace_meta(box, rel, limits)
        files = []
        for fname, kind, size in box.listdir(rel):
            found = EVENTS_FILE.match(fname)
            if not found or kind != "file":
                continue
            node = found.group(1)
            if node != "cluster" and node not in meta["nodes"]:
                raise Rejected(f"malformed: {rel}/{fname} is from node {node}, which is not in trace.json nodes")
            if size > limits.max_file_bytes:
                raise Rejected(f"too large: {rel}/{fname} is {size / MiB:.1f} MB "
                               f"(limit {limits.max_file_bytes / MiB:g} MB per file)")
            total += size
            if total > limits.max_submission_bytes:
                raise Rejected(f"too large: the events files add up to more than "
                               f"{limits.max_submission_bytes / MiB:g} MB")
            files.append((node, f"{rel}/{fname}", size))
        gaps = _gaps(box, rel, meta["nodes"], files, limits)
        if gaps:
            sub.left_out.append(f"incomplete: run {name} (exercise {exercise}) counts for nothing: "
                                f"{'; '.join(gaps)}")
            continue
        scenario = r.get("scenario", meta.get("scenario"))
        bound = meta.get("liveness_bound")
        code = tuple(sorted(r["files_sha256"])) if sub.version >= 2 else ()  # (not stale: each one is in files/)
        runs.append((RunInfo(run=name, exercise=exercise, scenario=scenario if isinstance(scenario, str) else None,
                             dir=rel, nodes=list(meta["nodes"]),
                             liveness_bound=None if bound is None else float(bound), code=code), files))
    return runs


def _gaps(box, rel: str, nodes: list[str], files: list[tuple[str, str, int]], limits: Limits) -> list[str]:
    """The events files a run lacks: every node of trace.json and the cluster have one with events in it, unless
    the cluster's events say the node's process ended on its own before it started (a deleted file could hide
    a violation)."""
    sizes = {node: (path, size) for node, path, size in files}
    gaps = []
    for node in [*nodes, "cluster"]:
        path, size = sizes.get(node, (None, 0))
        if path is not None and size > 0 and (size > 64 or box.read(path, 64).strip()):
            continue
        if node != "cluster" and _never_started(box, rel, node, limits):
            continue
        gaps.append(f"events-{node}.jsonl is {'missing' if path is None else 'empty'}")
    return gaps


def _fallback_id(source: str) -> str:
    stem = source[:-4] if source.lower().endswith(".zip") else source
    clean = re.sub(r"[^A-Za-z0-9._@-]", "_", stem).lstrip("._-")[:64]
    return clean or "unnamed"


@dataclass
class Catalog:
    submissions: list[Submission]
    files: list[tuple[int, str, str, str, str]]  # (file id, student, run, node, path in submission)
    events_dir: str
    events_bytes: int = 0  # the size of the staged events files, to size Spark's partitions
    set_aside: list[Submission] = field(default_factory=list)  # a student's other submissions, not graded

    @property
    def runs(self) -> Iterable[tuple[Submission, RunInfo]]:
        for s in self.submissions:
            for r in s.runs:
                yield s, r


NOT_A_SUBMISSION = "not a submission: neither a zip nor a folder that holds a manifest.json"


def entries_of(storage, submissions_dir: str, exclude: Iterable[str] = (), skip: Iterable[str] = ()) -> list[tuple]:
    """Every entry of SUBMISSIONS to judge, as (source, kind): kind "zip", "dir", "link", "member" (a submission
    inside a class's zip or folder: its source is the path to it) or "other" (no submission: said so). A class in
    one zip or folder (an LMS's bulk download, a zip of zips: lab.grade.archive.class_entries) is unpacked into its
    submissions. Names starting with '.' or '_' are not entries; `skip` are unchanged since a previous grade."""
    excluded = list(exclude)
    skipped = set(skip)
    found = []
    for name, kind, _ in storage.listdir(submissions_dir):
        if name.startswith((".", "_")) or name in skipped:
            continue
        path = join(submissions_dir, name)
        if kind == "dir" and any(storage.same(path, x) for x in excluded):
            continue
        inner = None
        if kind == "file" and name.lower().endswith(".zip"):
            try:
                inner = class_entries(storage.open_zip(path, 2 ** 62).namelist())
            except (zipfile.BadZipFile, *UNREADABLE):
                inner = None  # judged as a submission: its status will say why it does not open
        elif kind == "dir" and storage.kind(join(path, MANIFEST)) is None:
            try:
                inner = class_entries(_files(storage, path))
            except OSError:
                inner = None
        if inner is None:
            found.append((name, kind if kind in ("dir", "link") else "zip" if kind == "file"
                          and name.lower().endswith(".zip") else "other"))
        else:
            found.extend((f"{name}/{member}", "member" if what != "other" else "other") for member, what in inner)
    return found


def _files(storage, root: str, rel: str = "", depth: int = CLASS_DEPTH) -> list[str]:
    """The files of a folder (their paths from it), `depth` folders deep; links and pipes are no files."""
    out = []
    for name, kind, _ in storage.listdir(join(root, rel) if rel else root):
        sub = f"{rel}/{name}" if rel else name
        if kind == "file":
            out.append(sub)
        elif kind == "dir" and depth > 1:
            out.extend(_files(storage, root, sub, depth - 1))
    return out


def catalog(storage, submissions_dir: str, staging: str, limits: Limits = Limits(), *,
            exclude: Iterable[str] = (), progress: Callable[[str], None] = lambda _: None,
            skip: Iterable[str] = ()) -> Catalog:
    """Inspect every entry of submissions_dir (a class in one zip or folder: each submission in it) and stage the
    events files of the sound ones at staging/events/f<id>.jsonl, the only place Spark reads events from. Every
    entry becomes a Submission, graded or with the status that says why not. Entries named in `skip` (unchanged
    since a previous grade whose results are reused) are not read."""
    events_dir = join(staging, "events")
    storage.makedirs(events_dir)
    entries = entries_of(storage, submissions_dir, exclude, skip)
    subs: list[Submission] = []
    files: list[tuple[int, str, str, str, str]] = []
    events_bytes = 0
    candidates = []
    for name, kind in entries:
        base = name.rsplit("/", 1)[-1]
        if kind == "link":
            subs.append(Submission(source=name, student=_fallback_id(base), status=f"unsafe folder: {name} is a link"))
        elif kind == "other":
            status = (f"unsafe archive: entry {name.split('/', 1)[1]!r} points outside the archive"
                      if "/" in name and unsafe_name(name.split("/", 1)[1]) else NOT_A_SUBMISSION)
            subs.append(Submission(source=name, student=_fallback_id(base), status=status))
        else:
            candidates.append((name, kind))
    step = max(1, len(candidates) // 10)
    for n, (name, kind) in enumerate(candidates, 1):
        sub = Submission(source=name, student=_fallback_id(name.rsplit("/", 1)[-1]))
        subs.append(sub)
        written: list[str] = []
        try:
            if kind == "member":
                box = open_box(storage, submissions_dir, name, limits)
            elif kind == "zip":
                size = storage.kind(join(submissions_dir, name))[1]
                if size > limits.max_submission_bytes:
                    raise Rejected(f"too large: the archive is {size / MiB:.1f} MB "
                                   f"(limit {limits.max_submission_bytes / MiB:g} MB)")
                box = open_box(storage, submissions_dir, name, limits)
            else:
                box = Folder(storage, join(submissions_dir, name), limits)
            runs = inspect(box, sub, limits)
            first_id = len(files)
            staged = []
            for run, run_files in runs:
                for node, rel, size in run_files:
                    events_bytes += size
                    file_id = first_id + len(staged)
                    dst = join(events_dir, f"f{file_id:07d}.jsonl")
                    written.append(dst)
                    box.copy(rel, storage, dst, limits.max_file_bytes)
                    staged.append((file_id, sub.student, run.run, node, rel))
                    run.files.append((file_id, node, rel))
                sub.runs.append(run)
            files.extend(staged)
        except zipfile.BadZipFile:
            sub.status = "malformed: not a zip archive"
            sub.runs, sub.left_out = [], []
        except Rejected as exc:
            sub.status = str(exc)
            sub.runs, sub.left_out = [], []
            for dst in written:
                storage.remove(dst)
        except UNREADABLE as exc:
            sub.status = f"malformed: cannot read the submission ({type(exc).__name__}: {str(exc)[:100]})"
            sub.runs, sub.left_out = [], []
            for dst in written:
                storage.remove(dst)
        if n % step == 0 or n == len(candidates):
            progress(f"read {n}/{len(candidates)} submissions")
    set_aside = _resolve_duplicates(subs, files)
    return Catalog(subs, files, events_dir, events_bytes, set_aside)


def _resolve_duplicates(subs: list[Submission], files: list) -> list[Submission]:
    """One graded submission per student: of two by the same student the gradable one, then the newer (manifest
    `created`), counts; the others are set aside, each with a status that names the one graded, and returned."""
    by_student: dict[str, list[Submission]] = {}
    for s in subs:
        by_student.setdefault(s.student, []).append(s)
    set_aside = []
    for student, group in by_student.items():
        if len(group) < 2:
            continue
        group.sort(key=lambda s: (s.ok, s.created, s.source))
        keep = group[-1]
        for s in group[:-1]:
            keep.warnings.append(f"{s.source} was also submitted by {student} and is ignored (older or unreadable)")
            subs.remove(s)
            dropped = {file_id for r in s.runs for file_id, _, _ in r.files}
            files[:] = [f for f in files if f[0] not in dropped]
            why = "newer" if s.ok else f"this one: {s.status}"
            s.status = f"duplicate: {keep.source}, also by {student}, is graded instead ({why})"
            s.runs, s.left_out = [], []
            set_aside.append(s)
    return set_aside
