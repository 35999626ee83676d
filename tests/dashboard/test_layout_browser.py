"""Long logs on a projector, in Debian's Chromium against `hwm-lab replay` of simulated traces (no node processes):
at 3, 5 and 7 nodes, 1280x720 and 1920x1080, normal and large type, every lane's newest entry, HWM bar and tag, the
"above HWM" tag and the leader's line and label are on screen and no label of the stage, the header, the legend or
the feed is cut. Also: a replay at event 0 shows no node as killed, and the message-sequence view moves with the
replay's cursor and exports an SVG that Chromium opens. The acceptance picture goes to docs/img."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.dashboard.browser import (BROWSER_MARKS, CUT, FEED_ROWS, OUTSIDE_VIEWPORT, ROOT, SIZES, chromium,
                                    open_page, shots_dir)

pytestmark = BROWSER_MARKS

# Each lane's newest entry, its HWM bar and tag: present (drawn), inside the track.
NEWEST = """() => [...document.querySelectorAll('.lane')].map((lane) => {
  const end = window.hwmState.nodes[lane.dataset.node].log_end;
  const newest = [...lane.querySelectorAll('.cell:not(.collapsed) .i')].some((i) => Number(i.textContent) === end);
  return [lane.dataset.node, newest, !!lane.querySelector('.mark'), !!lane.querySelector('.mark-label')];
})"""


# Installed in the page: on every animation frame, any heartbeat in flight that covers a label of the stage.
WATCH_OVERLAPS = """() => {
  window.overlaps = []; window.heartbeatsSeen = 0;
  const look = () => {
    const labels = [...document.querySelectorAll('.above-label, .index-marker, .mark-label, .hwm-label')]
      .filter((e) => e.getClientRects().length).map((e) => [e.textContent, e.getBoundingClientRect()]);
    document.querySelectorAll('#wires .flight.quiet').forEach((f) => {
      if (Number(f.getAttribute('opacity')) === 0) return;
      window.heartbeatsSeen += 1;
      const r = f.getBoundingClientRect();
      for (const [text, l] of labels)
        if (r.left < l.right && r.right > l.left && r.top < l.bottom && r.bottom > l.top)
          window.overlaps.push(f.textContent + ' over ' + text);
    });
    requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
}"""


def overlap(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"] and \
        a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]


CELL_WIDTH = ("Math.min(...[...document.querySelectorAll('.cell:not(.collapsed)')]"
              ".map((c) => c.getBoundingClientRect().width))")


@contextmanager
def replay_server(trace_dir: Path, log_path: Path):
    """`hwm-lab replay DIR` in its own session; stopped with Ctrl-C, then killed if it must be."""
    log = open(log_path, "w")
    proc = subprocess.Popen([sys.executable, "-m", "lab.cli", "replay", str(trace_dir), "--port", "0"], cwd=ROOT,
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline, url = time.monotonic() + 60, None
        while url is None and time.monotonic() < deadline:
            match = re.search(r"(http://\S+:\d+/\S*)", log_path.read_text())  # (the dashboard's, in any language)
            url = match.group(1) if match else None
            if proc.poll() is not None:
                raise AssertionError(f"hwm-lab replay exited:\n{log_path.read_text()}")
            time.sleep(0.2)
        assert url, log_path.read_text()
        yield url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(5)
        log.close()


def long_log_trace(out: Path, nodes: int, committed: int = 37, above: int = 3) -> Path:
    """A simulated run: `committed` entries on every node, then the leader cut off and `above` more on it alone."""
    from lab.sim.cluster import SimCluster

    sim = SimCluster(nodes, seed=1, trace_dir=out)
    sim.campaign("A")
    assert sim.run_until(lambda: sim.leader() == "A", 500)
    for i in range(1, committed + 1):
        sim.write(f"e{i}")
        sim.run(3)
    sim.run(30)
    sim.isolate("A")
    for i in range(committed + 1, committed + above + 1):
        sim.write(f"e{i}", node="A")
    sim.run(5)
    sim.close()
    return out


def seek_end(page) -> None:
    total = page.evaluate("window.hwmState.total")
    page.evaluate("(n) => window.hwmSeek({position: n})", total)
    page.wait_for_function("(n) => window.hwmState.position === n", arg=total)


@pytest.mark.parametrize("nodes", [3, 5, 7])
def test_a_long_log_stays_on_screen_uncut_at_every_projector_size(tmp_path, nodes):
    trace = long_log_trace(tmp_path / "trace", nodes)
    errors: list[str] = []
    shots = shots_dir("layout")
    with replay_server(trace, tmp_path / "replay.log") as url, chromium() as browser:
        page = open_page(browser, url, errors)
        page.wait_for_selector(".lane")
        seek_end(page)
        for size in ("720p", "1080p"):
            page.set_viewport_size(SIZES[size])
            for large in (False, True):
                if page.evaluate("document.body.classList.contains('large')") != large:
                    page.keyboard.press("l")
                page.wait_for_timeout(800)  # cells slide to their new places
                where = f"{nodes} nodes, {size}, large={large}"
                assert page.evaluate(OUTSIDE_VIEWPORT) == [], where
                assert page.evaluate(CUT) == [], where
                lanes = page.evaluate(NEWEST)
                assert len(lanes) == nodes and all(newest and bar and tag for _, newest, bar, tag in lanes), (where,
                                                                                                         lanes)
                assert page.locator("#lane-A .above-label").is_visible(), where  # A holds 3 entries above its mark
                assert page.locator("#hwm-line .hwm-label").is_visible(), where
                assert page.evaluate(FEED_ROWS) >= 3, where  # the feed keeps three whole lines in view
                if size == "720p" and nodes <= 5:  # cells stay big enough for the back row (test_stage_browser.py)
                    assert page.evaluate(CELL_WIDTH) >= 46, where
                if nodes == 7 and size == "720p" and large:
                    # the acceptance picture: a 40-entry log at 7 nodes, 1280x720, large type
                    page.screenshot(path=str(ROOT / "docs" / "img" / "dashboard-7-nodes-40-entries-720p-large.png"))
                page.screenshot(path=str(shots / f"{nodes}-nodes-{size}{'-large' if large else ''}.png"))
    assert errors == [], errors


def test_replay_at_event_0_and_the_sequence_view_in_step_with_the_cursor(tmp_path):
    from lab.harness.scenario import simulate

    trace = tmp_path / "s1"
    assert simulate("s1", seed=3, out=trace).passed
    errors: list[str] = []
    with replay_server(trace, tmp_path / "replay.log") as url, chromium() as browser:
        page = open_page(browser, url, errors)
        page.wait_for_selector(".lane")
        page.evaluate("() => window.hwmSeek({position: 0})")
        page.wait_for_function("window.hwmState.position === 0")
        page.wait_for_timeout(300)
        # nothing has happened yet: no node is drawn killed
        assert page.locator(".lane.killed").count() == 0
        assert page.evaluate("[...document.querySelectorAll('.smark')].map((m) => m.textContent)").count("✕") == 0

        # Played at 5x: heartbeats travel between the lanes, and never over a label (the HWM tags, "above HWM",
        # the leader's match and next marks).
        page.evaluate(WATCH_OVERLAPS)
        page.select_option("#play-speed", "5")
        page.keyboard.press(" ")
        page.wait_for_function("window.hwmState.position === window.hwmState.total", timeout=60_000)
        assert page.evaluate("window.heartbeatsSeen") > 20
        assert page.evaluate("window.overlaps") == []
        # A toast never covers the feed
        page.evaluate("() => window.hwmControl('no-such-action')")
        toast = page.locator("#toast")
        toast.wait_for()
        assert not overlap(toast.bounding_box(), page.locator("#feed-wrap").bounding_box())

        page.keyboard.press("q")
        assert page.locator("#sequence-wrap").is_visible() and not page.locator("#lanes-wrap").is_visible()
        counts = []
        total = page.evaluate("window.hwmState.total")
        for position in (20, 60, total):
            page.evaluate("(n) => window.hwmSeek({position: n})", position)
            page.wait_for_function("(n) => document.querySelector('#sequence').dataset.position === String(n)",
                                   arg=position)
            assert page.evaluate("window.hwmState.position") == position
            counts.append(page.locator("#sequence svg g.msg").count())
            assert page.evaluate(CUT) == []
        assert counts[0] < counts[1] < counts[2], counts
        marks = page.evaluate("[...document.querySelectorAll('#sequence svg g.mark')].map((g) => g.textContent)")
        assert any("truncates from 4" in m for m in marks) and any("not acknowledged" in m for m in marks)
        page.screenshot(path=str(shots_dir("layout") / "sequence-s1.png"))

        # its export opens in Chromium as an SVG document
        href = page.get_attribute("#seq-export", "href")
        assert "download=1" in href
        svg_page = browser.new_page()
        svg_page.goto(url.rstrip("/") + "/" + href.replace("download=1", "download=0"))
        assert svg_page.evaluate("document.documentElement.tagName") == "svg"
        assert svg_page.locator("g.msg.lost").count() >= 3
        svg_page.close()
    assert errors == [], errors
