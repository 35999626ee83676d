"""The dashboard server: every control reaches the control API, and every pushed update reaches the page.

Flask's test client for HTTP, Flask-SocketIO's test client for Socket.IO, a simulator behind a stand-in control
API (tests/dashboard/fake_control.py), threading mode, frames driven by hand with dashboard.tick().
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from lab.core.reasons import ABOVE_HWM, Reason

from tests.dashboard.conftest import FakeHost, frames, make_app, received, wait_until
from web.app import localized_frame

ROOT = Path(__file__).resolve().parents[2]


def connect(socketio, app, **kwargs):
    client = socketio.test_client(app, **kwargs)
    assert client.is_connected()
    return client


def control(client, action, **args):
    return client.emit("control", {"action": action, "args": args}, callback=True)


def node(frame, name):
    return next(n for n in frame["nodes"] if n["id"] == name)


# ---- pages and static files ---------------------------------------------------------------------------------


def test_index_page_uses_the_shipped_socket_io_client(live):
    app, _, _ = live
    http = app.test_client()
    page = http.get("/")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "/static/vendor/socket.io/socket.io.min.js" in html and "cdn" not in html.lower()
    script = http.get("/static/vendor/socket.io/socket.io.min.js")
    assert script.status_code == 200 and b"Socket.IO v4." in script.data[:200]
    assert "MIT" in (ROOT / "web/static/vendor/socket.io/LICENSE").read_text()
    for script in ("text.js", "stage.js", "dashboard.js"):  # strings, the stage, the page, in that order
        assert f"/static/{script}" in html and http.get(f"/static/{script}").status_code == 200
    assert html.index("text.js") < html.index("stage.js") < html.index("dashboard.js")
    assert http.get("/static/dashboard.css").status_code == 200
    assert http.get("/static/favicon.svg").status_code == 200


def test_only_loopback_names_reach_a_loopback_dashboard(live):
    app, _, _ = live
    assert app.test_client().get("/healthz", headers={"Host": "evil.example:8800"}).status_code == 403
    assert app.test_client().get("/healthz", headers={"Host": "127.0.0.1:8800"}).status_code == 200


def test_http_state_is_the_snapshot(live, fake):
    app, _, _ = live
    state = app.test_client().get("/api/dashboard/state").get_json()
    assert state["kind"] == "snapshot"
    assert [n["id"] for n in state["nodes"]] == ["A", "B", "C"]
    assert state["cluster"]["leader"] == "A"


# ---- pushed updates -------------------------------------------------------------------------------------------


def test_connect_pushes_hello_then_a_snapshot(live):
    app, socketio, _ = live
    client = connect(socketio, app)
    got = received(client)
    assert [m["name"] for m in got] == ["hello", "frame"]
    hello, snap = got[0]["args"][0], got[1]["args"][0]
    assert hello["mode"] == "live" and hello["can_control"] is True and hello["token_required"] is False
    assert snap["kind"] == "snapshot"
    a = node(snap, "A")
    assert a["role"] == "leader" and a["state"] == "running" and a["generation"] >= 1
    assert set(a) >= {"id", "state", "role", "generation", "log_end", "hwm", "match_index", "next_index", "log"}
    assert any(e["type"] == "became_leader" for e in snap["events"])
    assert all("text" in e and "n" in e for e in snap["events"])


def test_a_write_is_pushed_as_a_delta_with_cells_hwm_and_words(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    client.get_received()
    answer = control(client, "write", payload="e1")
    assert answer["ok"] and answer["index"] == 1
    fake.run_until(lambda: all(n["hwm"] == 1 for n in fake.sim.status()["nodes"]))
    dashboard.tick()
    (frame,) = frames(client)
    assert frame["kind"] == "delta" and frame["base"] == frame["seq"] - 1
    changed = {n["id"]: n for n in frame["nodes"]}
    assert set(changed) == {"A", "B", "C"}
    assert changed["B"]["log"] == [[1, 1, "e1"]] and changed["B"]["hwm"] == 1
    assert changed["A"]["match_index"]["B"] == 1 and changed["A"]["next_index"]["B"] == 2
    texts = [e["text"] for e in frame["events"]]
    assert "Client writes “e1” to A" in texts
    assert "A's high-water mark 0 → 1: index 1 committed" in texts
    # nothing changed since: no frame at all
    dashboard.tick()
    assert frames(client) == []


def test_deltas_carry_only_the_nodes_that_changed(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    client.get_received()
    with fake.lock:
        fake.sim.pause("C")
    dashboard.tick()
    (frame,) = frames(client)
    assert [n["id"] for n in frame["nodes"]] == ["C"] and frame["nodes"][0]["state"] == "paused"


def test_a_node_cut_off_from_everyone_shows_as_cut_off(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    for other in ("A", "B"):
        assert control(client, "cut", src="C", dst=other)["ok"]
    dashboard.tick()
    frame = frames(client)[-1]
    assert node(frame, "C")["state"] == "cut off"
    assert {(l["src"], l["dst"]) for l in frame["cluster"]["links"]} == {("C", "A"), ("A", "C"), ("C", "B"), ("B", "C")}


def test_thousands_of_events_make_one_frame_with_a_capped_summarised_list(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    client.get_received()
    flood = [{"time": 1.0, "node": "B", "boot": 1, "gen": 1, "type": "replication_received", "from": "A",
              "prev_index": 0, "prev_generation": 0, "first": 1, "last": 0, "hwm": 0, "seq": i}
             for i in range(5000)]
    flood.insert(2500, {"time": 1.0, "node": "C", "boot": 1, "gen": 1, "type": "truncated", "from_index": 4,
                        "removed": [[4, 1, "abc"]], "reason": "conflict", "conflicting_generation": 2, "hwm": 3,
                        "seq": 9999})
    fake.extra_events.extend(flood)
    dashboard.tick()
    (frame,) = frames(client)
    cap = app.config["EVENT_CAP"]
    assert len(frame["events"]) == cap
    assert frame["skipped"] == 5001 - cap
    assert frame["skipped_by_type"] == {"replication_received": 5001 - cap}
    kept_rare = [e for e in frame["events"] if e["type"] == "truncated"]
    assert kept_rare and kept_rare[0]["text"] == "C truncated index 4 (generation 1): conflicts with generation 2 from A"
    numbers = [e["n"] for e in frame["events"]]
    assert numbers == sorted(numbers) and numbers[-1] == frame["events_next"] - 1


def test_a_watching_page_is_sent_fewer_events_than_the_instructor_and_every_rare_one(fake):
    # A classroom: 200 students' pages on one wifi must not each be sent every event of a fast cluster.
    app, socketio, dashboard = make_app(CONTROL_URL=fake.control_url, HOST="0.0.0.0", EVENT_CAP=200,
                                        WATCHER_EVENT_CAP=25, WATCHER_FRAMES_EVERY=1)
    dashboard.tick()
    instructor = connect(socketio, app, auth={"token": app.config["TOKEN"]})
    student = connect(socketio, app)
    instructor.get_received(), student.get_received()
    flood = [{"time": 1.0, "node": "B", "boot": 1, "gen": 1, "type": "replication_received", "from": "A",
              "prev_index": 0, "prev_generation": 0, "first": 1, "last": 0, "hwm": 0, "seq": i}
             for i in range(1000)]
    for at in (100, 600):
        flood.insert(at, {"time": 1.0, "node": "C", "boot": 1, "gen": 1, "type": "truncated", "from_index": 4,
                          "removed": [[4, 1, "abc"]], "reason": "conflict", "conflicting_generation": 2, "hwm": 3,
                          "seq": 9000 + at})
    fake.extra_events.extend(flood)
    dashboard.tick()
    (whole,) = frames(instructor)
    (thin,) = frames(student)
    assert len(whole["events"]) == 200 and len(thin["events"]) == 25
    assert whole["seq"] == thin["seq"] and whole["nodes"] == thin["nodes"]  # the deltas still chain
    for f in (whole, thin):  # both count every event: those sent and those left out
        assert len(f["events"]) + f["skipped"] == 1002
        assert sum(f["skipped_by_type"].values()) == f["skipped"]
    assert [e["seq"] for e in thin["events"] if e["type"] == "truncated"] == [9100, 9600]
    numbers = [e["n"] for e in thin["events"]]
    assert numbers == sorted(numbers) and numbers[-1] == whole["events"][-1]["n"]  # the newest routine ones
    fake.extra_events.extend(flood[:10])  # a frame under the cap reaches both whole
    dashboard.tick()
    assert frames(instructor)[0]["events"] == frames(student)[0]["events"]


def test_a_watching_page_gets_every_second_frame_with_the_one_before_merged_in(fake):
    app, socketio, dashboard = make_app(CONTROL_URL=fake.control_url, HOST="0.0.0.0", WATCHER_FRAMES_EVERY=2,
                                        WATCHER_EVENT_CAP=1000)
    dashboard.tick()
    instructor = connect(socketio, app, auth={"token": app.config["TOKEN"]})
    student = connect(socketio, app)
    instructor.get_received(), student.get_received()
    control(instructor, "write", payload="m1")
    dashboard.tick()
    control(instructor, "write", payload="m2")
    dashboard.tick()
    first, second = frames(instructor)
    (both,) = frames(student)
    assert both["base"] == first["base"] and both["seq"] == second["seq"]
    assert [e["n"] for e in both["events"]] == [e["n"] for e in first["events"] + second["events"]]
    changed = {n["id"]: n for n in first["nodes"]} | {n["id"]: n for n in second["nodes"]}
    assert {n["id"]: n for n in both["nodes"]} == changed
    control(instructor, "write", payload="m3")
    dashboard.tick()  # one frame held for the student...
    assert len(frames(instructor)) == 1 and frames(student) == []
    dashboard.tick()  # ... and sent on the next tick that has nothing new
    (late,) = frames(student)
    assert late["base"] == both["seq"] and any("m3" in str(e) for e in late["events"])


def test_the_background_loop_pushes_at_most_frame_hz_frames(fake):
    fake.auto_tick = True
    import threading

    ticker = threading.Thread(target=fake._ticker, daemon=True)
    ticker.start()
    app, socketio, dashboard = make_app(CONTROL_URL=fake.control_url, AUTOSTART=True, FRAME_HZ=10)
    try:
        client = connect(socketio, app)  # starts the loop
        client.get_received()
        for i in range(30):  # a steady stream of writes: every simulator tick makes events
            control(client, "write", payload=f"w{i}")
        time.sleep(1.0)
        start = time.monotonic()
        client.get_received()
        time.sleep(2.0)
        got = frames(client)
        elapsed = time.monotonic() - start
        assert 0 < len(got) <= 10 * elapsed + 2  # heartbeats every tick, yet no more than FRAME_HZ frames
        assert all(f["kind"] == "delta" for f in got)
        assert dashboard.frames_sent >= len(got)
    finally:
        dashboard.stop()
        fake.stopping = True


def test_a_resync_answers_a_fresh_snapshot(live):
    app, socketio, _ = live
    client = connect(socketio, app)
    snap = client.emit("resync", None, callback=True)
    assert snap["kind"] == "snapshot" and len(snap["nodes"]) == 3


def test_an_unreachable_control_api_is_pushed_as_an_error(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    client.get_received()
    fake.stop()
    dashboard.tick()
    (frame,) = frames(client)
    assert frame["cluster"]["connected"] is False and "not reachable" in frame["cluster"]["error"]
    dashboard.tick()
    assert frames(client) == []  # said once


# ---- controls ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["kill", "restart", "pause", "resume", "disk-full", "disk-ok", "fsync-fail"])
def test_node_actions_reach_the_control_api(live, fake, action):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    answer = control(client, action, node="B")
    assert answer == {"ok": True, "action": action}
    assert fake.posts[-1] == (f"/api/nodes/B/{action}", {})


def test_kill_then_restart_is_pushed_with_the_state_and_the_words(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    client.get_received()
    control(client, "kill", node="A")
    dashboard.tick()
    frame = frames(client)[-1]
    assert node(frame, "A")["state"] == "killed" and node(frame, "A")["role"] is None
    assert "A killed (SIGKILL)" in [e["text"] for e in frame["events"]]
    fake.run_until(lambda: fake.sim.leader() in ("B", "C"))
    control(client, "restart", node="A")
    dashboard.tick()
    frame = frames(client)[-1]
    assert node(frame, "A")["state"] == "running"
    assert frame["cluster"]["leader"] in ("B", "C")


def test_a_failed_fsync_stops_the_node_and_the_room_reads_why(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    assert fake.run_until(lambda: fake.sim.leader() is not None)
    leader = fake.sim.leader()
    assert control(client, "fsync-fail", node=leader)["ok"]
    with fake.lock:
        fake.sim.write("x1")
    dashboard.tick()
    frame = frames(client)[-1]
    reason = "fsync failed: fsync of the write-ahead log (Input/output error)"
    assert node(frame, leader)["state"] == "exited" and node(frame, leader)["exit_reason"] == reason
    texts = [e["text"] for e in frame["events"]]
    assert f"{leader}'s disk will fail its next fsync (EIO), dropping what it was to sync" in texts
    assert f"{leader} stopped on its own: {reason}" in texts
    spanish = localized_frame(dashboard.snapshot(), "es")  # what a Spanish page gets
    assert node(spanish, leader)["exit_reason"] == "falló el fsync del WAL (error de entrada/salida)"
    assert f"{leader} se detuvo por sí solo: falló el fsync del WAL (error de entrada/salida)" in [
        e["text"] for e in spanish["events"]]


def test_links_cut_and_heal_one_way_or_both(live, fake):
    app, socketio, _ = live
    client = connect(socketio, app)
    assert control(client, "cut", src="A", dst="B", one_way=True)["ok"]
    assert fake.posts[-1] == ("/api/links/cut", {"src": "A", "dst": "B", "one_way": True})
    assert fake.sim.cuts == {("A", "B")}
    assert control(client, "cut", src="A", dst="C")["ok"]
    assert fake.sim.cuts == {("A", "B"), ("A", "C"), ("C", "A")}
    assert control(client, "heal", src="A", dst="C", one_way=False)["ok"]
    assert fake.posts[-1] == ("/api/links/heal", {"src": "A", "dst": "C", "one_way": False})
    assert fake.sim.cuts == {("A", "B")}
    assert control(client, "heal_all")["ok"]
    assert fake.posts[-1] == ("/api/links/heal", {})
    assert fake.sim.cuts == set()


def test_write_and_read_answers_come_back_to_the_page(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    answer = control(client, "write", payload="e1", node="A")
    assert answer["ok"] and answer["index"] == 1 and answer["generation"] == 1
    assert fake.posts[-1] == ("/api/write", {"payload": "e1", "node": "A", "timeout": 5.0})
    fake.run_until(lambda: fake.sim.node("C").high_water_mark == 1)
    served = control(client, "read", index=1, node="C")
    assert served["ok"] and served["payload"] == "e1"
    assert fake.posts[-1] == ("/api/read", {"index": 1, "node": "C"})


def test_in_slow_motion_a_write_waits_for_the_slower_round_trips(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    assert control(client, "settings", delay_ms=2000)["ok"]
    dashboard.tick()
    control(client, "write", payload="slow")
    assert fake.posts[-1] == ("/api/write", {"payload": "slow", "timeout": 9.0})  # two 2 s trips and some


def test_a_read_above_the_hwm_is_refused_with_the_reason(live, fake):
    app, socketio, _ = live
    client = connect(socketio, app)
    control(client, "write", payload="e1")
    fake.run_until(lambda: fake.sim.node("B").high_water_mark == 1)
    with fake.lock:
        fake.sim.isolate("A")
        fake.sim.write("e2", "A")
        fake.sim.run(5)
    answer = control(client, "read", index=2, node="A")
    assert answer["ok"] is False
    assert answer["error"] == Reason(ABOVE_HWM, index=2, hwm=1)


def test_settings_reach_the_control_api(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    answer = control(client, "settings", fsync="never", truncation="leader-epoch", delay_ms=500)
    assert answer["ok"] and answer["settings"]["delay_ms"] == 500
    assert fake.posts[-1] == ("/api/settings", {"fsync": "never", "truncation": "leader-epoch", "delay_ms": 500})
    client.get_received()
    dashboard.tick()
    frame = frames(client)[-1]
    assert frame["cluster"]["settings"]["truncation"] == "leader-epoch"
    assert "Slow motion: every message delayed 500 ms" in [e["text"] for e in frame["events"]]


@pytest.mark.parametrize("action, args, error", [
    ("kill", {"node": "Z"}, "no node 'Z'"),
    ("cut", {"src": "A", "dst": "A"}, "two different nodes"),
    ("write", {"payload": ""}, "1 to 200 characters"),
    ("read", {"index": "x", "node": "A"}, "whole number"),
    ("read", {"index": 0, "node": "A"}, "indexes start at 1"),
    ("settings", {"fsync": "sometimes"}, "fsync is one of"),
    ("settings", {"truncation": "random"}, "truncation is one of"),
    ("settings", {"delay_ms": 99999}, "0 to 60000 ms"),
    ("settings", {}, "no setting given"),
    ("start_cluster", {"nodes": 3}, "did not start"),
    ("guide_start", {"scenario": "s1"}, "guided scenarios need"),
    ("launch_missiles", {}, "unknown action"),
])
def test_bad_controls_are_refused_in_words(live, fake, action, args, error):
    app, socketio, _ = live
    client = connect(socketio, app)
    before = len(fake.posts)
    answer = control(client, action, **args)
    assert answer["ok"] is False and error in answer["error"]
    assert len(fake.posts) == before


def test_controls_also_arrive_as_http_posts(live, fake):
    app, _, _ = live
    http = app.test_client()
    answer = http.post("/api/dashboard/control/pause", json={"node": "C"})
    assert answer.status_code == 200 and answer.get_json()["ok"]
    assert fake.posts[-1] == ("/api/nodes/C/pause", {})
    refused = http.post("/api/dashboard/control/read", json={"index": 9, "node": "B"})
    assert refused.status_code == 400 and refused.get_json()["error"] == Reason(ABOVE_HWM, index=9, hwm=0)


def test_start_cluster_of_one_to_seven_nodes_on_an_owned_cluster():
    host = FakeHost()
    host.start(3)
    app, socketio, dashboard = make_app(CLUSTER_HOST=host)
    try:
        dashboard.tick()
        client = connect(socketio, app)
        assert received(client, "hello")[0]["args"][0]["owns_cluster"] is True
        answer = control(client, "start_cluster", nodes=5)
        assert answer["ok"] and answer["nodes"] == 5
        assert host.started[-1][0] == 5
        snap = frames(client)[-1]
        assert snap["kind"] == "snapshot" and snap["nodes"] == []  # the old cluster is forgotten
        dashboard.tick()
        frame = frames(client)[-1]
        assert frame["base"] == snap["seq"] and sorted(n["id"] for n in frame["nodes"]) == list("ABCDE")
        assert control(client, "start_cluster", nodes=8)["error"] == "a cluster here has 1 to 7 nodes"
        assert control(client, "start_cluster", nodes=1)["ok"]
    finally:
        host.stop()


def test_guided_scenario_next_and_back_with_progress():
    host = FakeHost()
    host.start(3)
    app, socketio, dashboard = make_app(CLUSTER_HOST=host)
    try:
        client = connect(socketio, app)
        hello = received(client, "hello")[0]["args"][0]
        assert [s["name"] for s in hello["scenarios"]] == ["s1", "k1", "k2", "f8", "n4", "d1", "r1"]
        assert not any("steps" in s for s in hello["scenarios"])  # a step's narration would tell the answer

        def guide_state():
            return dashboard.guide.state()

        started = control(client, "guide_start", scenario="s1")
        assert started["ok"] and started["guide"]["name"] == "s1"
        assert wait_until(lambda: not guide_state()["busy"])
        state = guide_state()
        assert state["done"] == 0 and state["total"] == 7 and state["error"] is None
        assert host.started[-1][2].name == "s1"  # a fresh cluster for the scenario
        for step in range(1, 4):
            assert control(client, "guide_next")["ok"]
            assert wait_until(lambda: not guide_state()["busy"], 30)
            state = guide_state()
            assert state["done"] == step and state["error"] is None, state
            assert state["text"].startswith(("A becomes leader", "Cut A off", "Reads of index 4"))
            assert all(o["ok"] for o in state["outcomes"])
        assert any("read 4 refused" in o["name"] for o in state["outcomes"])
        pushed = []

        def pushed_up_to(step):  # the push follows the state: the guide clears `busy`, then tells the pages
            pushed.extend(m["args"][0] for m in received(client, "guide"))
            return bool(pushed) and pushed[-1]["done"] == step

        assert wait_until(lambda: pushed_up_to(3), 10), pushed[-1:] or "nothing pushed"
        going_back = control(client, "guide_back")
        assert going_back["ok"]
        # while it rebuilds, the page is told where it is going (not "step 4 of 7")
        assert (going_back["guide"]["action"], going_back["guide"]["target"]) == ("back", 2)
        assert wait_until(lambda: not guide_state()["busy"], 30)
        state = guide_state()
        assert state["done"] == 2 and state["error"] is None and state["action"] is None
        assert len(host.started) == 3  # back = a fresh cluster replayed to the step before
        assert control(client, "guide_state")["guide"]["done"] == 2
        assert control(client, "guide_next")["ok"]
        assert wait_until(lambda: not guide_state()["busy"], 30)
        assert control(client, "guide_stop")["guide"]["active"] is False
        assert control(client, "guide_next")["error"] == "start a scenario first"
    finally:
        host.stop()


# ---- replay -------------------------------------------------------------------------------------------------


@pytest.fixture
def sim_trace(tmp_path):
    from lab.harness.scenario import simulate

    out = tmp_path / "s1"
    verdict = simulate("s1", seed=3, out=out)
    assert verdict.passed
    return out


def test_replay_mode_scrubs_back_and_forth(sim_trace):
    app, socketio, dashboard = make_app(REPLAY_DIR=str(sim_trace))
    client = connect(socketio, app)
    got = received(client)
    hello = got[0]["args"][0]
    assert hello["mode"] == "replay" and hello["replay"]["events"] == len(dashboard.replay)
    assert [s["text"][:10] for s in hello["replay"]["steps"]][0] == "A becomes "
    # a step the room may be asked about keeps its narration out of the page until it plays (issue 51)
    steps, asked = hello["replay"]["steps"], dashboard.replayed.questions
    assert [bool(s["text"]) for s in steps] == [not q for q in asked] and any(asked)
    held = next(k for k, q in enumerate(asked) if q)
    before = client.emit("replay_seek", {"position": steps[held]["start"] - 1}, callback=True)
    assert before["step_now"]["k"] == held and dashboard.replay.steps()[held]["text"] not in repr(before)
    playing = client.emit("replay_seek", {"position": steps[held]["start"]}, callback=True)
    assert playing["step_now"] == {"k": held + 1, "text": dashboard.replay.steps()[held]["text"]}
    assert got[1]["args"][0]["position"] == 0
    total = hello["replay"]["events"]
    end = client.emit("replay_seek", {"position": total}, callback=True)
    assert end["position"] == total
    logs = {n["id"]: [c[2] for c in n["log"]] for n in end["nodes"]}
    assert logs == {"A": ["e1", "e2", "e3", "e5"], "B": ["e1", "e2", "e3", "e5"], "C": ["e1", "e2", "e3", "e5"]}
    truncations = [e for e in dashboard.replay.events if e["type"] == "truncated"]
    where = dashboard.replay.events.index(truncations[0]) + 1
    before = client.emit("replay_seek", {"position": where - 1}, callback=True)
    after = client.emit("replay_seek", {"position": where}, callback=True)
    assert [c[2] for c in node(before, "A")["log"]][-1] == "e4"
    assert [c[2] for c in node(after, "A")["log"]] == ["e1", "e2", "e3"]
    leader = dashboard.replay.fold_at(where).nodes["A"]["leader"]
    generation = truncations[0]["conflicting_generation"]
    assert after["events"][-1]["text"] == \
        f"A truncated index 4 (generation 1): conflicts with generation {generation} from {leader}"
    back = client.emit("replay_seek", {"position": 10}, callback=True)
    assert back["position"] == 10 and len(back["events"]) == 10
    by_time = client.emit("replay_seek", {"time": after["play"]}, callback=True)  # the replay's own clock
    assert by_time["position"] >= where and by_time["play"] == after["play"]


def test_replay_open_from_a_live_dashboard_and_back(live, sim_trace, tmp_path):
    app, socketio, _ = live
    client = connect(socketio, app)
    client.get_received()
    bad = client.emit("replay_open", {"dir": str(tmp_path / "nowhere")}, callback=True)
    assert bad["ok"] is False and "not a trace directory" in bad["error"]
    answer = client.emit("replay_open", {"dir": str(sim_trace)}, callback=True)
    assert answer["ok"] and answer["replay"]["meta"]["scenario"] == "s1"
    got = received(client)
    assert got[0]["name"] == "hello" and got[0]["args"][0]["mode"] == "replay"
    assert client.emit("go_live", None, callback=True)["ok"]
    got = received(client)
    assert got[0]["args"][0]["mode"] == "live" and got[1]["args"][0]["kind"] == "snapshot"


# ---- security ---------------------------------------------------------------------------------------------------


def test_classroom_mode_needs_the_instructor_token_for_controls(fake):
    app, socketio, dashboard = make_app(CONTROL_URL=fake.control_url, HOST="0.0.0.0")
    token = app.config["TOKEN"]
    assert token and len(token) >= 16
    dashboard.tick()
    viewer = connect(socketio, app)
    got = received(viewer)
    hello = got[0]["args"][0]
    assert hello["can_control"] is False and hello["token_required"] is True
    assert got[1]["args"][0]["kind"] == "snapshot"  # viewers still watch
    refused = control(viewer, "kill", node="A")
    assert refused["ok"] is False and "instructor token" in refused["error"]
    assert fake.posts == []
    with fake.lock:
        fake.sim.pause("C")
    dashboard.tick()
    dashboard.tick()  # a watching page is sent the frames held for it on the next tick (WATCHER_FRAMES_EVERY)
    assert node(frames(viewer)[-1], "C")["state"] == "paused"
    instructor = connect(socketio, app, auth={"token": token})
    assert received(instructor, "hello")[0]["args"][0]["can_control"] is True
    assert control(instructor, "kill", node="A")["ok"]
    wrong = connect(socketio, app, auth={"token": "guess"})
    assert control(wrong, "pause", node="B")["ok"] is False
    http = app.test_client()
    assert http.post("/api/dashboard/control/pause", json={"node": "B"}).status_code == 403
    assert http.post("/api/dashboard/control/pause", json={"node": "B"},
                     headers={"X-HWM-Token": token}).status_code == 200


def test_socket_io_checks_origins(live):
    app, socketio, dashboard = live
    app.config["PORT"] = 8800
    evil = socketio.test_client(app, headers={"Origin": "http://evil.example"})
    assert not evil.is_connected()
    other_port = socketio.test_client(app, headers={"Origin": "http://127.0.0.1:9999"})
    assert not other_port.is_connected()
    own = socketio.test_client(app, headers={"Origin": "http://127.0.0.1:8800"})
    assert own.is_connected()
    # the Engine.IO layer gets the same rule for real browsers
    assert dashboard.origin_ok("http://localhost:8800", "localhost:8800")
    assert not dashboard.origin_ok("http://evil.example:8800", "evil.example:8800")
    http = app.test_client()
    assert http.post("/api/dashboard/control/pause", json={"node": "B"},
                     headers={"Origin": "http://evil.example"}).status_code == 403


def test_classroom_origin_is_the_page_own_host(fake):
    app, socketio, dashboard = make_app(CONTROL_URL=fake.control_url, HOST="0.0.0.0")
    assert dashboard.origin_ok("http://10.0.0.5:8800", "10.0.0.5:8800")
    assert not dashboard.origin_ok("http://evil.example", "10.0.0.5:8800")


def test_threading_and_eventlet_are_one_setting():
    app, socketio, _ = make_app()
    assert socketio.async_mode == "threading"
    with pytest.raises(ValueError):
        make_app(ASYNC_MODE="gevent")
    code = ("import sys; from web.app import create_app; app = create_app({'AUTOSTART': False}); "
            "assert app.extensions['socketio'].async_mode == 'eventlet'; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


def test_importing_the_dashboard_patches_nothing_and_never_imports_pyspark():
    code = ("import sys, socket; import web.app, web.cli, web.live, web.fold, web.guide, web.cluster, web.serve; "
            "assert 'pyspark' not in sys.modules, 'pyspark'; "
            "import eventlet.patcher as p; assert not p.is_monkey_patched('socket'); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
    for path in (ROOT / "web").rglob("*.py"):
        assert "pyspark" not in path.read_text(), path


def test_a_node_that_did_not_answer_is_shown_with_its_last_known_figures():
    from web.frames import shape_node

    node = {"id": "A", "state": "running", "role": "leader", "generation": 1, "log_end": 3, "hwm": 3,
            "log": [[1, 1, "e1"], [2, 1, "e2"], [3, 1, "e3"]], "unresponsive": "timed out"}
    assert shape_node(node, 48)["stale"] is True
    assert shape_node({**node, "unresponsive": None}, 48)["stale"] is False
    assert shape_node({**node, "state": "killed", "stale": True}, 48)["stale"] is False  # killed says enough
    assert shape_node({**node, "log": [[i, 1, "x" * 40] for i in range(1, 101)]}, 48)["log_start"] == 53


def test_every_event_a_page_sends_has_its_handler_in_the_table():
    import re

    from web.sockets import EVENTS, Pages

    sent = set()
    for script in (ROOT / "web" / "static").glob("*.js"):
        sent |= set(re.findall(r'\.emit\("(\w+)"', script.read_text()))
    assert sent and sent <= set(EVENTS) - {"connect", "disconnect"}, sent - set(EVENTS)
    assert all(callable(getattr(Pages, method, None)) for method in EVENTS.values())
