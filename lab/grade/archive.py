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
