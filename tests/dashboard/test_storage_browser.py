"""Scenario D1 (a failed fsync) run to the end in the dashboard's Guide tab at 1280x720, on the node processes of
`hwm-lab demo`: the lane of the leader whose fsync failed says why it stopped, and every expectation holds."""

from __future__ import annotations

import pytest

from tests.dashboard.browser import BROWSER_MARKS, OUTSIDE_VIEWPORT, chromium, open_page, running_demo, shots_dir

pytestmark = BROWSER_MARKS


def test_d1_runs_to_the_end_in_the_guide(tmp_path):
    from playwright.sync_api import expect

    shots = shots_dir("storage-d1")
    errors: list[str] = []
    with running_demo(tmp_path, "threading", ["--token", "d1"]) as demo, chromium() as browser:
        room = open_page(browser, demo.url, errors)
        expect(room.locator(".lane")).to_have_count(3)
        room.click("button[data-tab=guide]")
        room.select_option("#guide-scenario", "d1")
        room.click("#btn-guide-start")
        progress = room.locator("#guide-progress")
        expect(progress).to_have_text("Step 0 of 5", timeout=60_000)
        for step in range(1, 6):
            room.click("#btn-next")
            expect(progress).to_have_text(f"Step {step} of 5", timeout=60_000)
            if step == 2:  # A's fsync failed: it stopped, and its lane and the guide say why
                expect(room.locator("#lane-A .l2")).to_contain_text("stopped: fsync failed: fsync of the "
                                                                     "write-ahead log")
                expect(room.locator("#guide .outcome.ok").first).to_contain_text("expect stopped A fsync failed")
                room.screenshot(path=str(shots / "2-fsync-failed.png"))
        expect(room.locator("#guide .next-preview")).to_have_text("Done: every expectation held.")
        assert room.locator("#guide .outcome.fail").count() == 0
        expect(room.locator("#guide")).to_contain_text("expect acked-survive")
        expect(room.locator("#lane-A .l2")).to_have_text("log end 3 · HWM 3", timeout=30_000)  # recovered, caught up
        assert room.evaluate(OUTSIDE_VIEWPORT) == []
        room.screenshot(path=str(shots / "5-done.png"))
    assert errors == [], errors
