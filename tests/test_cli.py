"""`hwm-lab` end to end: a cluster brought up, driven and brought down by the CLI, with --json and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from procutil import kill_pids, track, wait_until

from lab.cli import main
from lab.processes.client import pid_alive
from lab.commands.cluster import FAILED, NO_CLUSTER, OK, START_FAILED, USAGE
from lab.ports.trace import read_trace
from tests.test_i18n_commands import english

REPO = Path(__file__).resolve().parent.parent


def hwm(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "lab.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def as_json(result: subprocess.CompletedProcess) -> dict:
    assert result.stdout.strip(), f"no output; stderr: {result.stderr}"
    return json.loads(result.stdout)


@pytest.mark.processes
def test_a_cluster_driven_end_to_end_from_the_cli(tmp_path):
    # no cluster yet: a clear message and the no-cluster exit code
    result = hwm(tmp_path, "status", "--json")
    assert result.returncode == NO_CLUSTER and "no cluster is running" in as_json(result)["error"]

    up = hwm(tmp_path, "up", "--json", "--nodes", "3", "--fsync", "batch", "--host", "127.0.0.1")
    info = as_json(up) if up.stdout.strip() else {}
    pids = [info.get("pid")] + [n["pid"] for n in info.get("nodes", [])]
    track(*pids)
    try:
        assert up.returncode == OK, up.stderr
        assert [(n["host"], n["port"] > 0) for n in info["nodes"]] == [("127.0.0.1", True)] * 3
        leader = info["leader"]
        assert (tmp_path / ".hwm-lab" / "cluster.json").exists()  # found from the working directory

        # up twice: refused, clearly
        again = hwm(tmp_path, "up", "--json")
        assert again.returncode == NO_CLUSTER and "already running" in as_json(again)["error"]

        state = as_json(hwm(tmp_path, "status", "--json"))
        assert state["leader"] == leader and [n["state"] for n in state["nodes"]] == ["running"] * 3
        assert hwm(tmp_path, "status").stdout.startswith("cluster in .hwm-lab")
        # in the reader's language: no English left in status and a read refused (tests/test_i18n_commands.py)
        for lang in ("es", "zh"):
            said = [hwm(tmp_path, "status", "--lang", lang).stdout, hwm(tmp_path, "read", "9", "--lang", lang).stderr]
            assert all(text.strip() for text in said) and english(lang, "\n".join(said)) == [], said
        assert hwm(tmp_path, "status", "--lang", "es").stdout.startswith("cluster en .hwm-lab")

        # writes are acknowledged with their index and generation, also when sent to a follower
        first = as_json(hwm(tmp_path, "write", "e1", "--json"))
        assert first["ok"] and first["index"] == 1 and first["generation"] >= 1
        follower = next(n for n in "ABC" if n != leader)
        second = as_json(hwm(tmp_path, "write", "e2", "--node", follower, "--json"))
        assert second["ok"] and second["index"] == 2 and second["node"] == leader

        # reads: served up to the high-water mark, refused above it
        served = hwm(tmp_path, "read", "1", "--json")
        assert served.returncode == OK and as_json(served)["payload"] == "e1"
        refused = hwm(tmp_path, "read", "9", "--node", follower, "--json")
        answer = as_json(refused)
        assert refused.returncode == FAILED and "above the high-water mark" in answer["error"]
        assert answer["high_water_mark"] <= 2
        assert "refused by node" in hwm(tmp_path, "read", "9").stderr

        # kill the leader: another is elected, writes go on; the old one restarts on its data
        assert hwm(tmp_path, "kill", leader, "--json").returncode == OK
        new = wait_until(lambda: (lambda s: s["leader"] not in (None, leader) and s["leader"])(
            as_json(hwm(tmp_path, "status", "--json"))), 10, "a new leader")
        assert as_json(hwm(tmp_path, "write", "e3", "--json"))["index"] == 3
        assert hwm(tmp_path, "kill", leader).returncode == FAILED  # already killed: said so
        down = hwm(tmp_path, "read", "1", "--node", leader)  # no node refused it: the node is down, and status says why
        assert down.returncode == FAILED and "refused" not in down.stderr, down.stderr
        assert f"not read: node {leader} is killed (`hwm-lab status` says why)" in down.stderr, down.stderr
        assert hwm(tmp_path, "restart", leader, "--json").returncode == OK
        state = as_json(hwm(tmp_path, "status", "--json"))
        restarted = next(n for n in state["nodes"] if n["id"] == leader)
        assert restarted["state"] == "running" and restarted["boot"] == 2
        track(restarted["pid"])
        # a power cut rather than a crash: said so, and on to the trace
        killed = hwm(tmp_path, "kill", leader, "--lose-unsynced")
        assert killed.returncode == OK and "losing what it had not synced" in killed.stdout
        assert hwm(tmp_path, "restart", leader, "--json").returncode == OK
        track(next(n for n in as_json(hwm(tmp_path, "status", "--json"))["nodes"] if n["id"] == leader)["pid"])

        # partitions, both ways and one way, and healing
        assert hwm(tmp_path, "partition", "A", "B", "--json").returncode == OK
        cuts = {(x["src"], x["dst"]) for x in as_json(hwm(tmp_path, "status", "--json"))["links"] if x["cut"]}
        assert cuts == {("A", "B"), ("B", "A")}
        assert hwm(tmp_path, "heal", "--json").returncode == OK
        assert hwm(tmp_path, "partition", "B", "C", "--one-way").returncode == OK
        cuts = {(x["src"], x["dst"]) for x in as_json(hwm(tmp_path, "status", "--json"))["links"] if x["cut"]}
        assert cuts == {("B", "C")}
        assert hwm(tmp_path, "heal").returncode == OK
        assert hwm(tmp_path, "partition", "A", "Q").returncode == FAILED  # no node Q: said so

        # pause and resume
        assert hwm(tmp_path, "pause", follower, "--json").returncode == OK
        assert next(n for n in as_json(hwm(tmp_path, "status", "--json"))["nodes"]
                    if n["id"] == follower)["state"] == "paused"
        assert hwm(tmp_path, "resume", follower, "--json").returncode == OK

        # down stops every process and leaves data and traces in place
        state = as_json(hwm(tmp_path, "status", "--json"))
        pids = [info["pid"]] + [n["pid"] for n in state["nodes"] if n["pid"]]
        down = hwm(tmp_path, "down", "--json")
        assert down.returncode == OK and as_json(down)["killed"] == []
        wait_until(lambda: not any(pid_alive(p) for p in pids), 10, "every process to exit")
        assert hwm(tmp_path, "down").returncode == NO_CLUSTER
    finally:
        kill_pids(pids)

    trace = read_trace(tmp_path / ".hwm-lab")
    snapshots = {e["node"] for e in trace.of_type("log_snapshot")}
    assert snapshots == {"A", "B", "C"}
    assert {"node_killed", "node_restarted", "link_cut", "link_healed", "node_paused", "node_resumed",
            "cluster_stopped"} <= {e["type"] for e in trace.events}
    assert [e["lose_unsynced"] for e in trace.of_type("node_killed")] == [False, True]
    assert (tmp_path / ".hwm-lab" / "data" / "A" / "wal").is_dir()


@pytest.mark.processes
def test_up_on_an_address_the_nodes_cannot_listen_on_says_why_and_leaves_nothing_running(tmp_path):
    # 203.0.113.9 is a documentation address (TEST-NET-3): never this machine's, so binding fails at once.
    up = hwm(tmp_path, "up", "--json", "--host", "203.0.113.9", "--timeout", "10")
    error = as_json(up)["error"]
    assert up.returncode == START_FAILED
    assert "could not start" in error and "203.0.113.9" in error and "Cannot assign requested address" in error
    info = json.loads((tmp_path / ".hwm-lab" / "cluster.json").read_text()) \
        if (tmp_path / ".hwm-lab" / "cluster.json").exists() else {}
    assert not info.get("pid") or not pid_alive(info["pid"])
    assert hwm(tmp_path, "status").returncode == NO_CLUSTER


@pytest.mark.parametrize("command", [
    ["up"], ["status"], ["write"], ["read"], ["kill"], ["restart"], ["pause"], ["resume"], ["campaign"],
    ["partition"], ["heal"], ["delay"], ["down"], ["scenario"], ["scenario", "list"], ["scenario", "run"],
])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as done:
        main([*command, "--help"])
    assert done.value.code == 0
    assert "usage: hwm-lab" in capsys.readouterr().out


@pytest.mark.parametrize("argv, says", [
    (["write", "x", "--bogus"], "unrecognized arguments: --bogus"),
    (["read", "three"], "invalid int value: 'three'"),
    (["up", "--fsync", "sometimes"], "invalid choice: 'sometimes'"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_bad_arguments_are_a_usage_error(argv, says, capsys):
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == USAGE
    assert says in capsys.readouterr().err


def test_out_of_range_cluster_size_is_a_usage_error(tmp_path, capsys):
    assert main(["up", "--nodes", "9", "--dir", str(tmp_path), "--json"]) == USAGE
    assert "between 1 and 7" in json.loads(capsys.readouterr().out)["error"]


@pytest.mark.parametrize("argv", [["status"], ["write", "x"], ["read", "1"], ["kill", "A"], ["partition", "A", "B"],
                                  ["heal"], ["down"]])
def test_commands_without_a_cluster_say_so(argv, tmp_path, capsys):
    assert main([*argv, "--dir", str(tmp_path / "nothing-here")]) == NO_CLUSTER
    assert "no cluster is running" in capsys.readouterr().err


@pytest.mark.processes
def test_scenarios_from_the_cli(tmp_path):
    listed = as_json(hwm(tmp_path, "scenario", "list", "--json"))
    assert {"s1", "k1", "k2", "f8", "l1"} <= {s["name"] for s in listed["scenarios"]}
    run = hwm(tmp_path, "scenario", "run", "s1", "--out", "s1-run", "--json", timeout=120)
    verdict = as_json(run)
    assert run.returncode == OK and verdict["passed"], run.stdout
    assert (tmp_path / "s1-run" / "verdict.json").exists() and (tmp_path / "s1-run" / "trace.json").exists()
    missing = hwm(tmp_path, "scenario", "run", "nope")
    assert missing.returncode == USAGE and "no scenario 'nope'" in missing.stderr


@pytest.mark.processes
def test_the_demos_cluster_is_found_from_its_folder_by_status_write_and_read(tmp_path):
    import re
    import signal
    import time

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    demo = subprocess.Popen([sys.executable, "-m", "lab.cli", "demo", "--port", "0", "--async-mode", "threading"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    lines = []
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not any("Ctrl-C stops" in line for line in lines):
            line = demo.stdout.readline()
            if not line:
                break
            lines.append(line)
        text = "".join(lines)
        cluster_dir = re.search(r"cluster: (\S+) \(its data and traces; `hwm-lab status`", text)
        assert cluster_dir, text
        assert Path(cluster_dir.group(1)).is_dir() and (tmp_path / ".hwm-lab" / "cluster.json").exists()
        status = as_json(hwm(tmp_path, "status", "--json"))
        assert [n["id"] for n in status["nodes"]] == ["A", "B", "C"]
        track(*[n["pid"] for n in status["nodes"]])
        wait_until(lambda: as_json(hwm(tmp_path, "status", "--json"))["leader"], 20, "a leader")
        written = as_json(hwm(tmp_path, "write", "from-the-folder", "--json"))
        assert written["ok"] and written["index"] == 1
        read = as_json(hwm(tmp_path, "read", "1", "--json"))
        assert read["payload"] == "from-the-folder"
    finally:
        demo.send_signal(signal.SIGINT)
        try:
            demo.wait(30)
        except subprocess.TimeoutExpired:
            demo.kill()
    assert not (tmp_path / ".hwm-lab" / "cluster.json").exists()  # the demo took its pointer away
