"""What the room needs from the server: the story for a page that joins late, election clocks, links drawn on
the stage, dropping a message in flight, holding the clocks, following the instructor, replays in step time,
and messages in the room's words."""

from __future__ import annotations

from tests.dashboard.conftest import frames, make_app, received, wait_until
from tests.dashboard.test_app import connect, control
from web.fold import IDLE_SECONDS, STEP_SECONDS, Replay, play_times
from lab.core import reasons
from lab.core.reasons import Reason, Reasons
from lab.i18n import localize
from web.narrate import Narrator

# ---- the story survives a reload ------------------------------------------------------------------------------


def test_a_page_that_joins_late_sees_the_first_election_and_the_story_so_far(live, fake):
    app, socketio, dashboard = live
    first = connect(socketio, app)
    assert control(first, "write", payload="e1")["ok"]
    for _ in range(40):  # a long quiet spell: hundreds of heartbeats, far more than the recent window
        fake.run_until(lambda: False, 25)
        dashboard.tick()
    assert control(first, "read", index=2, node="B")["ok"] is False
    for _ in range(5):
        fake.run_until(lambda: False, 25)
        dashboard.tick()
    assert len(dashboard.feed.recent) == dashboard.feed.recent.maxlen  # the window holds only heartbeats now
    assert all(e["type"] in ("replication_sent", "replication_received") for e in list(dashboard.feed.recent)[:10])

    late = connect(socketio, app)
    snap = [m["args"][0] for m in received(late, "frame")][0]
    texts = [e["text"] for e in snap["events"]]
    assert any(t.startswith("A starts an election for generation 1") for t in texts)
    assert any(t.startswith("A is leader of generation 1") for t in texts)
    assert any(t.startswith("B refuses to read index 2") for t in texts)
    assert "A acknowledges the write at index 1 (generation 1)" in texts
    times = [e["time"] for e in snap["events"]]
    assert times == sorted(times)
    # the routine rest is counted, not sent
    assert snap["skipped"] > 500 and snap["skipped_by_type"]["replication_sent"] > 200
    assert len(snap["events"]) < 200


# ---- election clocks, links ------------------------------------------------------------------------------------


def test_election_clocks_travel_apart_from_the_nodes(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    snap = frames(client)[0]
    assert set(snap["clocks"]) == {"A", "B", "C"}
    b = snap["clocks"]["B"]
    assert 0 <= b["elapsed"] < b["timeout"] and b["timeout"] >= fake.sim.timing.election_ticks and b["held"] is False
    with fake.lock:
        fake.sim.kill("A")
        fake.sim.run(2)  # the last heartbeats land
    dashboard.tick()
    frame = frames(client)[-1]
    assert "A" not in frame["clocks"]  # a killed node has no clock
    before = frame["clocks"]["B"]
    with fake.lock:
        fake.sim.run(3)  # the followers' clocks run on with nobody to reset them
    dashboard.tick()
    frame = frames(client)[-1]
    assert frame["clocks"]["B"]["elapsed"] == before["elapsed"] + 3 < before["timeout"]
    assert frame["nodes"] == []  # only the clocks moved: no node is resent for them


def test_holding_the_clocks_reaches_the_control_api(live, fake):
    app, socketio, _ = live
    client = connect(socketio, app)
    assert control(client, "clocks", hold=True)["ok"]
    assert control(client, "clocks", hold=False)["ok"]
    assert [p for p in fake.posts if p[0] == "/api/ticks"] == [("/api/ticks", {"hold": True}),
                                                              ("/api/ticks", {"hold": False})]


def test_a_one_way_cut_reaches_the_page_as_one_link(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    assert control(client, "cut", src="B", dst="A", one_way=True)["ok"]
    dashboard.tick()
    frame = frames(client)[-1]
    assert frame["cluster"]["links"] == [{"src": "B", "dst": "A", "cut": True}]
    assert all(n["state"] == "running" for n in dashboard.feed.nodes.values())  # A is not cut off: only deaf to B


def test_clicking_a_message_drops_it_by_cutting_its_link_until_it_would_have_landed(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    answer = control(client, "cut_in_flight", src="A", dst="B", ms=300)
    assert answer["ok"] and answer["ms"] == 300
    assert fake.posts[-1] == ("/api/links/cut", {"src": "A", "dst": "B", "one_way": True})
    assert ("A", "B") in fake.sim.cuts and ("B", "A") not in fake.sim.cuts
    assert wait_until(lambda: ("/api/links/heal", {"src": "A", "dst": "B", "one_way": True}) in fake.posts, 5)
    assert ("A", "B") not in fake.sim.cuts
    control(client, "cut", src="A", dst="C", one_way=True)
    dashboard.tick()
    refused = control(client, "cut_in_flight", src="A", dst="C", ms=300)
    assert refused["ok"] is False and "already cut" in refused["error"]
    assert control(client, "cut_in_flight", src="A", dst="B", ms=-5)["ok"] is False
    assert control(client, "cut_in_flight", src="A", dst="Q", ms=100)["error"].startswith("no node 'Q'")


# ---- the room follows the instructor --------------------------------------------------------------------------


def test_watchers_follow_the_instructor_through_a_replay_until_they_leave(fake, tmp_path):
    from lab.harness.scenario import simulate

    trace = tmp_path / "k1"
    assert simulate("k1", seed=0, out=trace).passed
    app, socketio, dashboard = make_app(CONTROL_URL=fake.control_url, TOKEN="secret")
    dashboard.tick()
    watcher = connect(socketio, app)
    hello = received(watcher, "hello")[0]["args"][0]
    assert hello["follow"] is True and hello["can_control"] is False
    instructor = connect(socketio, app, auth={"token": "secret"})
    assert received(instructor, "hello")[0]["args"][0]["follow"] is False

    assert instructor.emit("replay_open", {"dir": str(trace)}, callback=True)["ok"]
    got = received(watcher)
    assert [m["name"] for m in got] == ["hello", "frame"]
    assert got[0]["args"][0]["mode"] == "replay" and got[0]["args"][0]["replay"]["steps"]
    assert got[1]["args"][0]["position"] == 0

    seen = instructor.emit("replay_seek", {"position": 40, "playing": True, "speed": 1}, callback=True)
    followed = frames(watcher)
    assert [f["position"] for f in followed] == [40] and followed[0]["nodes"] == seen["nodes"]
    assert followed[0]["playing"] is True

    # a late watcher starts where the instructor is
    late = connect(socketio, app)
    assert received(late, "hello")[0]["args"][0]["mode"] == "replay"

    assert watcher.emit("follow", {"on": False}, callback=True) == {"ok": True, "follow": False, "mode": "replay"}
    instructor.emit("replay_seek", {"position": 80}, callback=True)
    assert frames(watcher) == []  # left: it browses on its own
    assert [f["position"] for f in frames(late)][-1] == 80
    again = watcher.emit("follow", {"on": True}, callback=True)
    assert again["follow"] is True
    assert [f["position"] for f in frames(watcher)] == [80]  # back where the instructor is

    assert instructor.emit("go_live", None, callback=True)["ok"]
    got = received(watcher)
    assert got[0]["args"][0]["mode"] == "live" and got[1]["args"][0]["kind"] == "snapshot"
    # watchers cannot open traces, and their seeks lead nobody
    assert watcher.emit("replay_open", {"dir": str(trace)}, callback=True)["ok"] is False


# ---- replays in step time ---------------------------------------------------------------------------------------


def test_a_simulated_trace_plays_one_moment_per_tick_with_its_steps_marked(tmp_path):
    from lab.harness.scenario import simulate

    trace = tmp_path / "k1"
    assert simulate("k1", seed=0, out=trace).passed
    replay = Replay(trace)
    info = replay.info()
    assert info["stepped"] and replay.trace_duration < 3  # 0.01 s a tick: over in a blink at 1x
    assert replay.duration >= 5  # ... but a room can follow it
    steps = info["steps"]
    assert len(steps) == 5 and [s["play"] for s in steps] == sorted(s["play"] for s in steps)
    ticks = sorted({e["time"] for e in replay.events})
    assert replay.duration <= len(ticks) * STEP_SECONDS
    # events of one tick show together
    same_tick = [replay.play[i] for i, e in enumerate(replay.events) if e["time"] == replay.events[5]["time"]]
    assert len(set(same_tick)) == 1
    assert replay.position_at_time(steps[1]["play"]) >= steps[1]["n"]


def test_a_real_trace_keeps_its_pace_but_skips_idle_stretches():
    def ev(t, kind, **f):
        return {"time": t, "node": "A", "type": kind, **f}

    heartbeat = {"first": 5, "last": 4}
    events = [ev(0.0, "became_leader"), ev(0.5, "leader_append"), ev(0.7, "hwm_changed")]
    events += [ev(0.7 + 0.05 * k, "replication_sent", **heartbeat) for k in range(1, 600)]  # 30 s of heartbeats
    events += [ev(31.0, "node_killed"), ev(31.4, "election_started")]
    play = play_times(events, stepped=False)
    assert play[1] == 0.5 and play[2] == 0.7  # lively parts at their own pace
    assert abs((play[-2] - play[2]) - IDLE_SECONDS) < 1e-6  # 30 s of heartbeats in one second
    assert abs((play[-1] - play[-2]) - 0.4) < 1e-6
    assert play == sorted(play)


# ---- in the room's words ----------------------------------------------------------------------------------------


def removed(index: int, generation: int) -> Reason:
    """What `expect truncated` finds (lab.harness.scenario): entries by index and generation, not by digest."""
    return Reason(reasons.REMOVED_ENTRIES, node="A", reason="conflict",
                  entries=Reasons([Reason(reasons.ENTRY_AT, index=index, generation=generation)], ", "))


def test_messages_are_in_indexes_not_digests():
    assert removed(4, 1) == "A removed index 4 (generation 1) (conflict)"
    assert localize(removed(4, 1), "es") == "A borró el índice 4 (generación 1), por conflicto"
    narrator = Narrator()
    narrator.describe({"type": "replication_rejected", "node": "A", "from": "B", "prev_index": 4,
                       "reason": "index 4 holds generation 1, the leader's holds generation 2"})
    text = narrator.describe({"type": "next_index_backed_up", "node": "B", "follower": "A", "next_index": 1})
    assert text == "B: A's log differs at index 4; B sends again from index 1 (A keeps what matches and replaces " \
                   "what conflicts)"
    expectation = narrator.describe({"type": "expectation", "node": "cluster", "ok": True,
                                     "name": "truncated 4 on A", "detail": removed(4, 1)})
    assert "index 4 (generation 1)" in expectation


def test_guide_outcomes_reach_the_page_in_the_room_words():
    from web.app import guide_for_pages

    state = {"active": True, "outcomes": [{"ok": True, "name": "expect truncated 4 on A", "detail": removed(4, 1)}]}
    outcome = guide_for_pages(state)["outcomes"][0]
    assert localize(outcome["name"], "es") == "se espera un truncado desde 4 en A"
    assert localize(outcome["detail"], "es") == localize(removed(4, 1), "es") != str(removed(4, 1))
    assert state["outcomes"][0]["name"] == "expect truncated 4 on A"  # the guide's own state is left as it was
