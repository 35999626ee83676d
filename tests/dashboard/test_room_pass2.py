"""The room, second pass: the feed never quotes a stale index, the guide's narration reads without Markdown marks,
a replay at event 0 shows nodes that have not started (not killed ones), and a guided scenario asks before it
replaces a live cluster that holds the room's entries."""

from __future__ import annotations

import re

import pytest

from lab.i18n import localize
from lab.i18n import scenarios as words
from lab.harness import script as scripts
from lab.harness.scenario import simulate
from tests.dashboard.conftest import FakeHost, make_app, wait_until
from tests.dashboard.test_app import connect, control
from web.fold import Replay
from web.narrate import Narrator

DIFFERS = re.compile(r"^(\w)+: (\w)'s log differs at index (\d+); \w sends again from index (\d+)")


# ---- the feed quotes only the refusal it answers -----------------------------------------------------------------


def test_a_retry_quotes_its_own_refusal_not_one_of_long_ago():
    narrator = Narrator()
    # 100 s earlier: B refused after index 4, A backed up (quoted, once)
    narrator.describe({"type": "replication_rejected", "node": "B", "from": "A", "prev_index": 4, "reason": "x"})
    first = narrator.describe({"type": "next_index_backed_up", "node": "A", "follower": "B", "next_index": 4})
    assert "differs at index 4" in first
    # now: A's retry reaches the feed before B's refusal (two nodes' events, two polls); an old trace's event
    narrator.describe({"type": "replication_rejected", "node": "B", "from": "A", "prev_index": 4, "reason": "x"})
    old = narrator.describe({"type": "next_index_backed_up", "node": "A", "follower": "B", "next_index": 12})
    assert "index 4" not in old and "sends again from index 12" in old
    # a new trace's event says where B refused: that index, whatever the order
    new = narrator.describe({"type": "next_index_backed_up", "node": "A", "follower": "B", "next_index": 12,
                             "refused_after": 12})
    assert new.startswith("A: B's log differs at index 12; A sends again from index 12")


@pytest.mark.parametrize("name,truncation", [("s1", None), ("k1", None), ("s1", "high-water-mark")])
def test_every_index_the_feed_quotes_is_the_refusal_just_before_it(tmp_path, name, truncation):
    """S1 and K1 on the simulator; each node's events are fed in order but the nodes' streams one after the other
    per tick window, as polls of real processes deliver them. Each quoted index is checked against the trace."""
    verdict = simulate(name, seed=3, out=tmp_path / "t", truncation=truncation)
    events = Replay(str(tmp_path / "t")).events
    narrator = Narrator()
    quoted = 0
    shuffled = sorted(events, key=lambda e: (int(e.get("time", 0)), e.get("node") != "A"))  # leader A first
    for e in shuffled:
        text = narrator.describe(e)
        m = DIFFERS.match(text)
        if m:
            quoted += 1
            assert int(m.group(3)) == e["refused_after"], (text, e)
            assert int(m.group(4)) <= int(m.group(3))
    assert verdict.passed and quoted >= 1


# ---- narration without Markdown ----------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "es", "zh"])
def test_the_guides_narration_shows_no_markdown_backticks(lang):
    for name in ("s1", "k1", "k2"):
        s = scripts.load(name)
        raw = [step.text for step in s.steps]
        assert any("`" in t for t in raw + [s.description]), "the scripts do mark code: the test must see it"
        texts = words.steps(s) + [words.title(s), words.description(s)]
        for text in texts:
            said = localize(text, lang)
            assert "`" not in said, (name, lang, said)
        if lang == "en":
            assert "with the high-water-mark strategy" in " ".join(map(str, texts)) or name != "s1"
    # the trace records the English text with its marks: the replay's step list reads it without them
    s1 = scripts.load("s1")
    marked = next(step.text for step in s1.steps if "`" in step.text)
    assert "`" not in localize(words.step_text(marked), lang)
    assert "`" not in words.step_text("a step `of` another script")


# ---- a replay at event 0 ----------------------------------------------------------------------------------------


def test_a_replay_at_event_0_shows_nodes_not_yet_started(tmp_path):
    simulate("s1", seed=3, out=tmp_path / "t")
    replay = Replay(str(tmp_path / "t"))
    start = replay.fold_at(0)
    assert start.nodes, "the trace names its nodes"
    assert {n["state"] for n in start.nodes.values()} == {"starting"}
    kills = [i for i, e in enumerate(replay.events) if e["type"] == "node_killed"]
    if kills:  # a real kill still shows as one
        assert replay.fold_at(kills[0] + 1).nodes[replay.events[kills[0]]["target"]]["state"] == "killed"


# ---- a guided scenario asks before it replaces the room's cluster ------------------------------------------------


@pytest.fixture
def led_room():
    """A dashboard over a fake cluster of three whose leader is A, a page connected to it, and one frame sent."""
    host = FakeHost()
    host.start(3)
    host.fake.elect("A")
    app, socketio, dashboard = make_app(CLUSTER_HOST=host)
    try:
        client = connect(socketio, app)
        dashboard.tick()
        yield host, client, dashboard
    finally:
        dashboard.stop()
        host.stop()


def test_a_guided_scenario_asks_before_replacing_a_cluster_with_entries(led_room):
    host, client, dashboard = led_room
    assert control(client, "write", payload="e1")["ok"]
    dashboard.tick()
    asked = control(client, "guide_start", scenario="s1")
    assert asked["ok"] is False and "replaces the live cluster (log end 1)" in asked["confirm"]
    assert len(host.started) == 1 and dashboard.guide.scenario is None  # nothing replaced
    started = control(client, "guide_start", scenario="s1", replace=True)
    assert started["ok"] and started["guide"]["name"] == "s1"
    assert wait_until(lambda: not dashboard.guide.state()["busy"], 30)
    assert len(host.started) == 2
    # a scenario running: another one asks too
    again = control(client, "guide_start", scenario="k1")
    assert again["ok"] is False and again["confirm"]


def test_a_scenario_started_right_after_a_write_asks_too(led_room):
    """The question reads the cluster as it answers, not the pages' feed, which lags a write by a frame or more."""
    host, client, dashboard = led_room
    assert control(client, "write", payload="e1")["ok"]  # no tick: the feed has not seen it
    assert max((n.get("log_end") or 0 for n in dashboard.feed.nodes.values()), default=0) == 0
    asked = control(client, "guide_start", scenario="s1")
    assert asked["ok"] is False and "replaces the live cluster (log end 1)" in asked["confirm"]
    assert len(host.started) == 1 and dashboard.guide.scenario is None


# ---- the sequence view, from the dashboard ---------------------------------------------------------------------


def test_the_sequence_view_follows_the_replays_cursor(tmp_path):
    import xml.etree.ElementTree as ET

    simulate("s1", seed=3, out=tmp_path / "t")
    app, socketio, dashboard = make_app(REPLAY_DIR=str(tmp_path / "t"))
    http = app.test_client()
    events = dashboard.replay.events
    cut = next(i for i, e in enumerate(events) if e["type"] == "link_cut")
    sent = next(i for i, e in enumerate(events) if e["type"] == "replication_sent" and e["first"] <= e["last"])

    def view(position, **extra):
        answer = http.get("/sequence.svg", query_string={"mode": "replay", "position": position, **extra})
        assert answer.status_code == 200 and answer.mimetype == "image/svg+xml"
        return answer.get_data(as_text=True)

    start, at_send, before_cut, after_cut, end = (view(0), view(sent + 1), view(cut), view(cut + 1),
                                                   view(len(events)))
    ET.fromstring(end)
    count = lambda svg: svg.count('class="msg ')  # noqa: E731
    assert count(start) == 0 and 0 < count(at_send) < count(before_cut) <= count(after_cut) < count(end)
    assert 'flying' in at_send and "flying" not in end  # at the cursor, the message is on its way
    assert "✂ cut" not in before_cut and "✂ cut" in after_cut
    assert "truncates from 4" in end and "truncates from 4" not in after_cut
    assert "♥" not in end and "♥" in view(len(events), heartbeats="1")
    assert "matado" in view(len(events), lang="es")
    saved = http.get("/sequence.svg", query_string={"mode": "replay", "position": 5, "download": "1"})
    assert "attachment" in saved.headers["Content-Disposition"]


def test_the_sequence_view_of_a_live_cluster_draws_its_last_seconds(live, fake):
    app, socketio, dashboard = live
    client = connect(socketio, app)
    assert control(client, "write", payload="e1")["ok"]
    with fake.lock:
        fake.sim.run(10)
    dashboard.tick()
    svg = app.test_client().get("/sequence.svg?seconds=5").get_data(as_text=True)
    assert [n for n in ("A", "B", "C") if f'data-node="{n}"' in svg] == ["A", "B", "C"]
    assert "append 1" in svg and "ack 1" in svg and "e1 at 1" in svg


# ---- every sentence the page builds reaches it translated ------------------------------------------------------


@pytest.mark.parametrize("lang", ["es", "zh"])
def test_every_sentence_of_text_js_is_in_the_pages_catalogue(lang):
    import json
    from pathlib import Path

    from lab.i18n import for_page

    source = (Path(__file__).resolve().parents[2] / "web" / "static" / "text.js").read_text(encoding="utf-8")
    msgids = {json.loads(m) for m in re.findall(r'\bt\(("(?:[^"\\]|\\.)*")', source)}
    assert len(msgids) > 50 and "the last {seconds} s" in msgids
    page = for_page(lang)
    missing = sorted(m for m in msgids if m not in page)
    assert missing == [], missing
