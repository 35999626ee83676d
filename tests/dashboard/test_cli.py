"""The commands: `hwm-lab replay` and `hwm-lab dashboard` as real processes (both async modes), the classroom
token printed at start, a clean stop on Ctrl-C; `hwm-lab demo` is exercised by the browser tests."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from lab.cli import build_parser
from tests.dashboard.fake_control import FakeControl

ROOT = Path(__file__).resolve().parents[2]


class Served:
    def __init__(self, *argv):
        self.proc = subprocess.Popen([sys.executable, "-m", "lab.cli", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.lines: list[str] = []
        deadline = time.monotonic() + 60
        self.url = None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            match = re.search(r"dashboard: (http://\S+)", line)
            if match:
                self.url = match.group(1)
                port = re.search(r":(\d+)/", self.url).group(1)
                self.local = f"http://127.0.0.1:{port}"
            if "Ctrl-C stops" in line:  # the last line printed at start (after the token, if any)
                return
        self.proc.kill()
        raise AssertionError("no URL printed:\n" + "".join(self.lines))

    def get(self, path):
        with urllib.request.urlopen(self.local + path, timeout=10) as r:
            return r.status, r.read()

    def post(self, path, body, headers=None):
        request = urllib.request.Request(self.local + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return -9


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    from lab.harness.scenario import simulate

    out = tmp_path_factory.mktemp("trace") / "s1"
    assert simulate("s1", seed=1, out=out).passed
    return out


def test_the_commands_are_registered_in_hwm_lab():
    parser = build_parser()
    for argv in (["demo"], ["dashboard"], ["replay", "x"]):
        args = parser.parse_args(argv)
        assert args.command_name == argv[0] and args.async_mode == "eventlet" and args.host == "127.0.0.1"
    assert parser.parse_args(["demo", "--nodes", "7", "--async-mode", "threading"]).nodes == 7


@pytest.mark.parametrize("mode", ["eventlet", "threading"])
def test_replay_command_serves_the_trace_and_stops_on_ctrl_c(trace, mode):
    served = Served("replay", str(trace), "--port", "0", "--async-mode", mode)
    try:
        assert served.url.startswith("http://127.0.0.1:") and "token" not in served.url
        assert not [line for line in served.lines if "deprecat" in line.lower()]  # a clean start on the projector
        status, page = served.get("/")
        assert status == 200 and b"socket.io.min.js" in page
        status, body = served.get("/api/dashboard/state?position=5")
        state = json.loads(body)
        assert state["position"] == 5 and [n["id"] for n in state["nodes"]] == ["A", "B", "C"]
    finally:
        assert served.stop() == 0


def test_classroom_host_prints_the_instructor_token_and_guards_controls(trace):
    served = Served("replay", str(trace), "--host", "0.0.0.0", "--port", "0", "--async-mode", "threading")
    try:
        text = "".join(served.lines)
        token = re.search(r"instructor token: (\S+)", text).group(1)
        assert f"?token={token}" in served.url
        status, answer = served.post("/api/dashboard/control/kill", {"node": "A"})
        assert status == 403 and "instructor token" in answer["error"]
        status, answer = served.post("/api/dashboard/control/kill", {"node": "A"}, {"X-HWM-Token": token})
        assert status == 400 and "replaying a trace" in answer["error"]  # allowed, but there is no cluster
    finally:
        assert served.stop() == 0


@pytest.mark.parametrize("mode", ["eventlet", "threading"])
def test_dashboard_command_attaches_to_a_running_cluster(mode):
    fake = FakeControl(3, seed=2)
    fake.elect("B")
    served = Served("dashboard", "--control-url", fake.control_url, "--port", "0", "--async-mode", mode)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            state = json.loads(served.get("/api/dashboard/state")[1])
            if state["nodes"]:
                break
            time.sleep(0.2)
        assert state["cluster"]["leader"] == "B" and len(state["nodes"]) == 3
        status, answer = served.post("/api/dashboard/control/pause", {"node": "C"})
        assert status == 200 and fake.posts[-1] == ("/api/nodes/C/pause", {})
    finally:
        assert served.stop() == 0
        fake.stop()


def test_dashboard_without_a_cluster_says_how_to_start_one_even_when_its_port_is_taken(tmp_path):
    with socket.socket() as taken:  # another program holds the dashboard's port: the missing cluster is said first
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        out = subprocess.run([sys.executable, "-m", "lab.cli", "dashboard", "--dir", str(tmp_path), "--async-mode",
                              "threading", "--port", str(taken.getsockname()[1])], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
    assert out.returncode != 0 and "no cluster is running" in out.stderr and "hwm-lab up" in out.stderr


def test_classroom_host_prints_the_students_url_without_the_token(trace):
    served = Served("replay", str(trace), "--host", "0.0.0.0", "--port", "0", "--async-mode", "threading")
    try:
        text = "".join(served.lines)
        students = re.search(r"students \(watch only\): (http://\S+)", text).group(1)
        assert "token" not in students and students == served.url.split("?")[0]
        assert not students.startswith("http://0.0.0.0")  # an address a laptop can reach
    finally:
        assert served.stop() == 0


@pytest.mark.parametrize("mode", ["eventlet", "threading"])
def test_a_second_dashboard_on_a_taken_port_says_so_and_exits(trace, mode):
    first = Served("replay", str(trace), "--port", "0", "--async-mode", mode)
    try:
        port = re.search(r":(\d+)/", first.url).group(1)
        second = subprocess.run([sys.executable, "-m", "lab.cli", "replay", str(trace), "--port", port,
                                 "--async-mode", mode], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert second.returncode == 1
        assert f"cannot listen on 127.0.0.1:{port}" in second.stderr and "the address is in use" in second.stderr
        assert first.get("/healthz")[0] == 200  # the first one is untouched
    finally:
        assert first.stop() == 0


def test_a_watchers_big_body_is_refused_before_it_is_read(trace):
    served = Served("replay", str(trace), "--host", "0.0.0.0", "--port", "0", "--async-mode", "threading")
    try:
        port = re.search(r":(\d+)/", served.url).group(1)
        import socket as sockets

        with sockets.create_connection(("127.0.0.1", int(port)), timeout=10) as sock:
            sock.sendall(f"POST /api/dashboard/control/kill HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                         f"Content-Type: application/json\r\nContent-Length: {60 << 20}\r\n\r\n".encode())
            sock.sendall(b"{" * 4096)  # a watcher starts sending 60 MiB: no token, never read
            answer = b""
            while b"instructor token" not in answer:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                answer += chunk
        assert b" 403 " in answer.split(b"\r\n")[0] and b"instructor token" in answer
    finally:
        assert served.stop() == 0


COUNTEREXAMPLE = """nodes 3
network manual
impl tests.wrong_variants.ex4_serves_above_hwm

step "1. A client reads index 1 at A"
  read 1 at A
"""


@pytest.mark.parametrize("mode", ["eventlet", "threading"])
def test_replay_explore_opens_a_counterexample_and_refuses_a_folder_without_one(tmp_path, mode):
    (tmp_path / "counterexample.txt").write_text(COUNTEREXAMPLE)
    served = Served("replay", str(tmp_path), "--explore", "--port", "0", "--async-mode", mode)
    try:
        status, body = served.get("/api/dashboard/state?position=1000")
        state = json.loads(body)
        assert status == 200 and state["total"] > 0 and [n["id"] for n in state["nodes"]] == ["A", "B", "C"]
        assert any(e["type"] == "rule_broken" for e in state["events"])  # the gate served a read above its mark
    finally:
        assert served.stop() == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run([sys.executable, "-m", "lab.cli", "replay", str(empty), "--explore", "--port", "0",
                           "--async-mode", mode], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no counterexample in" in done.stderr and "Traceback" not in done.stderr
