"""Scenario R1 walked in the Guide tab in large type at 1280x720, in Debian's Chromium against `hwm-lab demo`'s node
processes: before step 3 the room is asked whether C will serve index 4, and the reveal gives the model's answer
(refused) with the marks' reason; the feed marks the stale read; the history view draws it in red; step 4's
linearizable read is served by A; every expectation holds. The replay of the run, written as one file, draws the
same history with its stale read, offline."""

from __future__ import annotations

import pytest

from lab.i18n import localize
from tests.dashboard.browser import (
    BROWSER_MARKS, OUTSIDE_VIEWPORT, chromium, offline_page, open_page, running_demo, shots_dir)
from web.questions import Ask, prompt

pytestmark = BROWSER_MARKS


def test_r1_in_large_type_asks_whether_c_will_serve_index_4_and_marks_the_stale_read(tmp_path):
    from playwright.sync_api import expect

    shots = shots_dir("stale-read-r1")
    errors: list[str] = []
    with running_demo(tmp_path, "threading", ["--token", "r1"]) as demo, chromium() as browser:
        room = open_page(browser, demo.url, errors)
        expect(room.locator(".lane")).to_have_count(3)
        room.keyboard.press("l")  # large type, as on a projector
        assert room.evaluate("document.body.classList.contains('large')")
        room.click("button[data-tab=guide]")
        room.select_option("#guide-scenario", "r1")
        room.click("#btn-guide-start")
        progress = room.locator("#guide-progress")
        expect(progress).to_have_text("Step 0 of 5", timeout=60_000)

        def step(done: int) -> None:
            room.wait_for_function("(n) => { const g = window.hwmState.guide; return g && g.done === n && !g.busy; }",
                                   arg=done, timeout=120_000)

        for done in (1, 2):
            room.click("#btn-next")
            step(done)
        # Before step 3: will C serve index 4? Asked, closed (the step plays), revealed with the model's reason.
        asked = localize(prompt(Ask("read", "C", 4)), "en")
        expect(room.locator("#btn-ask-0")).to_have_text(f"Ask the room: {asked}")
        room.click("#btn-ask-0")
        expect(room.locator("#question .q-prompt")).to_have_text(asked)
        room.click("#btn-q-close")
        step(3)
        expect(room.locator("#question")).to_have_attribute("data-state", "revealed", timeout=60_000)
        expect(room.locator("#question .q-choice.right .q-label")).to_have_text("refused")
        expect(room.locator("#q-why")).to_contain_text("the leader A's mark is 4")
        assert room.evaluate(OUTSIDE_VIEWPORT) == []
        room.screenshot(path=str(shots / "3-reveal-large.png"))
        room.click("#btn-q-dismiss")
        # The feed marks the stale read, in the words of both marks.
        stale = room.locator("#feed li.stale")
        expect(stale).to_have_count(1, timeout=30_000)
        expect(stale).to_contain_text("Stale read: C refused index 4 with its mark at 3")
        # The history view: the clients' operations as intervals, the stale read in red.
        room.keyboard.press("i")
        expect(room.locator("#history svg g.op.stale")).to_have_count(1, timeout=30_000)
        room.screenshot(path=str(shots / "3-history-large.png"))
        room.keyboard.press("i")
        room.click("#btn-next")
        step(4)  # the linearizable read, asked of C, served by the leader A
        expect(room.locator("#guide .outcome.ok").filter(has_text="on C linearizable")).to_contain_text(
            "C sent the read on to the leader A: e4")
        room.click("#btn-next")
        step(5)
        expect(room.locator("#guide .next-preview")).to_have_text("Done: every expectation held.")
        assert room.locator("#guide .outcome.fail").count() == 0
        assert room.evaluate(OUTSIDE_VIEWPORT) == []
        room.screenshot(path=str(shots / "5-done-large.png"))
    assert errors == [], errors


def test_the_one_file_replay_of_r1_draws_the_history_with_its_stale_read_offline(tmp_path):
    from playwright.sync_api import expect

    from lab.harness.scenario import simulate
    from web import onefile

    simulate("r1", out=tmp_path / "r1")
    page_file = onefile.write(tmp_path / "r1", tmp_path / "r1.html").path
    errors: list[str] = []
    refused: list[str] = []
    with chromium() as browser:
        page = offline_page(browser, page_file, errors, refused, query="?lang=es")
        expect(page.locator(".lane")).to_have_count(3, timeout=30_000)
        page.click("#btn-history")
        bar = page.locator("#history svg g.op.stale")
        expect(bar).to_have_count(1)
        expect(bar.locator("title")).to_contain_text("obsoleta")
        expect(page.locator("#history svg path.acked-before")).to_have_count(1)
        page.screenshot(path=str(shots_dir("stale-read-r1") / "onefile-history-es.png"))
    assert errors == [] and refused == [], (errors, refused)
