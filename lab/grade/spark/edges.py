"""The grading job's edges: Spark bound to loopback in local mode, its own log kept in a file under --out
instead of among the progress lines, and a grade that does not finish (Ctrl-C, a failure) ending in one line with
--out as it was and no sandbox folder left."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile

from lab.grade.inputs.storage import LocalStorage, is_uri

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


def python_logs_to(path: str | None) -> logging.Handler | None:
    """py4j logs the exceptions of a broken connection (Ctrl-C during a call into the JVM) on Python's root logger,
    which prints them to stderr unless it has a handler of its own: while the job runs, they go to the Spark log."""
    if not path:
        return None
    handler = logging.FileHandler(path, encoding="utf-8")
    logging.getLogger().addHandler(handler)
    return handler


def quiet_py4j() -> None:
    """py4j logs a broken connection (after Ctrl-C) as tracebacks; the job says what happened in one line."""
    logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)


def finish(spark, storage, args, failure: BaseException | None = None) -> None:
    """After the job, whichever way it ended (`failure`: KeyboardInterrupt for Ctrl-C, or why it failed): Spark
    stopped (`spark`: when the job started it), and for a grade that did not put its outputs in place: DIR left as it
    was (lab/grade/outputs/outdir.py), this grade's sandbox folders removed, and one line that says so."""
    from lab.grade.outputs.outdir import held_off

    if failure is not None:
        quiet_py4j()
    with held_off() if failure is not None else contextlib.nullcontext():  # a second Ctrl-C meanwhile is ignored
        new = getattr(args, "new", None)
        left = None
        if storage is not None and not isinstance(storage, LocalStorage) and new:  # through the JVM: before it stops
            left = _abandon(storage, args)
        if spark is not None:
            stop_quietly(spark)
        if new and left is None:
            left = _abandon(storage if isinstance(storage, LocalStorage) else LocalStorage(), args)
        sweep(getattr(args, "grade", ""))
        handler = getattr(args, "python_log", None)
        if handler is not None:
            logging.getLogger().removeHandler(handler)
            handler.close()
    if failure is not None:
        said = str(failure).strip().splitlines()[0][:200] if str(failure).strip() else ""
        why = ("interrupted" if isinstance(failure, KeyboardInterrupt)
               else f"failed ({type(failure).__name__}{': ' + said if said else ''})")
        log = f" (this grade's log: {left})" if left else ""
        print(f"grade: {why}; {args.out} is as it was before{log}", file=sys.stderr, flush=True)


def interruption(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C behind a failure, if there is one: py4j, interrupted inside a call to the JVM, tries to cancel the
    call, and when it cannot it raises its own error while handling the KeyboardInterrupt."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def keep_traceback(exc: BaseException, args) -> BaseException:
    """A failed job's traceback, written into this grade's Spark log (kept beside DIR by `finish`)."""
    import traceback

    new = getattr(args, "new", None)
    if new and not is_uri(new) and not isinstance(exc, KeyboardInterrupt):
        with contextlib.suppress(OSError), open(os.path.join(new, LOG_FILE), "a", encoding="utf-8") as log:
            log.write("".join(traceback.format_exception(exc)))
    return exc


def _abandon(storage, args) -> str:
    """The new outputs removed if the grade did not put them in place; the Spark log kept ("" if none)."""
    from lab.grade.outputs import outdir

    try:
        if storage.kind(args.new) is None:
            return ""
        return outdir.abandon(storage, args.out, LOG_FILE) or ""
    except Exception:  # the JVM is gone: a local folder is removed all the same
        shutil.rmtree(args.new, ignore_errors=True)
        return ""


def sweep(grade: str, stale: bool = False) -> None:
    """Remove this grade's sandbox folders (in local mode the executors' TMPDIR is this machine's; an executor killed
    with its task leaves its folder), and with `stale` those of grades whose driver is gone."""
    from lab.grade.sandbox.bubblewrap import FOLDER_PREFIX

    root = tempfile.gettempdir()
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        if not name.startswith(FOLDER_PREFIX):
            continue
        pid = name[len(FOLDER_PREFIX):].split("-")[0]
        mine = grade and name.startswith(f"{FOLDER_PREFIX}{grade}-")
        if mine or (stale and pid.isdigit() and not _alive(int(pid))):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    from lab.grade.sandbox import cgroups

    for folder in cgroups.groups_named(cgroups.PREFIX):  # the sandboxes' control groups, empty once they ended
        pid = os.path.basename(folder)[len(cgroups.PREFIX):].split("-")[0]
        mine = grade and os.path.basename(folder).startswith(f"{cgroups.PREFIX}{grade}-")
        if mine or (stale and pid.isdigit() and not _alive(int(pid))):
            with contextlib.suppress(OSError):
                os.rmdir(folder)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_quietly(spark) -> None:
    """Stop a session; after Ctrl-C its JVM connection may be broken, which is not worth a traceback."""
    quiet_py4j()
    try:
        spark.stop()
    except Exception:
        pass
