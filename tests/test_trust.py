"""Trust at every port: a forged peer rewrites nothing, control stays locked, the control API refuses what a
stray web page or a slow client could do, delays are bounded, damaged disks stop a node with one clear line.
(Hostile frames in bulk are thrown at live nodes by tests/test_fuzz.py.)"""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import time

import pytest

from lab.core.impl import load
from lab.core.reasons import reason_from_record
from lab.i18n import localize
from lab.core.messages import (Entry, HardState, Hello, ReplicationRequest, ReplicationResponse, VoteResponse,
                               ClientWrite)
from lab.core.replica import Replica
from lab.ports import codec
from lab.processes import control_api
from lab.processes.client import ApiError, ControlClient, NodeClient, NodeError
from lab.sim.cluster import SimCluster
from lab.ports.segments import HEADER
from lab.ports.wal import WriteAheadLog
from procutil import by_id, running_cluster, wait_until

# ---- the replica's defence in depth (no processes) --------------------------------------------------------------


def follower(log=(), generation=1):
    replica = Replica(node_id="B", nodes=("A", "B", "C"), impl=load("solutions"), rng=random.Random(1),
                      hard_state=HardState(generation=generation, voted_for=None), log=log)
    replica.start()
    return replica


def e(index, generation, payload=None):
    return Entry(index, generation, payload or f"e{index}")


def test_a_request_carrying_an_entry_of_a_later_generation_than_its_own_is_refused():
    replica = follower([e(1, 1), e(2, 1)])
    ready = replica.receive("A", ReplicationRequest(generation=1, leader="A", prev_index=1, prev_generation=1,
                                                    entries=(e(2, 1003, "evil"),), high_water_mark=2))
    assert [x.payload for x in replica.log] == ["e1", "e2"] and not ready.append and ready.truncate_from is None
    assert not ready.messages[0].message.success
    assert any(ev.type == "replication_rejected" and "generation 1003" in ev.fields["reason"] for ev in ready.events)


def test_a_follower_never_truncates_at_or_below_the_mark_it_has_seen_committed():
    replica = follower([e(1, 1), e(2, 1), e(3, 1)])
    # the leader commits index 3: the follower learns its mark
    replica.receive("A", ReplicationRequest(generation=1, leader="A", prev_index=3, prev_generation=1,
                                            high_water_mark=3))
    assert replica.high_water_mark == 3
    # a forged (or broken) leader of a later generation asks it to replace index 3
    ready = replica.receive("A", ReplicationRequest(generation=5, leader="A", prev_index=2, prev_generation=1,
                                                    entries=(e(3, 5, "evil"),), high_water_mark=3))
    assert [x.payload for x in replica.log] == ["e1", "e2", "e3"] and ready.truncate_from is None
    refused = [ev for ev in ready.events if ev.type == "truncation_refused"]
    assert refused and refused[0].fields["from_index"] == 3 and refused[0].fields["hwm"] == 3
    assert not ready.messages[0].message.success


def test_a_leader_ignores_a_response_claiming_more_than_its_log_holds():
    leader = Replica(node_id="A", nodes=("A", "B", "C"), impl=load("solutions"), rng=random.Random(1))
    leader.start()
    leader.campaign()
    leader.receive("B", VoteResponse(generation=1, voter="B", granted=True))
    leader.propose([ClientWrite("w1", "x")])
    leader.persisted(1, 1)  # on the leader's disk: counted, the bogus answer would make a majority
    ready = leader.receive("B", ReplicationResponse(generation=1, follower="B", success=True, match_index=99,
                                                    log_end=99))
    assert leader.high_water_mark == 0 and not ready.answers
    assert [ev.type for ev in ready.events] == ["response_ignored"]


# ---- pre-vote (simulator) ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("pre_vote", [True, False])
def test_pre_vote_keeps_a_node_that_was_cut_off_from_deposing_the_leader(pre_vote):
    cluster = SimCluster(3, seed=4, pre_vote=pre_vote)
    cluster.campaign("A")
    assert cluster.run_until(lambda: cluster.leader() == "A", 500)
    generation = cluster.node("A").generation
    cluster.isolate("C")
    cluster.run(600)  # ten election timeouts and more
    cluster.heal()
    cluster.run(300)
    started = [ev for ev in cluster.events if ev["type"] == "election_started" and ev["node"] == "C"]
    if pre_vote:
        assert cluster.node("C").generation == generation and not started
        assert cluster.leader() == "A" and cluster.node("A").generation == generation
        assert any(ev["type"] == "prevote_started" and ev["node"] == "C" for ev in cluster.events)
    else:  # what pre-vote prevents: C campaigned alone, and its higher generation deposed A
        assert started and cluster.node("A").generation > generation


# ---- forged peers (real processes) ------------------------------------------------------------------------------


def forge(port: int, *frames) -> bool:
    """Connect as a stranger, answer the node's challenge with a made-up proof, send `frames`; True if the node
    closed the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.settimeout(5)
        decoder = codec.FrameDecoder()
        challenge = []
        while not challenge:
            challenge = decoder.feed(sock.recv(65536))
        sock.sendall(b"".join(codec.encode(f) for f in frames))
        try:
            while sock.recv(65536):
                pass
        except ConnectionResetError:
            pass
        except socket.timeout:
            return False
        return True


@pytest.mark.processes
def test_a_forged_peer_can_neither_acknowledge_a_write_nor_overwrite_a_committed_entry(tmp_path):
    with running_cluster(tmp_path, nodes=3, host="0.0.0.0") as sup:  # listening everywhere, still locked
        api = ControlClient(sup.control_url, token=sup.api_token)
        leader = wait_until(lambda: sup.wait_for_leader(1.0), 10, "a leader")
        for payload in ("e1", "e2", "e3"):
            assert api.write(payload)["ok"]
        followers = [n for n in sup.names if n != leader]
        wait_until(lambda: all(by_id(sup.state(log=0))[n]["hwm"] == 3 for n in followers), 10, "every mark at 3")
        state = by_id(sup.state(log="all"))
        generation = state[leader]["generation"]

        # 1. Both followers paused: a write cannot be committed. A stranger claims to be a follower holding it.
        for name in followers:
            api.pause(name)
        pending = api.write("unreplicated", wait=False)
        wait_until(lambda: by_id(sup.state(log=0))[leader]["log_end"] == 4, 10, "the leader to append it")
        closed = forge(sup.nodes[leader].port, Hello(node=followers[0], proof="ab" * 32),
                       ReplicationResponse(generation=generation, follower=followers[0], success=True,
                                           match_index=4, log_end=4))
        assert closed
        time.sleep(0.5)
        assert by_id(sup.state(log=0))[leader]["hwm"] == 3
        acked = [e for e in sup.event_dicts(0) if e["type"] == "write_acked" and e["request"] == pending["request"]]
        assert acked == []
        for name in followers:
            api.resume(name)

        # 2. A stranger claims to be the leader of generation 1003 and sends a follower a new entry 3.
        victim = followers[1]
        closed = forge(sup.nodes[victim].port, Hello(node=leader, proof="cd" * 32),
                       ReplicationRequest(generation=1003, leader=leader, prev_index=2, prev_generation=generation,
                                          entries=(Entry(3, 1003, "evil"),), high_water_mark=3))
        assert closed
        after = by_id(sup.state(log="all"))[victim]
        assert [x[2] for x in after["log"][:3]] == ["e1", "e2", "e3"] and after["generation"] < 1003
        log_text = (sup.nodes[victim].data_dir / "node.log").read_text()
        assert "without proof of the cluster's secret" in log_text
        assert all(n.proc.poll() is None for n in sup.nodes.values())
        assert api.write("still-committing")["ok"]


@pytest.mark.processes
def test_control_that_changes_a_node_is_for_the_supervisor_only(tmp_path):
    with running_cluster(tmp_path, nodes=1) as sup:
        node = sup.nodes["A"]
        with NodeClient("127.0.0.1", node.port) as anonymous:
            assert anonymous.control("status")["id"] == "A"  # reading is open
            with pytest.raises(NodeError, match="only the supervisor"):
                anonymous.control("stop")
            with pytest.raises(NodeError, match="only the supervisor"):
                anonymous.control("ticks", hold=True)
        time.sleep(0.3)
        assert node.proc.poll() is None
        with NodeClient("127.0.0.1", node.port, secret=sup.secret) as supervisor:
            assert supervisor.control("ping")["node"] == "A"
            assert supervisor.control("ticks", hold=False) == {"hold": False}
        assert oct(os.stat(tmp_path / "secret").st_mode & 0o777) == "0o600"


# ---- the control API --------------------------------------------------------------------------------------------


def raw(url: str, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


@pytest.mark.processes
def test_the_control_api_refuses_what_a_stray_page_or_a_slow_client_could_do(tmp_path, monkeypatch):
    monkeypatch.setattr(control_api._Handler, "timeout", 1.0)
    with running_cluster(tmp_path, nodes=1) as sup:
        url, token = sup.control_url, sup.api_token
        json_headers = {"Content-Type": "application/json", "X-HWM-Token": token}
        # a cross-origin "simple" request: text/plain, no token
        status, body = raw(url, "POST", "/api/write", b'{"payload": "sneaky"}', {"Content-Type": "text/plain"})
        assert status == 401 and "token" in body["error"]
        status, body = raw(url, "POST", "/api/write", b'{"payload": "sneaky"}',
                           {"Content-Type": "text/plain", "X-HWM-Token": token})
        assert status == 415
        status, _ = raw(url, "POST", "/api/write", b'{"payload": "x"}',
                        {"Content-Type": "application/json", "X-HWM-Token": "wrong"})
        assert status == 403
        assert not any(e["type"] == "client_write" for e in sup.event_dicts(0))
        # DNS rebinding: a page on another name that resolves here
        status, body = raw(url, "GET", "/api/state", headers={"Host": "evil.example:80"})
        assert status == 403 and "answers only at 127.0.0.1" in body["error"]
        # bounded bodies and numbers
        status, body = raw(url, "POST", "/api/write", b'{"payload": ' + b"[" * 5000 + b"]" * 5000 + b"}",
                           json_headers)
        assert status == 400 and "nests deeper" in body["error"]
        assert body["because"] == {"kind": "api_body_deep", "most": control_api.MAX_DEPTH}
        status, body = raw(url, "POST", "/api/read", json.dumps({"index": 10 ** 30}).encode(), json_headers)
        assert status == 400 and "index must be a whole number" in body["error"]
        # each refusal says its kind beside its sentence: a reader in another language gets it in theirs
        refusal = reason_from_record(body["because"])
        assert refusal.kind == "api_whole_number" and refusal.values["value"] == repr(10 ** 30)
        assert localize(refusal, "es").startswith("index debe ser un número entero de -9.223.372.036.854.775.807 a ")
        for path, sent, kind in (("/api/write", b"[1]", "api_body_not_object"), ("/api/write", b"{", "api_body_not_json"),
                                 ("/api/write", b'{"payload": 5}', "api_text"),
                                 ("/api/links/delay", b'{"ms": 5, "src": "A"}', "link_delay_ends"),
                                 ("/api/links/cut", b'{"src": "A", "dst": "A"}', "link_one_node")):
            status, body = raw(url, "POST", path, sent, json_headers)
            assert status == 400 and body["because"]["kind"] == kind, (path, sent, body)
        status, body = raw(url, "POST", "/api/settings", b'{"color": "red"}', json_headers)
        assert status == 400 and body["because"] == {"kind": "unknown_settings", "names": ["color"],
                                                     "known": ["delay_ms", "fsync", "truncation", "writeback_ms"]}
        assert localize(reason_from_record(body["because"]), "zh").startswith("未知的设置：color；")
        status, body = raw(url, "POST", "/api/write", b'{"payload": "x", "timeout": Infinity}', json_headers)
        assert status == 400 and "Infinity" in body["error"]
        status, body = raw(url, "GET", "/api/events?limit=-1")
        assert status == 400 and "limit" in body["error"]
        status, body = raw(url, "POST", "/api/links/delay", b'{"ms": 1e12}', json_headers)
        assert status == 400 and "0 to 60000 ms" in body["error"]
        # too big: refused from its length, before a byte of it is read
        with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=5) as sock:
            sock.sendall(f"POST /api/write HTTP/1.0\r\nContent-Type: application/json\r\nX-HWM-Token: {token}\r\n"
                         f"Content-Length: {control_api.MAX_BODY + 1}\r\n\r\n".encode())
            assert b" 413 " in sock.recv(4096)
        # a body promised and withheld: the API gives up on that client after its timeout
        with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=10) as sock:
            sock.sendall(f"POST /api/write HTTP/1.0\r\nContent-Type: application/json\r\nX-HWM-Token: {token}\r\n"
                         f"Content-Length: 100\r\n\r\n".encode())
            started = time.monotonic()
            while sock.recv(4096):
                pass
            assert time.monotonic() - started < 5
        # and it still serves
        assert ControlClient(url, token=token).write("fine")["ok"]


@pytest.mark.processes
def test_any_delay_then_zero_restores_elections_at_once(tmp_path):
    with running_cluster(tmp_path, nodes=3) as sup:
        api = ControlClient(sup.control_url, token=sup.api_token)
        leader = wait_until(lambda: sup.wait_for_leader(1.0), 10, "a leader")
        with pytest.raises(ApiError) as refused:
            api.delay(1e12)
        assert refused.value.status == 400
        api.delay(60_000)  # the longest allowed: ticks of 8 s
        api.delay(0)
        api.kill(leader)
        started = time.monotonic()
        new = wait_until(lambda: (lambda s: s if s not in (None, leader) else None)(sup.state(log=0)["leader"]),
                         5, "a new leader within 5 s")
        assert new != leader and time.monotonic() - started < 5


# ---- damaged disks ----------------------------------------------------------------------------------------------


def flip_payload_byte(wal_dir, index: int) -> None:
    """Flip one byte of the payload of record `index` in a write-ahead log directory."""
    with WriteAheadLog(wal_dir, fsync="never") as wal:
        segment = wal._segment_holding(index)
        path, offset = segment.path, segment.offsets[index]
    with open(path, "r+b") as f:
        f.seek(offset + HEADER.size)
        byte = f.read(1)[0]
        f.seek(offset + HEADER.size)
        f.write(bytes([byte ^ 0x01]))


@pytest.mark.processes
def test_a_log_damaged_in_the_middle_stops_the_node_until_repaired_and_loses_no_acknowledged_write(tmp_path):
    with running_cluster(tmp_path, nodes=3) as sup:
        api = ControlClient(sup.control_url, token=sup.api_token)
        leader = wait_until(lambda: sup.wait_for_leader(1.0), 10, "a leader")
        acked = [f"m{i}" for i in range(1, 31)]
        for payload in acked:
            assert api.write(payload)["ok"]
        victim, other = [n for n in sup.names if n != leader]
        wait_until(lambda: by_id(sup.state(log=0))[victim]["hwm"] == 30, 10, "the victim's mark at 30")
        api.kill(victim)
        flip_payload_byte(sup.nodes[victim].data_dir / "wal", 11)
        # 1. It refuses to start, with one line that names the file and the offset, and changes nothing.
        with pytest.raises(ApiError) as refused:
            api.restart(victim)
        message = str(refused.value)
        assert "damage in the middle of the log" in message and "00000000000000000001.wal offset" in message
        assert "--repair" in message and "Traceback" not in message
        # 2. Repaired, cut off from the others so that it cannot catch up: it keeps indexes 1-10, votes for no one.
        api.cut(victim, leader)
        api.cut(victim, other)
        api.restart(victim, repair=True)
        state = by_id(sup.state(log=0))[victim]
        assert state["state"] == "running" and state["log_end"] == 10 and state["catching_up_to"] == 30
        assert state["recovery"]["repaired"] and state["recovery"]["first_bad_index"] == 11
        api.heal(victim, other)
        api.kill(leader)  # only `other` holds everything now
        time.sleep(2.0)
        events = sup.event_dicts(0)
        repaired = [e for e in events if e["node"] == victim and e["boot"] == state["boot"]]
        assert not any(e["type"] == "vote_granted" for e in repaired)
        assert any(e["type"] in ("vote_denied", "prevote_denied") and "repaired" in e["reason"] for e in repaired)
        assert any(e["type"] == "wal_recovered" and e["node"] == victim and e["repaired"] for e in events)
        # 3. The old leader comes back: a leader is elected, the repaired node catches up, nothing acknowledged lost.
        api.restart(leader)
        api.heal()
        wait_until(lambda: sup.state(log=0)["leader"], 15, "a leader")
        assert api.write("after")["ok"]
        final = by_id(sup.state(log="all"))
        for name in sup.names:
            assert [x[2] for x in final[name]["log"]][:30] == acked, name
        assert any(e["type"] == "caught_up" and e["node"] == victim for e in sup.event_dicts(0))


@pytest.mark.processes
def test_damaged_state_or_boot_files_stop_a_node_with_one_line(tmp_path):
    with running_cluster(tmp_path, nodes=1) as sup:
        api = ControlClient(sup.control_url, token=sup.api_token)
        wait_until(lambda: sup.wait_for_leader(1.0), 10, "a leader")
        data = sup.nodes["A"].data_dir
        api.kill("A")
        (data / "state.json").write_bytes(b"\x00garbage")
        with pytest.raises(ApiError) as refused:
            api.restart("A")
        assert "durable state file" in str(refused.value) and "is corrupt" in str(refused.value)
        (data / "state.json").unlink()
        (data / "boot").write_text("xyz")
        with pytest.raises(ApiError) as refused:
            api.restart("A")
        assert "not a boot number" in str(refused.value) and "--repair" in str(refused.value)
        log_text = (data / "node.log").read_text()
        assert "Traceback" not in log_text
        api.restart("A", repair=True)
        boots = [e["boot"] for e in sup.event_dicts(0) if e["node"] == "A"]
        assert boots[-1] == max(boots) and boots.count(boots[-1]) < len(boots)  # a new boot number, not 1 again
        assert by_id(sup.state(log=0))["A"]["boot"] == max(boots) > 1


def test_pre_vote_can_be_turned_off_from_the_command_line(tmp_path):
    from lab.cli import main
    from lab.ports.trace import read_trace

    for flag, out in (([], tmp_path / "with"), (["--no-pre-vote"], tmp_path / "without")):
        main(["simulate", "k1", "--out", str(out), *flag])
    kinds = {name: {e["type"] for e in read_trace(tmp_path / name).events} for name in ("with", "without")}
    assert "prevote_started" in kinds["with"] and "prevote_started" not in kinds["without"]


@pytest.mark.processes
def test_nodes_started_without_pre_vote_say_so(tmp_path):
    with running_cluster(tmp_path, nodes=1, pre_vote=False) as sup:
        wait_until(lambda: sup.wait_for_leader(1.0), 10, "a leader")
        assert by_id(sup.state(log=0))["A"]["pre_vote"] is False
