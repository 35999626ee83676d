"""R1's stale read as the dashboard shows it, without a browser: the room's question and its reason from the model,
the feed's line marked (in the reader's language), the sequence view's mark on C, the history view's drawing, and
the one-file page's copy of it."""

from __future__ import annotations

import pytest

from lab.harness import script as scripts
from lab.harness.scenario import simulate
from lab.i18n import localize
from lab.i18n.sequence import sequence_svg
from tests.dashboard.conftest import make_app
from web.fold import Replay
from web.questions import REFUSED, SERVED, Ask, Model


@pytest.fixture(scope="module")
def r1_trace(tmp_path_factory):
    out = tmp_path_factory.mktemp("r1")
    assert simulate("r1", out=out).passed
    return out


def test_the_room_is_asked_whether_c_will_serve_index_4_and_the_reveal_says_both_marks():
    model = Model(scripts.load("r1"))
    (before_step_3,) = model.questions(2)
    assert before_step_3.ask == Ask("read", "C", 4)
    assert before_step_3.values == (SERVED, REFUSED) and before_step_3.values[before_step_3.right] == REFUSED
    why = localize(before_step_3.why, "en")
    assert "C's high-water mark is 3, below index 4" in why and "the leader A's mark is 4" in why
    assert "marca de agua alta del líder A es 4" in localize(before_step_3.why, "es")
    (after_heal,) = model.questions(4)
    assert after_heal.values[after_heal.right] == SERVED  # C learns the mark once the cut heals


def test_the_feed_marks_the_stale_reads_answer_in_the_readers_language(r1_trace):
    replay = Replay(r1_trace)
    (n,) = replay.stale_reads
    event = replay.event(n)
    assert event["type"] == "client_answer" and event["stale"] is True and event["answered_by"] == "C"
    assert localize(event["text"], "en") == ("Stale read: C refused index 4 with its mark at 3, after A had "
                                             "acknowledged a write at index 4 to a client; the leader A's mark is 4")
    assert localize(event["text"], "zh").startswith("陈旧读：C 在其高水位标记为 3 时拒绝了索引 4")
    assert not any(replay.event(k).get("stale") for k in range(1, len(replay) + 1) if k != n)


def test_the_sequence_view_marks_the_stale_read_on_the_node_that_refused_it(r1_trace):
    replay = Replay(r1_trace)
    svg = sequence_svg(replay.events, lang="es")
    assert svg.count('class="mark stale" data-node="C"') == 1
    assert "✗ lectura obsoleta 4: HWM 3, líder A 4" in svg


def test_the_history_view_and_the_one_file_page_draw_the_stale_read(r1_trace):
    from web import onefile

    app, socketio, dashboard = make_app(REPLAY_DIR=str(r1_trace))
    try:
        drawn = app.test_client().get("/history.svg?mode=replay&lang=zh")
        assert drawn.status_code == 200 and drawn.mimetype == "image/svg+xml"
        svg = drawn.get_data(as_text=True)
        assert svg.count('class="op stale"') == 1 and "4@C 陈旧" in svg
    finally:
        dashboard.stop()
    data = onefile.run_data(Replay(r1_trace))
    assert set(data["history"]) == {"en", "es", "zh"}
    assert all(svg.count('class="op stale"') == 1 for svg in data["history"].values())
    assert [e["n"] for e in data["events"] if e.get("stale")] == sorted(Replay(r1_trace).stale_reads)
