"""The room follows the instructor, in Debian's Chromium against `hwm-lab demo` (real node processes): guided S1
step by step (next, back, the progress and the caption) while a student's page follows, then the guided run's
trace replayed (idle stretches skipped, step markers), then a simulated K1 trace that plays in step time, all
followed by the student until they leave. Screenshots go to test-artifacts/browser-guide/ (gitignored)."""

from __future__ import annotations

import time

from lab.ports.trace import read_trace
from tests.dashboard.browser import BROWSER_MARKS, OUTSIDE_VIEWPORT, chromium, open_page, running_demo, shots_dir

pytestmark = BROWSER_MARKS

POSITION = "window.hwmState.position"


def test_guided_s1_and_replays_followed_by_the_room(tmp_path):
    from playwright.sync_api import expect

    from lab.sim.cluster import SimCluster
    from lab.harness.scenario import simulate

    k1 = tmp_path / "k1-trace"
    assert simulate("k1", seed=0, out=k1).passed
    late_trace = tmp_path / "late-trace"  # twelve generations: more than the palette's seven colours
    cluster = SimCluster(3, seed=0, trace_dir=late_trace)
    for _ in range(12):
        cluster.campaign("A")
        cluster.run(5)
    cluster.write("late")
    cluster.run(20)
    cluster.close()
    shots = shots_dir("browser-guide")
    errors: list[str] = []
    with running_demo(tmp_path / "demo", "eventlet", ["--token", "teach"]) as demo, chromium() as browser:
        teacher = open_page(browser, demo.url, errors, timeout_ms=60_000)
        student = open_page(browser, demo.url.split("?")[0], errors, timeout_ms=60_000)
        expect(teacher.locator(".lane")).to_have_count(3)
        expect(student.locator("#btn-follow")).to_have_attribute("aria-pressed", "true")

        # Guided S1: the teacher steps; the student's stage shows the same step as a caption.
        teacher.click("button[data-tab=guide]")
        teacher.select_option("#guide-scenario", "s1")
        teacher.click("#btn-guide-start")
        expect(teacher.locator("#guide-progress")).to_have_text("Step 0 of 7", timeout=60_000)  # a fresh cluster
        for step in range(1, 8):
            teacher.keyboard.press("n") if step % 2 else teacher.click("#btn-next")
            expect(teacher.locator("#guide-progress")).to_have_text(f"Step {step} of 7")
            expect(teacher.locator("#guide .outcome.fail")).to_have_count(0)
            expect(student.locator("#caption")).to_contain_text(f"S1 · step {step} of 7")
            if step == 3:
                expect(teacher.locator("#guide .outcome.ok")).to_contain_text(["read 4 refused on A,B,C"])
                teacher.screenshot(path=str(shots / "guide-step3.png"))
                late = open_page(browser, demo.url.split("?")[0], errors)  # a student who comes in late
                expect(late.locator("#caption")).to_contain_text("S1 · step 3 of 7: Reads of index 4 are refused")
                expect(late.locator("#feed")).to_contain_text("A is leader of generation 1")
                expect(late.locator("#feed")).to_contain_text("refuses to read index 4")
                late.close()
        expect(teacher.locator("#guide .outcome.ok").first).to_contain_text("expect truncated 4 on A")
        outcome = teacher.locator("#guide .outcome.ok").first.inner_text()
        assert "index 4 (generation 1)" in outcome and "'" not in outcome  # no raw digests
        expect(teacher.locator("#guide .next-preview")).to_have_text("Done: every expectation held.")
        for n in "ABC":
            expect(student.locator(f"#lane-{n} .l2")).to_have_text("log end 4 · HWM 4")
        teacher.click("#btn-back")
        expect(teacher.locator("#guide-progress")).to_have_text("Going back to step 6 of 7…")
        expect(teacher.locator("#guide-progress")).to_have_text("Step 6 of 7", timeout=90_000)
        expect(student.locator("#caption")).to_contain_text("S1 · step 6 of 7")

        # The guided run's trace in the replay view: the student's page goes along.
        trace_dir = sorted(demo.run_dir.glob("clusters/s1-*"))[0]
        teacher.click("button[data-tab=replay]")
        teacher.fill("#replay-dir", str(trace_dir))
        teacher.click("#btn-open")
        for page in (teacher, student):
            expect(page.locator("#timeline")).to_be_visible()
            expect(page.locator("#conn")).to_have_text("replay")
        replay = teacher.evaluate("window.hwmState.replay")
        assert replay["duration"] < replay["trace_duration"]  # the waits between steps are cut short
        expect(teacher.locator("#markers .marker")).to_have_count(7)
        teacher.locator("#markers .marker").nth(2).click()  # step 3
        expect(teacher.locator("#caption")).to_contain_text("step 3 of 7: Reads of index 4 are refused")
        expect(student.locator("#caption")).to_contain_text("step 3 of 7: Reads of index 4 are refused")
        assert student.evaluate(POSITION) == teacher.evaluate(POSITION)
        teacher.keyboard.press("]")
        expect(student.locator("#caption")).to_contain_text("step 4 of 7")
        total = teacher.evaluate("window.hwmState.total")
        teacher.locator("#scrub").fill(teacher.locator("#scrub").get_attribute("max"))  # dragged to the end
        expect(teacher.locator("#scrub-label")).to_contain_text(f"event {total:,} of {total:,}")
        expect(student.locator("#scrub-label")).to_contain_text(f"event {total:,} of {total:,}")
        expect(student.locator("#lane-A .l2")).to_have_text("log end 4 · HWM 4")

        # A run that reaches generation 12: its colour is generation 5's, so it carries a pattern as well
        teacher.fill("#replay-dir", str(late_trace))
        teacher.click("#btn-open")
        expect(teacher.locator("#replay-info")).to_contain_text("late-trace")
        late_total = teacher.evaluate("window.hwmState.total")
        teacher.locator("#scrub").fill(teacher.locator("#scrub").get_attribute("max"))  # to the end
        expect(student.locator("#scrub-label")).to_contain_text(f"event {late_total:,} of {late_total:,}")
        late_cell = student.locator(".cell:not(.collapsed)", has_text="g12").first
        assert "gp1" in late_cell.get_attribute("class").split()
        assert "radial-gradient" in late_cell.evaluate("(c) => getComputedStyle(c).backgroundImage")
        early = student.locator(".disc").first.get_attribute("class")
        assert "gp1" in early and "g5" in early  # the server discs too (a dashed ring)
        # A simulated K1: 0.01 s a tick, yet it plays over seconds at 1x, one tick a moment, steps marked.
        teacher.fill("#replay-dir", str(k1))
        teacher.click("#btn-open")
        expect(student.locator("#scrub-label")).to_contain_text("(one tick a moment)")
        expect(teacher.locator("#markers .marker")).to_have_count(5)
        assert teacher.evaluate("window.hwmState.replay.trace_duration") < 2
        teacher.select_option("#play-speed", "1")
        started = time.monotonic()
        teacher.click("#btn-play")
        student.wait_for_function(f"{POSITION} > 20")
        student.screenshot(path=str(shots / "student-follows-k1.png"))
        seen = student.evaluate(POSITION)
        expect(teacher.locator("#btn-play")).to_have_text("▶ Play", timeout=60_000)  # stops by itself at the end
        played = time.monotonic() - started
        assert played >= 5, f"K1 played in {played:.1f} s at 1x"
        events = len(read_trace(k1).events)
        expect(student.locator("#scrub-label")).to_contain_text(f"event {events} of {events}")
        assert seen < events
        assert teacher.evaluate(OUTSIDE_VIEWPORT) == [] and student.evaluate(OUTSIDE_VIEWPORT) == []

        # The student leaves, browses on their own; the teacher's moves no longer move them; back again.
        student.click("#btn-follow")
        expect(student.locator("#btn-follow")).to_have_attribute("aria-pressed", "false")
        student.locator("#markers .marker").nth(0).click()
        expect(student.locator("#caption")).to_contain_text("step 1 of 5")
        teacher.locator("#markers .marker").nth(3).click()
        expect(teacher.locator("#caption")).to_contain_text("step 4 of 5")
        teacher.wait_for_timeout(800)
        expect(student.locator("#caption")).to_contain_text("step 1 of 5")
        student.click("#btn-follow")
        expect(student.locator("#caption")).to_contain_text("step 4 of 5")
        teacher.click("#btn-live")
        for page in (teacher, student):
            expect(page.locator("#conn")).to_have_text("live")
            expect(page.locator("#timeline")).to_be_hidden()
    assert errors == [], errors
