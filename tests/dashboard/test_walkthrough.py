"""The README's classroom walkthrough, step by step as written, at 1280x720 in Debian's Chromium: the instructor
drives `hwm-lab demo` (3 node processes) with the keyboard, a student's page watches and follows. Once per
Socket.IO async mode. Screenshots go to test-artifacts/walkthrough-<mode>/ (gitignored)."""

from __future__ import annotations

import re

import pytest

from tests.dashboard.browser import (BROWSER_MARKS, OUTSIDE_VIEWPORT, WATCH_DOOMED, chromium, open_page,
                                     running_demo, shots_dir)

pytestmark = BROWSER_MARKS


@pytest.mark.parametrize("mode", ["eventlet", "threading"])
def test_the_readme_walkthrough_step_by_step(tmp_path, mode):
    from playwright.sync_api import expect

    shots = shots_dir(f"walkthrough-{mode}")
    errors: list[str] = []
    with running_demo(tmp_path, mode, ["--token", "walkthrough"]) as demo, chromium() as browser:
        assert demo.url.endswith("?token=walkthrough")
        room = open_page(browser, demo.url, errors)  # the projector, with the instructor token
        student = open_page(browser, demo.url.split("?")[0], errors)
        keys = room.keyboard

        def lane(node: str, page=room):
            return page.locator(f"#lane-{node}")

        def leader() -> str:
            room.wait_for_function("document.querySelector('.lane.leader') !== null")
            return room.locator(".lane.leader").first.get_attribute("data-node")

        def write_with_keys() -> None:  # W, then Enter sends what the box offers (e1, then e2, ...)
            keys.press("Escape")
            keys.press("w")
            expect(room.locator("#write-payload")).to_be_focused()
            keys.press("Enter")

        def answer(text):
            expect(room.locator("#answers .answer").first).to_contain_text(text, timeout=30_000)

        # 1. The projector opens the URL with the token; students open it without and follow. L: large type.
        expect(room.locator(".lane")).to_have_count(3)
        expect(room.locator("#conn")).to_have_text("live")
        expect(student.locator("#viewer")).to_be_visible()
        expect(student.locator("#btn-follow")).to_have_attribute("aria-pressed", "true")
        expect(room.locator("#btn-follow")).to_be_hidden()
        keys.press("l")
        expect(room.locator("body")).to_have_class(re.compile(r"\blarge\b"))

        # 2. Write e1, e2, e3: every lane's HWM reaches 3.
        old = leader()
        others = [n for n in "ABC" if n != old]
        keys.press("w")
        keys.type("e1")
        keys.press("Enter")
        answer("Wrote “e1” at index 1")
        for payload in ("e2", "e3"):
            write_with_keys()
            answer(f"Wrote “{payload}” at index")
        for n in "ABC":
            expect(lane(n).locator(".l2")).to_have_text("log end 3 · HWM 3")
            expect(lane(n, student).locator(".l2")).to_have_text("log end 3 · HWM 3")
        expect(room.locator("#hwm-line .hwm-label")).to_have_text(f"leader {old}: high-water mark 3")
        assert room.evaluate(OUTSIDE_VIEWPORT) == []
        room.screenshot(path=str(shots / "2-committed.png"))

        # 3. T holds the clocks; the leader's number key selects it, X cuts it off; e4 goes to it (it still
        # leads): hatched above its HWM, not acknowledged, and refused on every node.
        keys.press("Escape")
        keys.press("t")
        expect(room.locator(".banner.held")).to_be_visible()
        expect(student.locator(".banner.held")).to_be_visible()
        keys.press("x")  # nothing selected yet: the page says what X needs
        expect(room.locator("#toast")).to_contain_text("X needs a selected node")
        keys.press(str("ABC".index(old) + 1))
        expect(lane(old)).to_have_class(re.compile(r"\bselected\b"))
        keys.press("x")
        expect(lane(old).locator(".state")).to_have_text("cut off")
        room.wait_for_timeout(1500)  # held clocks: no election however long the room looks
        assert leader() == old
        write_with_keys()
        expect(lane(old).locator(".l2")).to_contain_text("log end 4")
        expect(lane(old).locator(".cell.uncommitted", has_text="e4")).to_have_count(1)
        cell = lane(old).locator(".cell.uncommitted", has_text="e4").bounding_box()
        bar = lane(old).locator(".mark").bounding_box()
        assert cell["x"] > bar["x"], "e4 must sit right of its lane's HWM bar"
        expect(lane(old).locator(".above-label")).to_contain_text("not visible")
        answer("Write “e4” not acknowledged")
        keys.press("Escape")
        keys.press("e")
        expect(room.locator("#read-index")).to_be_focused()
        room.fill("#read-index", "4")
        for n in "ABC":
            room.select_option("#read-node", n)
            room.click("#btn-read")
            expect(room.locator("#answers .answer.refused").first).to_contain_text(
                f"{n} refuses index 4: not available: index 4 is above the high-water mark 3")
        expect(student.locator(f"#lane-{old} .cell.uncommitted", has_text="e4")).to_have_count(1)
        room.screenshot(path=str(shots / "3-above-the-mark.png"))

        # 4. K kills the old leader, H heals, T releases the clocks: a follower's timer fills, it is elected.
        keys.press("Escape")
        keys.press("k")
        expect(lane(old).locator(".state")).to_have_text("killed")
        keys.press("h")
        expect(lane(others[0]).locator(".cutchips")).to_have_text("")
        keys.press("t")
        expect(room.locator(".banner.held")).to_have_count(0)
        room.wait_for_function(f"(() => {{ const l = document.querySelector('.lane.leader');"
                               f" return l && l.dataset.node !== '{old}'; }})()")
        new = leader()
        assert new in others
        expect(room.locator("#feed")).to_contain_text(f"{new} is leader of generation")
        write_with_keys()
        answer("Wrote “e5” at index 4")
        for n in others:
            expect(lane(n).locator(".l2")).to_have_text("log end 4 · HWM 4")
        room.screenshot(path=str(shots / "4-new-leader.png"))

        # 5. R restarts the old leader: its e4, above its HWM, turns red, goes, and e5 slides in.
        keys.press("Escape")
        room.evaluate(WATCH_DOOMED)
        keys.press("r")
        expect(lane(old).locator(".cell.conflict", has_text="e4")).to_have_count(1, timeout=30_000)
        room.screenshot(path=str(shots / "5-truncation.png"))
        expect(room.locator("#feed")).to_contain_text(
            re.compile(rf"{old} truncated index 4 \(generation \d+\): conflicts with generation \d+ from {new}"))
        expect(lane(old).locator(".cell.conflict")).to_have_count(0, timeout=15_000)
        expect(lane(old).locator(".cell", has_text="e5")).to_have_count(1, timeout=15_000)
        for n in "ABC":
            expect(lane(n).locator(".l2")).to_have_text("log end 4 · HWM 4")
            assert lane(n).locator(".cell:not(.collapsed) .p").all_inner_texts() == ["e1", "e2", "e3", "e5"]
        assert room.evaluate("window.doomedSeen") > 0
        assert room.evaluate("window.doomedLeftOfBar") == []

        # 6. S: slow motion; write e6 and watch "append 5" travel, "ack 5" come back, the HWM move.
        keys.press("s")
        expect(room.locator(".banner.slow")).to_contain_text("each message takes 1 s")
        write_with_keys()
        request = room.locator("#wires .flight.request", has_text="append 5").first
        expect(request).to_be_visible(timeout=15_000)
        room.wait_for_timeout(400)  # (the picture: halfway there)
        room.screenshot(path=str(shots / "6-slow-motion.png"))
        expect(room.locator("#wires .flight.response", has_text="ack 5").first).to_be_visible(timeout=15_000)
        answer("Wrote “e6” at index 5")
        expect(lane(new).locator(".l2")).to_have_text("log end 5 · HWM 5")
        keys.press("Escape")
        keys.press("s")
        expect(room.locator(".banner.slow")).to_have_count(0)

        # 7. The Guide tab runs the scenarios step by step, and the students' pages follow.
        room.click("button[data-tab=guide]")
        options = room.locator("#guide-scenario option").all_inner_texts()
        assert [o.split(":")[0] for o in options] == ["S1", "K1", "K2", "F8", "N4", "D1", "R1"]
        room.select_option("#guide-scenario", "s1")
        dialogs = []  # the live cluster holds the room's entries: the page asks, in the page, before replacing it
        room.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        room.click("#btn-guide-start")
        expect(room.locator("#guide-confirm-text")).to_contain_text("replaces the live cluster")
        room.click("#btn-guide-replace")
        expect(room.locator("#guide-progress")).to_have_text("Step 0 of 7", timeout=60_000)
        assert dialogs == []  # no browser dialog: a presenter's remote could not answer it
        keys.press("n")
        expect(room.locator("#guide-progress")).to_have_text("Step 1 of 7", timeout=60_000)
        expect(student.locator("#caption")).to_contain_text("S1 · step 1 of 7: A becomes leader")
        assert room.evaluate(OUTSIDE_VIEWPORT) == [] and student.evaluate(OUTSIDE_VIEWPORT) == []
    assert errors == [], errors
