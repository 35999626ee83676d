"""A run in one file, without a browser (web/onefile.py): what a file keeps of a long run (the live feed's choice),
its frames against the server's, that it names nothing outside itself, the same file from the same run, the
command `hwm-lab replay DIR --html FILE` (a failed one leaves the old file), and the replay page's "save as one
file". The file in Chromium: tests/dashboard/test_onefile_browser.py."""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import re
from collections import Counter

import pytest

from lab.cli import main
from lab.harness.scenario import simulate
from tests.dashboard.conftest import make_app
from web.fold import Replay
from web.frames import replay_frame
from web.live import ROUTINE, STORY, STORY_HEAD
from web.onefile import SCRIPTS, STATIC, build, kept_positions, run_data


@pytest.fixture(scope="module")
def s1(tmp_path_factory):
    out = tmp_path_factory.mktemp("onefile") / "s1"
    assert simulate("s1", seed=3, out=out).passed
    return out


def data_of(page: str, part: str = "run") -> dict:
    """A part of a file: its run, or its page (style sheets, markup, catalogues, scripts)."""
    blob = re.search(rf'<script type="application/octet-stream" id="hwm-{part}">([^<]*)</script>', page).group(1)
    return json.loads(gzip.decompress(base64.b64decode(blob)))


def test_a_short_run_keeps_every_event_and_a_long_one_the_live_feeds_choice(s1):
    events = Replay(s1).events
    assert kept_positions(events) == list(range(1, len(events) + 1))
    rare = [n for n, e in enumerate(events, start=1) if e["type"] not in ROUTINE]
    keep = len(rare) + 20
    kept = kept_positions(events, keep)
    assert len(kept) == keep and kept == sorted(kept)
    assert set(rare) <= set(kept)  # every rare event, then the newest routine ones
    routine_kept = [n for n in kept if n not in rare]
    routine = [n for n, e in enumerate(events, start=1) if e["type"] in ROUTINE]
    assert routine_kept == routine[-20:]
    few = kept_positions(events, 12)  # fewer than the rare ones: the run's first story events, the newest rare
    head = [n for n, e in enumerate(events, start=1) if e["type"] in STORY][:min(STORY_HEAD, 12 // 4)]
    assert len(few) == 12 and set(head) <= set(few) and set(rare[-9:]) <= set(few)


def test_a_thinned_files_frames_hold_the_true_state_and_count_what_they_leave_out(s1):
    replay = Replay(s1)
    data = run_data(replay, keep=60)
    kept = [e["n"] for e in data["events"]]
    assert [f[0] for f in data["frames"]] == [0, *kept] and len(kept) == 60
    for position, time, play, cluster, nodes, skipped in data["frames"]:
        want = json.loads(json.dumps(replay_frame(replay, position, log_window=48)))
        assert [data["nodes"][i] for i in nodes] == want["nodes"] and data["clusters"][cluster] == want["cluster"]
        assert (time, play) == (want["time"], want["play"])
        left_out = Counter(e["type"] for n, e in enumerate(replay.events[:position], start=1) if n not in kept)
        assert data["skipped"][skipped] == dict(left_out)
    assert sum(data["skipped"][data["frames"][-1][5]].values()) == len(replay) - 60
    assert data["info"]["es"]["shown"] == 60 and data["info"]["es"]["events"] == len(replay)
    assert data["texts"]["es"][0] != data["texts"]["en"][0]  # every language's words


def test_the_file_names_nothing_outside_itself_and_is_the_same_from_the_same_run(s1):
    first, second = build(s1), build(s1)
    assert first.html == second.html and first.kept == first.events == len(Replay(s1))
    part = data_of(first.html, "page")
    assert set(part["views"]) == {"en", "es", "zh"} and len(part["scripts"]) == len(SCRIPTS)
    # the page's own scripts, every one the dashboard's page loads, in its order (the vendored Socket.IO aside)
    # (text.js, then the modules its import map names, web/scripts.py)
    app, _, dashboard = make_app(REPLAY_DIR=str(s1))
    page = app.test_client().get("/").get_data(as_text=True)
    dashboard.stop()
    assert list(SCRIPTS) == list(dict.fromkeys(re.findall(r'/static/([a-z]+\.js)"', page)))
    page = "\n".join([first.html, part["css"], *part["scripts"], *(v["body"] for v in part["views"].values())])
    assert not re.search(r"\ssrc=", page)  # no script, image or frame from elsewhere
    assert not re.search(r'\shref="(?!#|data:)', page)  # in-page anchors and data: URLs only
    assert "url(" not in part["css"] and "@import" not in part["css"]
    assert set(re.findall(r"https?://[^\s\"'<>)]+", page)) == {"http://www.w3.org/2000/svg"}  # a namespace
    assert "replay.html" not in page and "socket.io.min.js" not in page  # no save button, no Socket.IO
    assert str(s1) not in page  # the writer's folders are not the reader's
    assert part["views"]["es"]["i18n"]["messages"]["▶ Play"] == "▶ Reproducir"
    data = data_of(first.html)
    assert set(data["sequence"]) == {"from", "to", "en", "es", "zh"} and data["sequence"]["to"] == len(Replay(s1))
    assert 'data-n="' in data["sequence"]["en"]["plain"]


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_the_command_writes_the_file_and_a_failed_one_leaves_the_old(s1, tmp_path):
    out = tmp_path / "s1.html"
    code, said, _ = cli("replay", str(s1), "--html", str(out))
    assert code == 0 and re.fullmatch(rf"{re.escape(str(out))}: \d+ events, \d+ KB\. Open it in a browser: it "
                                      r"needs no server and no network\.\n", said)
    before = out.read_bytes()
    code, _, err = cli("replay", str(tmp_path / "nowhere"), "--html", str(out))
    assert code == 2 and "is not a trace directory" in err and out.read_bytes() == before
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "trace.json").write_text("{not json")
    assert cli("replay", str(tmp_path / "broken"), "--html", str(out))[0] == 2 and out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "s1.html"]  # nothing left aside


def test_the_replay_page_saves_the_open_replay_as_one_file(s1, live):
    app, socketio, dashboard = make_app(REPLAY_DIR=str(s1))
    answer = app.test_client().get("/replay.html")
    assert answer.status_code == 200 and answer.mimetype == "text/html"
    assert answer.headers["Content-Disposition"] == 'attachment; filename="s1-generation-seed3.html"'
    assert data_of(answer.get_data(as_text=True))["info"]["en"]["events"] == len(dashboard.replay)
    index = app.test_client().get("/").get_data(as_text=True)
    assert 'id="btn-save-file"' in index and 'href="replay.html"' in index
    live_app = live[0]  # a dashboard on a live cluster has no replay open
    assert live_app.test_client().get("/replay.html").status_code == 404


def test_a_nodes_reason_for_stopping_is_said_in_each_language(tmp_path):
    from lab.core.reasons import FSYNC_FAILED_EXIT, Reason
    from lab.i18n import localize

    (tmp_path / "trace.json").write_text(json.dumps({"format": "hwm-lab-trace", "version": 1, "run": "stopped",
                                                     "source": "real", "nodes": ["A", "B", "C"]}))
    lines = [{"type": "cluster_started", "nodes": ["A", "B", "C"]},
             {"type": "node_exited", "target": "A", "code": 74, "reason": "fsync failed (exit code 74; see its "
              "node.log)", "because": {"reason": {"kind": FSYNC_FAILED_EXIT, "code": 74}}}]
    (tmp_path / "events-cluster.jsonl").write_text("".join(
        json.dumps({"v": 1, "seq": k, "time": k / 10, "node": "cluster", "boot": 0, "gen": 0, **line}) + "\n"
        for k, line in enumerate(lines, start=1)))
    data = run_data(Replay(tmp_path))
    last = data["frames"][-1]
    a = next(i for i in last[4] if data["nodes"][i]["id"] == "A")
    assert data["nodes"][a]["state"] == "exited"
    spanish = localize(Reason(FSYNC_FAILED_EXIT, code=74), "es")
    assert spanish != data["nodes"][a]["exit_reason"] and data["exit_reasons"]["es"] == {a: spanish}
    assert data["exit_reasons"]["en"] == {a: "fsync failed (exit code 74; see its node.log)"}
