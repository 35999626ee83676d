"""The real thing: `hwm-lab demo` as its own process (3 node processes, the reference solutions), Debian's
Chromium driven by Playwright, scenario S1 played from the page. Runs once per Socket.IO async mode.

Screenshots go to test-artifacts/browser-<mode>/ (gitignored).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = ROOT / "test-artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.processes,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"Debian's Chromium is not installed at {CHROMIUM} "
                                                            "(apt-get install chromium)"),
]


class Demo:
    """`hwm-lab demo` in its own session; stopped with Ctrl-C (SIGINT), then killed if it must be."""

    def __init__(self, run_dir: Path, async_mode: str, extra: list[str] = ()):
        self.run_dir = run_dir
        self.log_path = run_dir / "demo.log"
        run_dir.mkdir(parents=True, exist_ok=True)
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lab.cli", "demo", "--port", "0", "--dir", str(run_dir / "clusters"),
             "--async-mode", async_mode, *extra],
            cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.url = self._wait_for_url(120)

    def _wait_for_url(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log_path.read_text()
            match = re.search(r"dashboard: (http://\S+)", text)
            if match:
                return match.group(1)
            if self.proc.poll() is not None:
                raise AssertionError(f"hwm-lab demo exited ({self.proc.returncode}):\n{text}")
            time.sleep(0.2)
        raise AssertionError(f"hwm-lab demo printed no URL within {timeout}s:\n{self.log_path.read_text()}")

    def node_pids(self) -> list[int]:
        pids = []
        for path in self.run_dir.glob("clusters/*/data/*/node.json"):
            try:
                import json

                pids.append(int(json.loads(path.read_text())["pid"]))
            except (OSError, ValueError, KeyError):
                pass
        return pids

    def stop(self) -> bool:
        """Ctrl-C; True when the demo stopped by itself (its cluster too) and said so."""
        clean = False
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # Ctrl-C
            try:
                clean = self.proc.wait(40) == 0 and "stopped" in self.log_path.read_text()
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # anything of the session left behind
        except ProcessLookupError:
            pass
        self.log.close()
        return clean


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.fixture(params=["eventlet", "threading"])
def demo(request, tmp_path):
    demo = Demo(tmp_path, request.param)
    demo.mode = request.param
    try:
        yield demo
    finally:
        pids = demo.node_pids()
        assert pids, "no node process was seen"
        clean = demo.stop()
        deadline = time.monotonic() + 15
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in pids if alive(p)], "node processes outlived hwm-lab demo"
        assert clean, f"hwm-lab demo did not stop cleanly on Ctrl-C:\n{demo.log_path.read_text()[-2000:]}"


def test_s1_from_the_page(demo):
    from playwright.sync_api import expect, sync_playwright

    shots = ARTIFACTS / f"browser-{demo.mode}"
    shots.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
            page.set_default_timeout(30_000)
            page.goto(demo.url)
            expect(page.locator(".lane")).to_have_count(3)
            expect(page.locator("#conn")).to_have_text("live")

            def lane(node: str):
                return page.locator(f"#lane-{node}")

            def leader() -> str:
                page.wait_for_function("document.querySelector('.lane.leader') !== null", timeout=30_000)
                return page.locator(".lane.leader").first.get_attribute("data-node")

            def write(payload: str, node: str = "") -> None:
                page.click("button[data-tab=client]")
                page.fill("#write-payload", payload)
                page.select_option("#write-node", node)
                page.click("#btn-write")

            # 1. A leader; the client writes e1, e2, e3; the high-water mark reaches 3 everywhere.
            old = leader()
            others = [n for n in "ABC" if n != old]
            for payload in ("e1", "e2", "e3"):
                write(payload)
                expect(page.locator("#answers .answer").first).to_contain_text(f"Wrote “{payload}” at index")
            for n in "ABC":
                expect(lane(n).locator(".l2")).to_have_text("log end 3 · HWM 3")
            expect(page.locator("#hwm-line .hwm-label")).to_have_text(f"leader {old}: high-water mark 3")
            page.screenshot(path=str(shots / "1-committed.png"))

            # 2. Cut the leader off (both ways); e4 reaches its log only, above its high-water mark.
            page.click("button[data-tab=network]")
            for other in others:
                page.click(f"#link-{old}-{other}")
                expect(page.locator(f"#link-{other}-{old}")).to_have_class(re.compile(r"\bcut\b"))
            expect(lane(old).locator(".state")).to_have_text("cut off")
            write("e4", old)
            expect(lane(old).locator(".l2")).to_contain_text("log end 4")
            cell4 = lane(old).locator(".cell.uncommitted", has_text="e4")
            expect(cell4).to_have_count(1)
            expect(lane(old).locator(".above-label")).to_contain_text("not visible to clients")
            expect(page.locator("#answers .answer").first).to_contain_text("not acknowledged", timeout=20_000)
            # a read of index 4 is refused: above the high-water mark
            page.select_option("#read-node", old)
            page.fill("#read-index", "4")
            page.click("#btn-read")
            expect(page.locator("#answers .answer.refused").first).to_contain_text(
                f"{old} refuses index 4: not available: index 4 is above the high-water mark 3")
            page.screenshot(path=str(shots / "2-uncommitted-refused.png"))

            # 3. Kill the old leader from the page, heal the cut; a new leader is elected.
            lane(old).locator(".btn-kill").click()
            expect(lane(old).locator(".state")).to_have_text("killed")
            page.click("button[data-tab=network]")
            page.click("#btn-heal-all")
            page.wait_for_function(f"(() => {{ const l = document.querySelector('.lane.leader');"
                                   f" return l && l.dataset.node !== '{old}'; }})()", timeout=30_000)
            new = leader()
            assert new in others
            expect(page.locator("#feed")).to_contain_text(f"{new} is leader of generation")
            page.screenshot(path=str(shots / "3-new-leader.png"))

            # 4. The client writes e5: index 4 in the new generation, replicated; the HWM advances to 4.
            write("e5")
            expect(page.locator("#answers .answer").first).to_contain_text("Wrote “e5” at index 4")
            for n in others:
                expect(lane(n).locator(".l2")).to_have_text("log end 4 · HWM 4")
            expect(page.locator("#hwm-line .hwm-label")).to_have_text(f"leader {new}: high-water mark 4")

            # 5. Restart the old leader: its e4 conflicts, is marked, removed, and e5 slides in.
            lane(old).locator(".btn-restart").click()
            expect(lane(old).locator(".cell.conflict", has_text="e4")).to_have_count(1, timeout=30_000)
            page.screenshot(path=str(shots / "4-truncation.png"))
            expect(page.locator("#feed")).to_contain_text(
                re.compile(rf"{old} truncated index 4 \(generation \d+\): conflicts with generation \d+ from {new}"))
            expect(lane(old).locator(".cell", has_text="e5")).to_have_count(1, timeout=15_000)
            expect(lane(old).locator(".cell.conflict")).to_have_count(0, timeout=15_000)
            for n in "ABC":
                expect(lane(n).locator(".l2")).to_have_text("log end 4 · HWM 4")
                assert lane(n).locator(".cell:not(.collapsed) .p").all_inner_texts() == ["e1", "e2", "e3", "e5"]
            page.screenshot(path=str(shots / "5-converged.png"))

            # Slow motion: messages in flight between the lanes.
            page.click("button[data-tab=cluster]")
            page.select_option("#set-delay", "1000")
            page.click("#btn-settings")
            expect(page.locator("#summary")).to_contain_text("slow motion 1000 ms")
            page.wait_for_selector("#wires circle", timeout=15_000)
            page.screenshot(path=str(shots / "6-slow-motion.png"))
            page.select_option("#set-delay", "0")
            page.click("#btn-settings")
            expect(page.locator("#summary")).not_to_contain_text("slow motion")

            # Keyboard and projector: help on ?, large type on L.
            page.keyboard.press("Escape")
            page.keyboard.press("?")
            expect(page.locator("#help")).to_be_visible()
            page.screenshot(path=str(shots / "7-keyboard-help.png"))
            page.keyboard.press("Escape")
            page.keyboard.press("l")
            expect(page.locator("body")).to_have_class(re.compile(r"\blarge\b"))
            page.wait_for_timeout(1500)  # cells slide to their larger places; messages in flight land
            page.screenshot(path=str(shots / "8-large-type.png"))
        finally:
            browser.close()
    assert errors == [], errors


@pytest.mark.parametrize("demo", ["eventlet"], indirect=True)
def test_guided_s1_then_replay_its_trace(demo):
    """Guided S1 step by step on the real processes (next, back, progress), then its trace replayed and scrubbed."""
    from playwright.sync_api import expect, sync_playwright

    shots = ARTIFACTS / "browser-guide"
    shots.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
            page.set_default_timeout(60_000)
            page.goto(demo.url)
            expect(page.locator(".lane")).to_have_count(3)
            page.click("button[data-tab=guide]")
            page.select_option("#guide-scenario", "s1")
            page.click("#btn-guide-start")
            expect(page.locator("#guide-progress")).to_have_text("Step 0 of 7")
            for step in range(1, 8):
                page.keyboard.press("n") if step % 2 else page.click("#btn-next")
                expect(page.locator("#guide-progress")).to_have_text(f"Step {step} of 7")
                expect(page.locator("#guide .outcome.fail")).to_have_count(0)
                if step == 3:
                    expect(page.locator("#guide .outcome.ok")).to_contain_text(["read 4 refused on A,B,C"])
                    page.screenshot(path=str(shots / "guide-step3.png"))
            expect(page.locator("#guide .outcome.ok").first).to_contain_text("expect truncated 4 on A")
            expect(page.locator("#guide .next-preview")).to_have_text("Done: every expectation held.")
            for n in "ABC":
                expect(page.locator(f"#lane-{n} .l2")).to_have_text("log end 4 · HWM 4")
            page.screenshot(path=str(shots / "guide-done.png"))
            page.click("#btn-back")
            expect(page.locator("#guide-progress")).to_have_text("Step 6 of 7")

            # The guided run's trace directory, opened in the replay view and scrubbed.
            trace_dir = sorted(demo.run_dir.glob("clusters/s1-*"))[0]
            page.click("button[data-tab=replay]")
            page.fill("#replay-dir", str(trace_dir))
            page.click("#btn-open")
            expect(page.locator("#timeline")).to_be_visible()
            expect(page.locator("#conn")).to_have_text("replay")
            total = int(page.locator("#scrub").get_attribute("max"))
            assert total > 50
            page.locator("#scrub").fill(str(total))
            expect(page.locator("#scrub-label")).to_contain_text(f"event {total:,} of {total:,}")
            expect(page.locator("#lane-A .l2")).to_have_text("log end 4 · HWM 4")
            page.locator("#scrub").fill("0")
            expect(page.locator("#scrub-label")).to_contain_text("event 0 of")
            page.locator("#scrub").focus()
            page.keyboard.press("Escape")
            position = "Number(document.querySelector('#scrub').value)"
            page.click("#btn-play")  # at 1x: trace time runs as it did
            page.wait_for_function(f"{position} > 20")
            page.click("#btn-play")  # pause
            paused_at = page.evaluate(position)
            page.wait_for_timeout(500)
            assert page.evaluate(position) == paused_at
            page.click("button[data-tab=cluster]")  # (the Replay tab would show this machine's paths)
            page.screenshot(path=str(shots / "replay.png"))
            page.click("button[data-tab=replay]")
            page.select_option("#play-speed", "20")
            page.click("#btn-play")
            expect(page.locator("#scrub-label")).to_contain_text(f"event {total:,} of {total:,}")
            expect(page.locator("#btn-play")).to_have_text("▶ Play")  # stops by itself at the end
            page.click("#btn-live")
            expect(page.locator("#conn")).to_have_text("live")
            expect(page.locator("#timeline")).to_be_hidden()
        finally:
            browser.close()
    assert errors == [], errors
