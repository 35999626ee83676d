"""Where submissions and the grader's outputs are: plain paths, or any URI Spark's Hadoop file systems read."""

from __future__ import annotations

import io
import os
import re
import shutil
import stat
import zipfile

MiB = 1024 * 1024


class Rejected(Exception):
    """A submission that cannot be graded; str(self) is its grading_status."""


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
        """Put a copy of src at dst: a hard link when possible (same file system), else a copy. An unreadable src
        fails here, not later in Spark's read of every file."""
        with open(src, "rb"):
            pass
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
