"""Reading a class's submissions safely: zips are checked before anything is extracted (no `..`, no absolute
path, no link, no oversize member, no zip bomb), manifests and trace.json files are validated, and every
events file is staged under the output folder; then Spark reads all events files at once against the explicit
schema and marks each submission whose lines are malformed or were edited.

Paths may be local or any URI Spark's Hadoop file systems understand (file://, hdfs://, s3a://, ...).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import operator
import os
import re
import shutil
import stat
import zipfile

from lab.core.config import MAX_NODES
from lab.student.ids import is_secret, valid_student_id
from dataclasses import dataclass, field
from typing import Callable, Iterable

MANIFEST = "manifest.json"
VERSIONS = (1, 2)  # submission format versions this grader reads
FILES_DIR = "files"  # version 2: the student's exercise files, at files/exercises/<name>.py
EVENTS_FILE = re.compile(r"^events-([A-Za-z0-9_-]{1,32})\.jsonl$")
_SECRET = ("unsafe: {name} is a running cluster's secret, which never belongs in a hand-in; make the submission "
           "again with `hwm-lab submit`, which leaves it out")
MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 128 * MiB  # one events file
    max_submission_bytes: int = 1024 * MiB  # everything in one submission, uncompressed
    max_members: int = 10_000  # entries in one zip
    max_meta_bytes: int = 1 * MiB  # manifest.json, trace.json


class Rejected(Exception):
    """A submission that cannot be graded; str(self) is its grading_status."""


@dataclass
class RunInfo:
    run: str
    exercise: int
    scenario: str | None
    dir: str
    nodes: list[str]
    liveness_bound: float | None
    files: list[tuple[int, str, str]] = field(default_factory=list)  # (file id, node, path in submission)


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


# ---- storage ------------------------------------------------------------------------------------------------

def is_uri(path: str) -> bool:
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path) is not None or path.startswith("file:")


def join(base: str, *parts: str) -> str:
    if is_uri(base):
        return "/".join([base.rstrip("/"), *parts])
    return os.path.join(base, *parts)


class LocalStorage:
    """Plain paths on this machine."""

    def listdir(self, path: str) -> list[tuple[str, str, int]]:
        out = []
        for name in sorted(os.listdir(path)):
            st = os.lstat(os.path.join(path, name))
            kind = ("link" if stat.S_ISLNK(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode)
                    else "file" if stat.S_ISREG(st.st_mode) else "other")
            out.append((name, kind, st.st_size))
        return out

    def kind(self, path: str) -> tuple[str, int] | None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        kind = ("link" if stat.S_ISLNK(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode)
                else "file" if stat.S_ISREG(st.st_mode) else "other")
        return kind, st.st_size

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def open_zip(self, path: str, limit: int) -> zipfile.ZipFile:
        return zipfile.ZipFile(path)

    def write(self, path: str, data: bytes) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    def open_write(self, path: str):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        return open(path, "wb")

    def stage(self, src: str, dst: str) -> None:
        """Put a copy of src at dst: a hard link when possible (same file system), else a copy."""
        try:
            os.link(src, dst)
        except OSError:
            shutil.copyfile(src, dst, follow_symlinks=False)

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def remove(self, path: str) -> None:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.remove(path)

    def rename(self, src: str, dst: str) -> None:
        os.replace(src, dst)

    def for_spark(self, path: str) -> str:
        return os.path.abspath(path)

    def same(self, a: str, b: str) -> bool:
        return os.path.realpath(a) == os.path.realpath(b)


class _JavaWriter:
    def __init__(self, stream):
        self.stream = stream

    def write(self, data: bytes) -> None:
        if data:
            self.stream.write(bytearray(data))

    def close(self) -> None:
        self.stream.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class HadoopStorage:
    """Any URI Spark's Hadoop file systems understand, through the driver's JVM."""

    def __init__(self, spark):
        self.jvm = spark._jvm
        self.conf = spark._jsc.hadoopConfiguration()

    def _p(self, path: str):
        return self.jvm.org.apache.hadoop.fs.Path(path)

    def _fs(self, path: str):
        return self._p(path).getFileSystem(self.conf)

    def _kind(self, st) -> str:
        return "link" if st.isSymlink() else "dir" if st.isDirectory() else "file" if st.isFile() else "other"

    def listdir(self, path: str) -> list[tuple[str, str, int]]:
        return sorted((st.getPath().getName(), self._kind(st), st.getLen())
                      for st in self._fs(path).listStatus(self._p(path)))

    def kind(self, path: str) -> tuple[str, int] | None:
        fs, p = self._fs(path), self._p(path)
        if not fs.exists(p):
            return None
        st = fs.getFileLinkStatus(p)
        return self._kind(st), st.getLen()

    def read(self, path: str) -> bytes:
        stream = self._fs(path).open(self._p(path))
        try:
            return bytes(self.jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def open_zip(self, path: str, limit: int) -> zipfile.ZipFile:
        size = self.kind(path)[1]
        if size > limit:
            raise Rejected(f"too large: the archive is {size / MiB:.1f} MB (limit {limit / MiB:.0f} MB)")
        return zipfile.ZipFile(io.BytesIO(self.read(path)))

    def write(self, path: str, data: bytes) -> None:
        with self.open_write(path) as f:
            f.write(data)

    def open_write(self, path: str):
        return _JavaWriter(self._fs(path).create(self._p(path), True))

    def stage(self, src: str, dst: str) -> None:
        self.jvm.org.apache.hadoop.fs.FileUtil.copy(self._fs(src), self._p(src), self._fs(dst), self._p(dst),
                                                    False, self.conf)

    def makedirs(self, path: str) -> None:
        self._fs(path).mkdirs(self._p(path))

    def remove(self, path: str) -> None:
        fs, p = self._fs(path), self._p(path)
        if fs.exists(p):
            fs.delete(p, True)

    def rename(self, src: str, dst: str) -> None:
        self.remove(dst)
        if not self._fs(src).rename(self._p(src), self._p(dst)):
            raise OSError(f"cannot rename {src} to {dst}")

    def for_spark(self, path: str) -> str:
        return path

    def same(self, a: str, b: str) -> bool:
        return self._fs(a).makeQualified(self._p(a)).toString() == self._fs(b).makeQualified(self._p(b)).toString()


def storage_for(path: str, spark=None):
    if is_uri(path):
        if spark is None:
            raise ValueError(f"{path} needs Spark's file systems: start Spark first")
        return HadoopStorage(spark)
    return LocalStorage()


# ---- one submission -----------------------------------------------------------------------------------------

class _Zip:
    """A submission zip, checked as a whole before anything is read from it."""

    def __init__(self, zf: zipfile.ZipFile, limits: Limits):
        self.zf = zf
        self.members: dict[str, zipfile.ZipInfo] = {}
        infos = zf.infolist()
        if len(infos) > limits.max_members:
            raise Rejected(f"too large: the archive holds {len(infos)} entries (limit {limits.max_members})")
        total = 0
        for info in infos:
            name = info.filename
            parts = re.split(r"[/\\]", name)
            if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or ".." in parts:
                raise Rejected(f"unsafe archive: entry {name!r} points outside the archive")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise Rejected(f"unsafe archive: entry {name!r} is a link")
            if is_secret(name):
                raise Rejected(_SECRET.format(name=name))
            if info.is_dir():
                continue
            if info.file_size > limits.max_file_bytes:
                raise Rejected(f"too large: {name} is {info.file_size / MiB:.1f} MB uncompressed "
                               f"(limit {limits.max_file_bytes / MiB:g} MB per file)")
            total += info.file_size
            if total > limits.max_submission_bytes:
                raise Rejected(f"too large: the archive unpacks to more than {limits.max_submission_bytes / MiB:g} MB")
            self.members[name[2:] if name.startswith("./") else name] = info

    def kind(self, rel: str) -> tuple[str, int] | None:
        info = self.members.get(rel)
        if info is not None:
            return "file", info.file_size
        prefix = rel.rstrip("/") + "/"
        if any(m.startswith(prefix) for m in self.members):
            return "dir", 0
        return None

    def read(self, rel: str, limit: int) -> bytes:
        with self.zf.open(self.members[rel]) as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise Rejected(f"too large: {rel} is over {limit / MiB:g} MB")
        return data

    def listdir(self, rel: str) -> list[tuple[str, str, int]]:
        prefix = rel.rstrip("/") + "/"
        out = []
        for name, info in self.members.items():
            if name.startswith(prefix) and "/" not in name[len(prefix):]:
                out.append((name[len(prefix):], "file", info.file_size))
        return sorted(out)

    def files_under(self, rel: str) -> list[str]:
        prefix = rel.rstrip("/") + "/"
        return sorted(name for name in self.members if name.startswith(prefix))

    def copy(self, rel: str, storage, dst: str, limit: int) -> None:
        written = 0
        with self.zf.open(self.members[rel]) as src, storage.open_write(dst) as out:
            while True:
                chunk = src.read(1 * MiB)
                if not chunk:
                    break
                written += len(chunk)
                if written > limit:  # the size in the zip's header lied: a zip bomb
                    raise Rejected(f"too large: {rel} unpacks to more than {limit / MiB:g} MB")
                out.write(chunk)


class _Folder:
    """An unpacked submission folder. Links are refused: they could point anywhere."""

    def __init__(self, storage, root: str, limits: Limits):
        self.storage, self.root, self.limits = storage, root, limits

    def _path(self, rel: str) -> str:
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        path = self.root
        for i, part in enumerate(parts):
            path = join(path, part)
            k = self.storage.kind(path)
            if k is not None and k[0] == "link":
                raise Rejected(f"unsafe folder: {'/'.join(parts[:i + 1])} is a link")
        return path

    def kind(self, rel: str) -> tuple[str, int] | None:
        return self.storage.kind(self._path(rel))

    def read(self, rel: str, limit: int) -> bytes:
        k = self.kind(rel)
        if k and k[1] > limit:
            raise Rejected(f"too large: {rel} is {k[1] / MiB:.1f} MB (limit {limit / MiB:g} MB)")
        return self.storage.read(self._path(rel))

    def listdir(self, rel: str) -> list[tuple[str, str, int]]:
        entries = self.storage.listdir(self._path(rel))
        for name, kind, _ in entries:
            if is_secret(name):
                raise Rejected(_SECRET.format(name=f"{rel}/{name}"))
            if kind == "link" and EVENTS_FILE.match(name):
                raise Rejected(f"unsafe folder: {rel}/{name} is a link")
        return entries

    def copy(self, rel: str, storage, dst: str, limit: int) -> None:
        self.storage.stage(self._path(rel), dst)

    def files_under(self, rel: str, depth: int = 3) -> list[str]:
        if depth == 0 or self.kind(rel) is None or self.kind(rel)[0] != "dir":
            return []
        out = []
        for name, kind, _ in self.listdir(rel):
            if kind == "file":
                out.append(f"{rel}/{name}")
            elif kind == "dir":
                out.extend(self.files_under(f"{rel}/{name}", depth - 1))
            elif kind == "link":
                raise Rejected(f"unsafe folder: {rel}/{name} is a link")
        return sorted(out)


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
        raise Rejected("missing manifest")
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


def _never_started(box, rel: str, node: str, limits: Limits) -> bool:
    """Whether the run's cluster events say the node's process ended on its own (`node_exited`): a node that
    never started has nothing to trace."""
    name = f"{rel}/events-cluster.jsonl"
    if box.kind(name) is None:
        return False
    for line in box.read(name, limits.max_file_bytes).splitlines():
        if b'"node_exited"' not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "node_exited" and event.get("target") == node:
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
        runs.append((RunInfo(run=name, exercise=exercise, scenario=scenario if isinstance(scenario, str) else None,
                             dir=rel, nodes=list(meta["nodes"]),
                             liveness_bound=None if bound is None else float(bound)), files))
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
    skipped: list[str]  # entries of SUBMISSIONS that are not submissions
    events_dir: str
    events_bytes: int = 0  # the size of the staged events files, to size Spark's partitions

    @property
    def runs(self) -> Iterable[tuple[Submission, RunInfo]]:
        for s in self.submissions:
            for r in s.runs:
                yield s, r


def catalog(storage, submissions_dir: str, staging: str, limits: Limits = Limits(), *,
            exclude: Iterable[str] = (), progress: Callable[[str], None] = lambda _: None,
            skip: Iterable[str] = ()) -> Catalog:
    """Inspect every zip or folder in submissions_dir and stage the events files of the sound ones at
    staging/events/f<id>.jsonl, the only place Spark reads events from. Entries named in `skip` (unchanged since
    a previous grade whose results are reused) are not read."""
    events_dir = join(staging, "events")
    storage.makedirs(events_dir)
    skipped_names = set(skip)
    entries = [e for e in storage.listdir(submissions_dir)
               if not e[0].startswith((".", "_")) and e[0] not in skipped_names]
    excluded = list(exclude)
    subs: list[Submission] = []
    files: list[tuple[int, str, str, str, str]] = []
    events_bytes = 0
    skipped: list[str] = []
    candidates = []
    for name, kind, size in entries:
        path = join(submissions_dir, name)
        if kind == "dir" and any(storage.same(path, x) for x in excluded):
            continue
        if (kind == "file" and name.lower().endswith(".zip")) or kind == "dir":
            candidates.append((name, kind, size, path))
        elif kind == "link":
            sub = Submission(source=name, student=_fallback_id(name), status=f"unsafe folder: {name} is a link")
            subs.append(sub)
        else:
            skipped.append(name)
    total = len(candidates) + len(subs)
    step = max(1, total // 10)
    for n, (name, kind, size, path) in enumerate(candidates, 1):
        sub = Submission(source=name, student=_fallback_id(name))
        subs.append(sub)
        written: list[str] = []
        try:
            if kind == "file":
                if size > limits.max_submission_bytes:
                    raise Rejected(f"too large: the archive is {size / MiB:.1f} MB "
                                   f"(limit {limits.max_submission_bytes / MiB:g} MB)")
                try:
                    zf = storage.open_zip(path, limits.max_submission_bytes)
                except zipfile.BadZipFile:
                    raise Rejected("malformed: not a zip archive")
                box = _Zip(zf, limits)
            else:
                box = _Folder(storage, path, limits)
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
        except Rejected as exc:
            sub.status = str(exc)
            sub.runs, sub.left_out = [], []
            for dst in written:
                storage.remove(dst)
        except (OSError, zipfile.BadZipFile, EOFError, RuntimeError, NotImplementedError) as exc:
            sub.status = f"malformed: cannot read the submission ({type(exc).__name__}: {str(exc)[:100]})"
            sub.runs, sub.left_out = [], []
            for dst in written:
                storage.remove(dst)
        if n % step == 0 or n == len(candidates):
            progress(f"read {n}/{len(candidates)} submissions")
    _resolve_duplicates(subs, files)
    return Catalog(subs, files, skipped, events_dir, events_bytes)


def _resolve_duplicates(subs: list[Submission], files: list) -> None:
    """One row per student: of two submissions by the same student the newer (manifest `created`) counts."""
    by_student: dict[str, list[Submission]] = {}
    for s in subs:
        by_student.setdefault(s.student, []).append(s)
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


# ---- events, through Spark ----------------------------------------------------------------------------------

def small_table(spark, storage, path: str, rows, schema):
    """A small table the driver built, as a DataFrame, through a JSON-lines file at `path` that Spark reads itself.

    `spark.createDataFrame(rows)` would hand the rows over through Python worker processes; this way the
    executors run no Python at all (see docs/grading.md).
    """
    names = schema.names
    storage.write(path, "".join(json.dumps(dict(zip(names, row))) + "\n" for row in rows).encode("utf-8"))
    return spark.read.schema(schema).json(storage.for_spark(path))


def read_events(spark, cat: Catalog, storage, partitions: int):
    """The staged events files as one DataFrame, parsed against the explicit schema and hash-partitioned by
    (submission, run): the events the checks read (schema.CHECKED_TYPES), each with its run's context
    (schema.EVENTS), and every line that has something to say, with `file_id` and `line` to find it and
    `problem` (what is wrong with it, said after "<path> line <N>") or `edited` (its seq is not its line number).
    A problem on the last line of a file that ends without a newline is `torn` (a node killed mid-write).

    Lines are numbered from the file, which Spark reads whole (`wholetext`), so numbering never depends on how
    files are split. Every check keeps within a run, so this is the one shuffle of the job. Most of the cost is
    Spark's JSON parser, once per line; around it the rows stay narrow until the events the checks never read
    are dropped, and the expensive tests run only on the lines kept. (The expressions are SQL text: built call by
    call from Python they would cost thousands of round trips to the JVM.)
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from lab.grade.checks import among, q
    from lab.grade.schema import CHECKED_TYPES, COMMON_FIELDS, CONTEXT_FIELDS, CORRUPT, EVENT_LINE, EXTRA_FIELDS, \
        REQUIRED

    runs = {(s.student, r.run): r for s, r in cat.runs}
    file_rows = []
    for file_id, student, run, node, _ in cat.files:
        info = runs[(student, run)]
        file_rows.append((file_id, student, run, node, info.scenario, len(info.nodes), info.liveness_bound))
    files = small_table(spark, storage, cat.events_dir + "-files.jsonl", file_rows, T.StructType([
        T.StructField("file_id", T.IntegerType(), False), T.StructField("submission", T.StringType(), False),
        T.StructField("run", T.StringType(), False), T.StructField("file_node", T.StringType(), False),
        T.StructField("scenario", T.StringType()), T.StructField("cluster_size", T.IntegerType()),
        T.StructField("liveness_bound", T.DoubleType())]))
    context = [f.name for f in CONTEXT_FIELDS]
    fields = [f.name for f in (*COMMON_FIELDS, *EXTRA_FIELDS)]

    # One row per file meets its context (one small broadcast); then the file is split into numbered lines, in
    # two steps so that no line carries its whole file along.
    lines = (spark.read.text(storage.for_spark(cat.events_dir), wholetext=True)
             .selectExpr(f"CAST(regexp_extract(_metadata.file_name, {q(r'^f([0-9]+)[.]jsonl$')}, 1) AS INT) "
                         f"AS file_id", "value")
             .join(F.broadcast(files), "file_id")
             .selectExpr("file_id", "file_node", *context, "split(value, '\\n') AS lines",
                         "length(value) = 0 OR endswith(value, '\\n') AS ends_nl")
             # (the _outer form, or Spark adds a filter that splits every file a second time)
             .selectExpr("file_id", "file_node", *context, "ends_nl", "size(lines) AS n_lines",
                         "posexplode_outer(lines) AS (pos, text)")
             .selectExpr("*", "pos + 1 AS line")
             .where("startswith(text, '{') OR trim(text) != ''"))
    # The parsed line comes out of a generator (of one row): Spark would otherwise push the filter below
    # (keep the lines the checks need) down to the raw text, parsing the JSON once per field the filter reads.
    parse = (f"from_json(text, {q(EVENT_LINE.simpleString())}, map('mode', 'PERMISSIVE', "
             f"'columnNameOfCorruptRecord', {q(CORRUPT)}))")
    parsed = lines.selectExpr("file_id", "file_node", *context, "line", "text",
                              "line = n_lines AND NOT ends_nl AS torn", f"explode(array({parse})) AS j")

    # Pass 1, on every line: a few cheap tests. Lines of the types the checks read, and lines that fail a test,
    # go on (with the text of the failing ones, to be explained); the rest are done with.
    suspect = " OR ".join(["j IS NULL", f"j.{CORRUPT} IS NOT NULL", *[f"j.{f.name} IS NULL" for f in COMMON_FIELDS],
                           "j.v != 1", "j.node != file_node", "j.seq != line"])
    kept = (parsed.where(f"j.type IN {among(CHECKED_TYPES)} OR {suspect}")
            .selectExpr("file_id", "file_node", *context, "line", "torn", f"CASE WHEN {suspect} THEN text END AS text",
                        "j IS NULL AS unparsed", *[f"j.{n} AS {n}" for n in fields], f"j.{CORRUPT} AS {CORRUPT}")
            .repartition(partitions, "submission", "run"))

    # Pass 2, on the lines kept: what is wrong with a line. The expensive tests (re-reading the text, walking
    # entries) run only where the cheap ones found something or the line is kept.
    def first_of(cases: list[str]) -> str:
        return "coalesce(" + ", ".join(cases) + ")"

    wrong_type = first_of([f"CASE WHEN get_json_object(text, '$.{n}') IS NOT NULL AND {n} IS NULL THEN '{n}' END"
                           for n in fields] + ["'?'"])
    missing = first_of([f"CASE WHEN {f.name} IS NULL THEN '{f.name}' END" for f in COMMON_FIELDS])
    per_type = first_of([f"CASE WHEN type = '{t}' AND {name} IS NULL THEN '{t} without {name}' END"
                         for t, names in REQUIRED.items() for name in names])
    bad_entry = ("(size({e}) != 3 OR try_cast(try_element_at({e}, 1) AS INT) IS NULL "
                 "OR try_cast(try_element_at({e}, 2) AS INT) IS NULL)")
    shapes = first_of([f"CASE WHEN exists({name}, e -> {bad_entry.format(e='e')}) THEN "
                       f"'an entry in {name} is not [index, generation, digest]' END"
                       for name in ("committed", "removed", "entries")]
                      + [f"CASE WHEN entry IS NOT NULL AND {bad_entry.format(e='entry')} THEN "
                         f"'entry is not [index, generation, digest]' END"])
    problem = (f"CASE WHEN unparsed OR ({CORRUPT} IS NOT NULL AND json_object_keys(text) IS NULL) THEN ' is not JSON' "
               f"WHEN {CORRUPT} IS NOT NULL THEN concat(': field ', {wrong_type}, ' has the wrong type') "
               f"WHEN {missing} IS NOT NULL THEN concat(': field ', {missing}, ' is missing') "
               f"WHEN v != 1 THEN concat(': trace format version ', CAST(v AS STRING), ' is not supported') "
               f"WHEN node != file_node THEN concat(': node is ', node, ', not ', file_node) "
               f"WHEN {per_type} IS NOT NULL THEN concat(': ', {per_type}) "
               f"WHEN {shapes} IS NOT NULL THEN concat(': ', {shapes}) END")
    # Every line N that is not torn must be the file's N-th event: seq N (a gap, a repeat or a swap is an edit).
    edited = ("CASE WHEN seq != line THEN concat(' has seq ', CAST(seq AS STRING), CASE WHEN line = 1 THEN "
              "', expected 1' WHEN seq < line THEN ', a repeat or out of sequence' ELSE concat(' after seq ', "
              "CAST(line - 1 AS STRING), ' (events out of sequence)') END) END")
    return kept.selectExpr("file_id", "line", "torn", f"{problem} AS problem", f"{edited} AS edited", *context,
                           *fields)
