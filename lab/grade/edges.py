"""The grading job's edges: Spark bound to loopback in local mode, its own log kept in a file under --out
instead of among the progress lines, and Ctrl-C ending the job in one line with the staging folder removed."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sys

LOG_FILE = "spark.log"  # under --out: the JVM's own output (Spark's log, Java's warnings)
LOOPBACK = "127.0.0.1"
INTERRUPTED = 130  # the shell's code for a process ended by SIGINT


def is_local(master: str | None) -> bool:
    return (master or "local").startswith("local")


def loopback_conf(master: str | None) -> dict[str, str]:
    """Local mode binds the driver to loopback, unless SPARK_LOCAL_IP says otherwise."""
    if not is_local(master) or os.environ.get("SPARK_LOCAL_IP"):
        return {}
    return {"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK}


@contextlib.contextmanager
def jvm_output_to(path: str | None, local: bool):
    """While the JVM starts, its standard output and error (inherited file descriptors) go to `path`, so that
    Spark's log never mixes with the progress lines; in local mode, SPARK_LOCAL_IP is loopback unless set, so that
    Spark neither picks nor names the machine's outward address. The Python side's own streams come back after."""
    env_before = os.environ.get("SPARK_LOCAL_IP")
    if local and env_before is None:
        os.environ["SPARK_LOCAL_IP"] = LOOPBACK
    saved = []
    try:
        if path:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            sys.stdout.flush()
            sys.stderr.flush()
            log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            for fd in (1, 2):
                saved.append((fd, os.dup(fd)))
                os.dup2(log, fd)
            os.close(log)
        yield
    finally:
        for fd, copy in saved:
            os.dup2(copy, fd)
            os.close(copy)
        if local and env_before is None:
            os.environ.pop("SPARK_LOCAL_IP", None)


def quiet_py4j() -> None:
    """py4j logs a broken connection (after Ctrl-C) as tracebacks; the job says what happened in one line."""
    logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)


def interrupted(staging: str, storage=None) -> int:
    """Ctrl-C: remove the staging folder, say so in one line, exit 130. A second Ctrl-C meanwhile is ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    quiet_py4j()
    try:
        if storage is not None:
            storage.remove(staging)
        else:
            shutil.rmtree(staging, ignore_errors=True)
    except Exception:  # the JVM may be gone already: the local folder is removed below
        shutil.rmtree(staging, ignore_errors=True)
    print(f"grade: interrupted; nothing was graded and {staging} was removed", file=sys.stderr, flush=True)
    return INTERRUPTED


def interrupted_aside(path: str, storage=None) -> None:
    """The previous grade's results moved aside for a re-grade: without its state they are of no use."""
    try:
        if storage is not None:
            storage.remove(path)
        else:
            shutil.rmtree(path, ignore_errors=True)
    except Exception:
        shutil.rmtree(path, ignore_errors=True)


def stop_quietly(spark) -> None:
    """Stop a session; after Ctrl-C its JVM connection may be broken, which is not worth a traceback."""
    quiet_py4j()
    try:
        spark.stop()
    except Exception:
        pass
