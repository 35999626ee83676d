"""One submission opened safely within limits: a zip checked whole before any read, or a folder without links."""

from __future__ import annotations

import re
import stat
import zipfile
import zlib
from dataclasses import dataclass

from lab.grade.storage import MiB, Rejected, join
from lab.student.ids import is_secret

EVENTS_FILE = re.compile(r"^events-([A-Za-z0-9_-]{1,32})\.jsonl$")
# What reading a submission may raise besides Rejected: a file that cannot be read, a zip that is not one or whose
# members do not unpack (a bad CRC, a broken deflate stream, a method zipfile does not know, a truncated file).
UNREADABLE = (OSError, zipfile.BadZipFile, EOFError, RuntimeError, NotImplementedError, zlib.error, ValueError)
_SECRET = ("unsafe: {name} is a running cluster's secret, which never belongs in a hand-in; make the submission "
           "again with `hwm-lab submit`, which leaves it out")


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 128 * MiB  # one events file
    max_submission_bytes: int = 1024 * MiB  # everything in one submission, uncompressed
    max_members: int = 10_000  # entries in one zip
    max_meta_bytes: int = 1 * MiB  # manifest.json, trace.json


class Zip:
    """A submission zip, checked as a whole before anything is read from it; with `folder`, the submission in that
    folder of a class's archive (its members only, checked alone)."""

    def __init__(self, zf: zipfile.ZipFile, limits: Limits, folder: str = ""):
        self.zf = zf
        self.members: dict[str, zipfile.ZipInfo] = {}
        prefix = folder.strip("/") + "/" if folder.strip("/") else ""
        infos = [i for i in zf.infolist() if i.filename.startswith(prefix)]
        if len(infos) > limits.max_members:
            raise Rejected(f"too large: the archive holds {len(infos)} entries (limit {limits.max_members})")
        total = 0
        for info in infos:
            name = info.filename[len(prefix):]
            if unsafe_name(name):
                raise Rejected(f"unsafe archive: entry {name!r} points outside the archive")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise Rejected(f"unsafe archive: entry {name!r} is a link")
            if is_secret(name):
                raise Rejected(_SECRET.format(name=name))
            if info.is_dir() or not name:
                continue
            if info.file_size > limits.max_file_bytes:
                raise Rejected(f"too large: {name} is {info.file_size / MiB:.1f} MB uncompressed "
                               f"(limit {limits.max_file_bytes / MiB:g} MB per file)")
            total += info.file_size
            if total > limits.max_submission_bytes:
                raise Rejected(f"too large: the archive unpacks to more than {limits.max_submission_bytes / MiB:g} MB")
            self.members[name[2:] if name.startswith("./") else name] = info

    def empty(self) -> bool:
        return not self.members

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


class Folder:
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

    def empty(self) -> bool:
        return not self.storage.listdir(self.root)

    def kind(self, rel: str) -> tuple[str, int] | None:
        return self.storage.kind(self._path(rel))

    def read(self, rel: str, limit: int) -> bytes:
        k = self.kind(rel)
        if k is None or k[0] != "file":  # a pipe would never end, a device could be anything
            raise Rejected(f"malformed: {rel} is not a regular file")
        if k[1] > limit:
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


# ---- a class in one archive or folder: an LMS's bulk download ------------------------------------------------

CLASS_DEPTH = 3  # folders deep that a class's archive or folder is searched for submissions
# What an LMS's bulk download holds besides the submissions (Gradescope's export lists them in a metadata file),
# and what an archiver adds (macOS's resource forks): no entry of the class.
NOT_ENTRIES = re.compile(r"(^|/)(__MACOSX|\.[^/.][^/]*)(/|$)|(^|/)submission_metadata\.(yml|yaml|json)$", re.I)


def _is_zip(name: str) -> bool:
    return name.lower().endswith(".zip")


def class_entries(names: list[str]) -> list[tuple[str, str]] | None:
    """The submissions of a class's archive or folder, from the paths it holds (files, `/` between folders):
    [(path, "zip" | "folder" | "other")], each zip and each folder that holds a manifest.json a submission, any
    other file an entry that is none; or None when the paths are one submission's (a manifest.json at the top, or
    no zip and no submission folder anywhere). The layouts of Canvas's, Moodle's and Gradescope's bulk downloads:
    a zip per student at the top (Canvas, Moodle), in a folder per student (Moodle), or a folder per submission,
    unpacked, in one folder with the export's metadata (Gradescope)."""
    names = [n for n in names if n and not NOT_ENTRIES.search(n) and n.count("/") < CLASS_DEPTH]
    if "manifest.json" in names:
        return None
    folders = sorted({n[: -len("/manifest.json")] for n in names
                      if n.endswith("/manifest.json") and not unsafe_name(n)}, key=lambda f: (f.count("/"), f))
    chosen: list[str] = []
    for folder in folders:  # the outermost folder that holds a manifest.json is the submission
        if not any(folder.startswith(c + "/") for c in chosen):
            chosen.append(folder)
    inside = tuple(c + "/" for c in chosen)
    zips = [n for n in names if _is_zip(n) and not n.startswith(inside) and not unsafe_name(n)]
    if not chosen and not zips:
        return None
    others = [n for n in names if (not _is_zip(n) or unsafe_name(n)) and not n.startswith(inside)]
    return sorted([*((z, "zip") for z in zips), *((f, "folder") for f in chosen), *((o, "other") for o in others)])


def inner_zip(outer: Zip, member: str, limits: Limits) -> zipfile.ZipFile:
    """A zip held in a class's zip, copied out (within the submission limit: its header may lie) to a temporary
    file that goes when it is closed."""
    import tempfile

    copy = tempfile.TemporaryFile()
    try:
        written = 0
        with outer.zf.open(outer.members[member]) as src:
            while True:
                chunk = src.read(MiB)
                if not chunk:
                    break
                written += len(chunk)
                if written > limits.max_submission_bytes:
                    raise Rejected(f"too large: the archive is over {limits.max_submission_bytes / MiB:g} MB")
                copy.write(chunk)
        copy.seek(0)
        return zipfile.ZipFile(copy)
    except BaseException:
        copy.close()
        raise


def class_zip(zf: zipfile.ZipFile) -> Zip:
    """A class's zip as a plain view of its members: nothing is judged here, each submission in it is, alone, when
    its own view is made (the class as a whole may be larger than a submission may, and one student's bad entry
    is that student's)."""
    view = Zip.__new__(Zip)
    view.zf = zf
    view.members = {i.filename: i for i in zf.infolist() if not i.is_dir()}
    return view


def unsafe_name(name: str) -> bool:
    """A member's path that leaves its archive: `..`, absolute, or a drive letter."""
    return name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) is not None or ".." in re.split(r"[/\\]", name)


def open_box(storage, submissions_dir: str, source: str, limits: Limits):
    """A submission of SUBMISSIONS, by its name there: a zip or a folder, or one inside a class's zip (the zip's name,
    then the member's path: `submissions.zip/ana_1234_s1.zip`, `export.zip/submission_42`)."""
    parts = source.split("/")
    path = submissions_dir
    for i, part in enumerate(parts):
        path = join(path, part)
        if _is_zip(part) and i < len(parts) - 1:
            kind = storage.kind(path)
            if kind is not None and kind[0] == "file":
                outer = class_zip(storage.open_zip(path, 2 ** 62))
                member = "/".join(parts[i + 1:])
                if _is_zip(member):
                    return Zip(inner_zip(outer, member, limits), limits)
                return Zip(outer.zf, limits, folder=member)
    if _is_zip(source):
        return Zip(storage.open_zip(path, limits.max_submission_bytes), limits)
    return Folder(storage, path, limits)
