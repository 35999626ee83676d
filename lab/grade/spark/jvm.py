"""The grader's JVM class archive: the classes a grade loads, kept mapped-ready (Java's class data sharing) so that
each grade's JVM starts and warms faster; made once by `python -m lab.grade.spark.warm_jvm` (.ci/setup runs it).

A JVM that finds the archive stale (another Java, another Spark) or unreadable ignores it and loads its classes as
usual, so a grade never depends on it. It lives in the virtual environment, keyed by Java and Spark, and is written
aside and put in place, so an interrupted preparation leaves none or the previous one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

ARCHIVE_DIR = Path(sys.prefix) / "share" / "hwm-lab"
OFF = "HWM_LAB_NO_CLASS_ARCHIVE"  # set (to anything): grades start their JVM without the archive (to compare)
QUIET = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"  # a stale archive is ignored without a word


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(java) if java and os.path.exists(java) else None


def archive_path(folder: Path | None = None) -> Path | None:
    """Where the archive for this Java and this Spark is (or would be); None without Java or PySpark."""
    try:
        import pyspark
    except ImportError:
        return None
    java = _java()
    if java is None:
        return None
    jars = os.path.realpath(os.path.join(os.path.dirname(pyspark.__file__), "jars"))
    key = "\n".join([pyspark.__version__, jars, java, str(os.stat(java).st_mtime_ns)])
    return (folder or ARCHIVE_DIR) / f"spark-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def ready(folder: Path | None = None) -> Path | None:
    """The archive, when it has been made for this Java and this Spark (and $HWM_LAB_NO_CLASS_ARCHIVE is not set)."""
    if os.environ.get(OFF):
        return None
    path = archive_path(folder)
    return path if path is not None and path.is_file() and path.stat().st_size > 0 else None


def java_options(*, archive: Path | None = None, dump_to: Path | None = None) -> list[str]:
    """The JVM options that use `archive`, or that write the archive of the classes loaded to `dump_to` at exit."""
    if dump_to is not None:
        return [f"-XX:ArchiveClassesAtExit={dump_to}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    if archive is not None:
        return [f"-XX:SharedArchiveFile={archive}", *QUIET.split()]
    return []
