"""`hwm-lab spark-cluster up|down`: a Spark standalone master and one worker on loopback, started from pyspark's
own bin/spark-class, to practise grading on a cluster (`hwm-lab grade ... --master spark://127.0.0.1:PORT`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

STATE = "cluster.json"  # in --dir: the processes' ids, their class names and the master's URL
HOST = "127.0.0.1"
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"
WAIT_S = 90


def register(subparsers) -> None:
    parser = subparsers.add_parser("spark-cluster", help="start or stop a local Spark standalone cluster",
                                   description="A Spark standalone master and one worker on loopback, for "
                                               "practice with `hwm-lab grade --master` (docs/grading.md).")
    parser.add_argument("action", choices=("up", "down"))
    parser.add_argument("--dir", default=".hwm-lab/spark-cluster", metavar="DIR",
                        help="where its logs and state go (default .hwm-lab/spark-cluster)")
    parser.add_argument("--port", type=int, default=0, metavar="PORT", help="the master's port (default: a free one)")
    parser.add_argument("--cores", type=int, default=1, help="the worker's cores (default 1)")
    parser.add_argument("--memory", default="1g", help="the worker's memory (default 1g)")
    parser.set_defaults(func=main)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1):
            return True
    except OSError:
        return False


def _wait(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise TimeoutError(f"{what} did not happen within {WAIT_S} s")


def _alive(pid: int, name: str) -> bool:
    """Whether `pid` is still the process we started (a pid may be reused by another program)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return name.encode() in f.read()
    except OSError:
        return False


def environment(folder: str, extra: dict | None = None) -> dict:
    """The environment the master and workers run in (and a job run against them may use): Spark on loopback,
    pyspark's own Spark, this Python for the executors; `extra` adds to it or overrides."""
    import pyspark

    return {**os.environ, "SPARK_HOME": os.path.dirname(pyspark.__file__), "SPARK_LOCAL_IP": HOST,
            "SPARK_LOCAL_DIRS": os.path.abspath(folder),
            "SPARK_WORKER_DIR": os.path.abspath(os.path.join(folder, "work")),
            "PYSPARK_PYTHON": sys.executable, **(extra or {})}


def up(folder: str, port: int = 0, cores: int = 1, memory: str = "1g", workers: int = 1,
       env: dict | None = None) -> dict:
    """Start a master and `workers` workers from `folder` (its state, logs and work folders); `env`: extra
    environment for them. Returns the state (the master's URL and the processes)."""
    state_path = os.path.join(folder, STATE)
    if os.path.exists(state_path) and any(_alive(p["pid"], p["class"]) for p in _read(state_path)["processes"]):
        raise RuntimeError(f"a cluster from {folder} is running already: `hwm-lab spark-cluster down` first")
    os.makedirs(os.path.join(folder, "work"), exist_ok=True)
    env = environment(folder, env)
    home = env["SPARK_HOME"]
    port = port or free_port()
    spark_class = os.path.join(home, "bin", "spark-class")
    state = {"master": f"spark://{HOST}:{port}", "processes": []}

    def start(cls: str, *argv: str, log: str) -> None:
        with open(os.path.join(folder, log), "ab") as out:
            proc = subprocess.Popen([spark_class, cls, *argv], env=env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        state["processes"].append({"pid": proc.pid, "class": cls, "log": log})
        _write(state_path, state)

    try:
        start(MASTER, "--host", HOST, "--port", str(port), "--webui-port", str(free_port()), log="master.log")
        _wait(lambda: _listening(port), "the master listening")
        logs = ["worker.log"] if workers == 1 else [f"worker{n}.log" for n in range(workers)]
        for n, log in enumerate(logs):
            own = [] if workers == 1 else ["--work-dir", os.path.abspath(os.path.join(folder, "work", str(n)))]
            start(WORKER, state["master"], "--host", HOST, "--cores", str(cores), "--memory", memory,
                  "--webui-port", str(free_port()), *own, log=log)
        for log in logs:
            _wait(lambda: b"Successfully registered with master" in _bytes(os.path.join(folder, log)),
                  f"the worker of {log} registering with the master")
    except BaseException:
        down(folder)
        raise
    return state


def down(folder: str) -> int:
    """Stop what `up` started from this folder; returns how many processes were stopped."""
    state_path = os.path.join(folder, STATE)
    if not os.path.exists(state_path):
        return 0
    procs = [p for p in reversed(_read(state_path)["processes"]) if _alive(p["pid"], p["class"])]
    for p in procs:
        os.kill(p["pid"], signal.SIGTERM)
    deadline = time.monotonic() + 20
    for p in procs:
        while _alive(p["pid"], p["class"]) and time.monotonic() < deadline:
            _reap(p["pid"])
            time.sleep(0.2)
        if _alive(p["pid"], p["class"]):
            os.kill(p["pid"], signal.SIGKILL)
        _reap(p["pid"])
    os.remove(state_path)
    return len(procs)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)  # our own child (the same process ran up and down): not left a zombie
    except ChildProcessError:
        pass


def _bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _read(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def _write(path: str, state: dict) -> None:
    with open(path, "w") as f:
        json.dump(state, f, indent=2)


def main(args) -> int:
    if args.action == "down":
        n = down(args.dir)
        print(f"stopped {n} Spark process{'es' if n != 1 else ''}" if n else f"no cluster running from {args.dir}")
        return 0
    try:
        state = up(args.dir, args.port, args.cores, args.memory)
    except (RuntimeError, TimeoutError) as exc:
        print(f"spark-cluster: {exc} (logs in {args.dir})", file=sys.stderr)
        return 1
    print(f"Spark master {state['master']} and one worker on loopback (logs in {args.dir}).\n"
          f"Grade with: hwm-lab grade SUBMISSIONS --out DIR --course-secret FILE --master {state['master']}\n"
          f"Stop with:  hwm-lab spark-cluster down" + ("" if args.dir == ".hwm-lab/spark-cluster"
                                                     else f" --dir {args.dir}"))
    return 0
