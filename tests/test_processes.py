"""Real node processes on loopback: failover under load, S1, hostile input, faults and the trace they leave.

Every process is stopped at the end of each test, pass or fail (tests/procutil.py); every wait is bounded.
"""

from __future__ import annotations

import json
import os
import random
import socket
import struct
import threading
import time

import pytest
from procutil import by_id, converged, running_cluster, track, wait_until

from lab.core.events import EXPECTATION
from lab.core.reasons import NO_NODE_IN_CLUSTER, NODE_ALREADY
from lab.ports import codec
from lab.processes.client import ApiError, ControlClient, NodeClient
from lab.core.messages import ClientWrite, Hello, digest
from lab.ports.trace import read_trace

pytestmark = pytest.mark.processes


def test_leader_killed_during_a_stream_of_writes(tmp_path):
    with running_cluster(tmp_path, nodes=3, fsync="always") as sup:
        api = ControlClient(sup.control_url, token=sup.api_token)
        old = wait_until(lambda: sup.wait_for_leader(1.0), 10, "a first leader")

        # phase 1 - two clients write continuously; remember every acknowledged write
        acked: dict[int, str] = {}
        stop = threading.Event()

        def writer(name):
            n = 0
            while not stop.is_set():
                n += 1
                answer = api.write(f"{name}-{n}", timeout=3.0)
                if answer["ok"]:
                    assert answer["index"] not in acked, "two writes acknowledged at one index"
                    acked[answer["index"]] = f"{name}-{n}"

        threads = [threading.Thread(target=writer, args=(f"c{i}",), daemon=True) for i in range(2)]
        for t in threads:
            t.start()
        try:
            wait_until(lambda: len(acked) >= 40, 10, "40 acknowledged writes")

            # phase 2 - kill -9 the leader mid-stream: a new leader within 5 seconds
            killed_at = time.monotonic()
            sup.kill(old)
            new = wait_until(lambda: (lambda s: s["leader"] not in (None, old) and s["leader"])(api.state(log=0)),
                             5.0, "a new leader within 5 s")
            elected_after = time.monotonic() - killed_at
            before = len(acked)
            wait_until(lambda: len(acked) >= before + 20, 10, "writes acknowledged by the new leader")
        finally:
            stop.set()
            for t in threads:
                t.join(10)
        assert elected_after < 5.0 and new != old

        # phase 3 - the old leader restarts on its data and catches up
        sup.restart(old)
        track(*sup.pids())
        state = wait_until(lambda: (lambda s: converged(s) and s)(api.state(log="all")), 15, "convergence")
        nodes = by_id(state)
        assert all(n["state"] == "running" for n in nodes.values())
        for name, node in nodes.items():
            log = {index: payload for index, _, payload in node["log"]}
            missing = {i: p for i, p in acked.items() if log.get(i) != p}
            assert not missing, f"{name} lacks acknowledged writes {sorted(missing)[:5]}"
        hwm = min(n["hwm"] for n in nodes.values())
        logs = {name: [tuple(e) for e in node["log"][:hwm]] for name, node in nodes.items()}
        assert len({tuple(v) for v in logs.values()}) == 1, "logs differ below the high-water mark"
        assert nodes[old]["boot"] == 2

    # the trace: every kind of event the issue asks for, a final snapshot per node, and readable after SIGKILL
    trace = read_trace(tmp_path)
    kinds = {e["type"] for e in trace.events}
    for kind in ("cluster_started", "node_started", "node_killed", "node_restarted", "election_started",
                 "generation_changed", "became_leader", "leader_append", "replication_sent", "replication_received",
                 "follower_append", "match_index_updated", "hwm_changed", "write_requested", "write_acked",
                 "client_write", "log_snapshot", "node_stopped", "cluster_stopped"):
        assert kind in kinds, kind
    snapshots = {e["node"]: e for e in trace.of_type("log_snapshot")}
    assert set(snapshots) == {"A", "B", "C"}
    assert len({json.dumps(s["entries"][: s["hwm"]]) for s in snapshots.values()}) == 1
    boots = {e["boot"] for e in trace.events if e["node"] == old}
    assert boots == {1, 2}
    appends = trace.of_type("leader_append")
    assert all(e["digest"] == digest(e["payload"]) for e in appends)
    assert trace.meta["source"] == "real" and trace.meta["nodes"] == ["A", "B", "C"]

    # a line torn by SIGKILL mid-write is skipped with a warning, the rest still reads
    with open(tmp_path / f"events-{old}.jsonl", "ab") as f:
        f.write(b'{"v":1,"seq":999999,"time":1.0,"no')
    torn = read_trace(tmp_path)
    assert len(torn.events) == len(trace.events) and any("torn" in w for w in torn.warnings)


def test_s1_as_real_processes(tmp_path):
    from lab.harness.realdriver import run_real

    verdict, out = run_real("s1", out=tmp_path / "s1")
    assert verdict.passed, verdict.summary()
    trace = read_trace(out)
    assert trace.meta["scenario"] == "s1" and trace.meta["source"] == "real"
    truncations = [e for e in trace.of_type("truncated") if e["node"] == "A"]
    assert truncations and truncations[0]["from_index"] == 4 and truncations[0]["removed"][0][1] == 1
    refused = [e for e in trace.of_type("read_refused") if e["index"] == 4]
    assert refused and all(e["hwm"] == 3 for e in refused)
    assert json.loads((out / "verdict.json").read_text())["passed"] is True
    expectations = trace.of_type("expectation")
    assert expectations and all(e["ok"] for e in expectations)


def _closed_by_peer(sock: socket.socket, timeout: float = 5.0) -> bool:
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_a_node_fed_garbage_keeps_serving(tmp_path):
    with running_cluster(tmp_path, nodes=3) as sup:
        api = ControlClient(sup.control_url, token=sup.api_token)
        leader = wait_until(lambda: sup.wait_for_leader(1.0), 10, "a leader")
        target = sup.nodes[leader]
        pid_before = target.pid
        bystander = NodeClient("127.0.0.1", target.port, timeout=5.0)  # connected before the garbage arrives
        assert bystander.write("before").ok

        rng = random.Random(3)
        hostile = {
            "random bytes": bytes(rng.randrange(256) for _ in range(4096)),
            "oversized frame": struct.pack(">I", codec.MAX_FRAME + 1),  # refused from the header alone
            "unknown message type": codec.LENGTH.pack(28) + b'{"type":"Gossip","rumour":1}',
            "not an object": codec.LENGTH.pack(5) + b"[1,2]",
            "peer message without hello": codec.encode(
                codec.decode_frame(b'{"type":"VoteResponse","generation":9,"voter":"B","granted":true}')),
            "hello from a stranger": codec.encode(Hello(node="Z", proof="00" * 32)),
            "answer sent to a node": codec.encode(codec.decode_frame(
                b'{"type":"Answer","request":"x","ok":true,"index":1,"generation":1,"payload":"p",'
                b'"high_water_mark":1,"leader":null,"error":""}')),
        }
        for what, data in hostile.items():
            with socket.create_connection(("127.0.0.1", target.port), timeout=5) as sock:
                sock.sendall(data)
                assert _closed_by_peer(sock), f"{what}: the node kept the connection open"

        # everyone else is still served: the connection from before, a new one, and the whole cluster
        assert bystander.write("after").ok
        assert bystander.read(1).ok
        bystander.close()
        with NodeClient("127.0.0.1", target.port) as fresh:
            assert fresh.control("ping")["node"] == leader
        answer = api.write("still-committing")
        assert answer["ok"], answer
        assert sup.nodes[leader].pid == pid_before and sup.nodes[leader].proc.poll() is None
        log_text = (target.data_dir / "node.log").read_text()
        for reason in ("exceeds the maximum frame size", "unknown message type 'Gossip'", "before any Hello",
                       "not a peer"):
            assert reason in log_text, reason


def test_faults_pause_cut_delay_and_no_majority(tmp_path):
    with running_cluster(tmp_path, nodes=3, write_timeout_ticks=100) as sup:
        api = ControlClient(sup.control_url, token=sup.api_token)
        first = wait_until(lambda: sup.wait_for_leader(1.0), 10, "a leader")
        assert api.write("one")["ok"]

        # phase 1 - pause the leader (SIGSTOP): the others elect a new one; on resume the old one follows
        api.pause(first)
        assert by_id(api.state())[first]["state"] == "paused"
        second = wait_until(lambda: (lambda s: s["leader"] not in (None, first) and s["leader"])(api.state(log=0)),
                            5, "a leader while the old one is paused")
        api.resume(first)
        wait_until(lambda: by_id(api.state(log=0))[first]["role"] == "follower", 5, "the resumed node to follow")

        # phase 2 - a one-way cut from the leader to one follower: the other follower still makes a majority
        other = next(n for n in sup.names if n not in (second,))
        api.cut(second, other, one_way=True)
        state = api.state(log=0)
        assert [(link["src"], link["dst"]) for link in state["links"] if link["cut"]] == [(second, other)]
        answer = api.write("two", second)
        assert answer["ok"], answer
        api.heal()
        wait_until(lambda: converged(api.state(log=0)), 5, "convergence after the heal")

        # phase 3 - a per-message delay is applied by the sender
        api.delay(150)
        started = time.monotonic()
        assert api.write("slow")["ok"]
        assert time.monotonic() - started >= 0.3  # leader -> follower and back: two delayed messages
        api.delay(0)

        # phase 4 - no majority reachable: a clear timeout, not a hang
        leader = wait_until(lambda: api.state(log=0)["leader"], 5, "a leader")
        for name in sup.names:
            if name != leader:
                api.kill(name)
        answer = api.write("lonely", timeout=5.0)
        assert not answer["ok"] and answer["error"].startswith("timeout"), answer
        assert "majority" in answer["error"]
        refused = api.read(99, leader)
        assert not refused["ok"] and "above the high-water mark" in refused["error"]

        # phase 5 - the API refuses what cannot be done, with a status and a sentence
        killed = next(n for n in sup.names if n != leader)
        for call, status, says in (
            (lambda: api.kill(killed), 409, f"node {killed} is already killed"),
            (lambda: api.pause(killed), 409, "only a running node can pause"),
            (lambda: api.restart("Q"), 404, "no node 'Q'"),
            (lambda: api.cut("A", "A"), 400, "two different nodes"),
            (lambda: api.settings(fsync="sometimes"), 400, "fsync must be one of"),
            (lambda: api._op("POST", "/api/nope", {}), 404, "no such resource"),
        ):
            with pytest.raises(ApiError) as refusal:
                call()
            assert refusal.value.status == status and says in str(refusal.value), (status, says)
        with pytest.raises(ApiError) as refusal:  # the refusal's kind travels beside its sentence (`because`)
            api.kill(killed)
        assert refusal.value.args[0].kind == NODE_ALREADY and refusal.value.body["because"]["state"] == "killed"
        api.note(EXPECTATION, name="expect stopped B", ok=False, detail=refusal.value.args[0])  # as a script's
        noted = next(e for e in api.all_events() if e["type"] == EXPECTATION)
        assert noted["detail"].kind == NODE_ALREADY  # the note's reason kept its kind through the API and the trace
        with pytest.raises(ApiError) as unknown:  # an unknown node too: said in the reader's language from its kind
            api.restart("Q")
        assert unknown.value.body["because"] == {"kind": NO_NODE_IN_CLUSTER, "node": "'Q'", "nodes": list(sup.names)}
        status, body = api.call("POST", "/api/write", None)
        assert status == 400 and not body["ok"]

    kinds = [e["type"] for e in read_trace(tmp_path).events if e["node"] == "cluster"]
    for kind in ("node_paused", "node_resumed", "link_cut", "link_healed", "delay_set", "node_killed"):
        assert kind in kinds, kind


def test_a_standalone_node_reports_its_port(tmp_path):
    """`python -m lab.processes.node` on its own: port 0 picks a free port; it says which and serves a client."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "lab.processes.node", "--id", "A", "--nodes", "A", "--data-dir",
                             str(tmp_path / "a"), "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    track(proc.pid)
    try:
        line = proc.stdout.readline()
        port = int(line.rsplit(":", 1)[1])
        ready = json.loads((tmp_path / "a" / "node.json").read_text())
        assert ready["port"] == port and ready["pid"] == proc.pid
        with NodeClient("127.0.0.1", port) as client:
            answer = wait_until(lambda: (lambda a: a.ok and a)(client.write("solo")), 5, "a single-node commit")
            assert answer.index == 1
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.returncode == 0
    events = [json.loads(line) for line in (tmp_path / "a" / "events-A.jsonl").read_text().splitlines()]
    assert events[-1]["type"] == "node_stopped" and events[-2]["type"] == "log_snapshot"
    assert os.path.exists(tmp_path / "a" / "wal")


def test_writes_and_reads_reuse_one_connection_per_node_and_answer_with_the_answers_names(tmp_path):
    with running_cluster(tmp_path, nodes=3, fsync="never") as sup:
        leader = wait_until(lambda: sup.wait_for_leader(1.0), 10, "a leader")
        first = sup.write("one", timeout=10.0)
        kept = sup.clients._idle[leader][:]
        second = sup.write("two", timeout=10.0)
        read = sup.read(2, leader)
        assert first["ok"] and second["ok"] and read["ok"] and read["payload"] == "two"
        assert read["high_water_mark"] >= 2 and read["node"] == leader and "hwm" not in read
        assert len(kept) == 1 and sup.clients._idle[leader] == kept  # the same connection, given back each time
        sup.kill(leader)
        assert leader not in sup.clients._idle  # a killed node's connections are closed with it
        down = sup.read(1, leader)
        assert down["refusal"] == "node_down" and down["node"] == leader


def test_the_daemon_launcher_starts_a_cluster_that_stops_with_the_api(tmp_path):
    from lab.processes import daemon
    from lab.processes.client import cluster_info

    proc = daemon.launch(tmp_path, {"nodes": 1, "fresh": True}, parent_pid=os.getpid())
    track(proc.pid)
    try:
        info = wait_until(lambda: (cluster_info(tmp_path) or {}).get("pid") == proc.pid and cluster_info(tmp_path),
                          30, "the daemon's cluster.json")
        api = ControlClient(info["control_url"], token=info["token"])
        track(*[n["pid"] for n in api.state(log=0)["nodes"]])
        assert wait_until(lambda: api.state(log=0)["leader"], 10, "a leader") == "A"
        api.post("/api/shutdown")
        assert proc.wait(20) == 0
        assert (tmp_path / daemon.LOG_FILE).exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_nodes_the_supervisor_stops_are_not_reported_as_exiting_on_their_own(tmp_path):
    """A reaper that runs while the supervisor stops its nodes must not call them exited on their own (a replay's
    lane then read 'stopped: node A (boot 2) listening on ...'): here it runs right after each SIGTERM lands."""
    with running_cluster(tmp_path, nodes=3, fsync="never") as sup:
        wait_until(lambda: sup.wait_for_leader(1.0), 10, "a leader")
        for node in sup.nodes.values():
            proc, reap = node.proc, sup._reap

            def terminate_and_reap(signum, proc=proc, node=node, reap=reap):
                type(proc).send_signal(proc, signum)
                proc.wait(10)
                reap(node)  # the race, made certain: the process has exited while the supervisor stops it

            proc.send_signal = terminate_and_reap
        sup.stop()
    events = [json.loads(line) for line in (tmp_path / "events-cluster.jsonl").read_text().splitlines()]
    assert [e for e in events if e["type"] == "node_exited"] == []
    assert events[-1]["type"] == "cluster_stopped"
