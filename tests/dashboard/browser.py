"""Helpers for the browser tests: `hwm-lab demo` as its own process, Debian's Chromium through Playwright, and
checks of what a page shows (inside the viewport, never an error in the console)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from lab import i18n

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = ROOT / "test-artifacts"
SIZES = {"720p": {"width": 1280, "height": 720}, "1080p": {"width": 1920, "height": 1080},
         "phone": {"width": 390, "height": 844}}

BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.processes,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"Debian's Chromium is not installed at {CHROMIUM} "
                                                            "(apt-get install chromium)"),
]


STOPPED = {i18n.gettext(lang, "stopped") for lang in i18n.LANGUAGES}  # the demo's last line once its cluster is down


class Demo:
    """`hwm-lab demo` in its own session; stopped with Ctrl-C (SIGINT), then killed if it must be."""

    def __init__(self, run_dir: Path, async_mode: str = "eventlet", extra: list[str] = ()):
        self.run_dir = run_dir
        self.mode = async_mode
        self.log_path = run_dir / "demo.log"
        run_dir.mkdir(parents=True, exist_ok=True)
        self.log = open(self.log_path, "w")
        if "--pace" not in extra:  # the tests' own pace: elections in hundreds of ms (the demo's default is slower)
            extra = [*extra, "--pace", "normal"]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lab.cli", "demo", "--port", "0", "--dir", str(run_dir / "clusters"),
             "--async-mode", async_mode, *extra],
            cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.url = self._wait_for_url(120)

    def _wait_for_url(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log_path.read_text()
            match = re.search(r"(http://\S+:\d+/\S*)", text)  # the first address: the dashboard's, in any language
            if match:
                return match.group(1)
            if self.proc.poll() is not None:
                raise AssertionError(f"hwm-lab demo exited ({self.proc.returncode}):\n{text}")
            time.sleep(0.2)
        raise AssertionError(f"hwm-lab demo printed no URL within {timeout}s:\n{self.log_path.read_text()}")

    def control(self):
        """A control client of the demo's current cluster, with its token (as `hwm-lab status` would find it)."""
        from lab.processes.client import ControlClient, cluster_info

        infos = [info for path in self.run_dir.glob("clusters/*/cluster.json")
                 if (info := cluster_info(path.parent)) is not None]
        assert len(infos) == 1, infos
        return ControlClient(infos[0]["control_url"], token=infos[0]["token"])

    def node_pids(self) -> list[int]:
        pids = []
        for path in self.run_dir.glob("clusters/*/data/*/node.json"):
            try:
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
                code = self.proc.wait(40)
                said = self.log_path.read_text().strip().splitlines()  # (read once it has exited: its last line)
                clean = code == 0 and bool(said) and said[-1] in STOPPED  # (in the demo's language)
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


@contextmanager
def running_demo(run_dir: Path, async_mode: str = "eventlet", extra: list[str] = ()):
    """A demo for one test; afterwards every node process it started must be gone, and it must have stopped
    cleanly on Ctrl-C."""
    demo = Demo(run_dir, async_mode, extra)
    try:
        yield demo
    finally:
        pids = demo.node_pids()
        clean = demo.stop()
        deadline = time.monotonic() + 15
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pids, "no node process was seen"
        assert not [p for p in pids if alive(p)], "node processes outlived hwm-lab demo"
        assert clean, f"hwm-lab demo did not stop cleanly on Ctrl-C:\n{demo.log_path.read_text()[-2000:]}"


@contextmanager
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def open_page(browser, url: str, errors: list, size: str = "720p", timeout_ms: int = 30_000):
    """A page on `url`; console errors and page errors go to `errors`."""
    page = browser.new_page(viewport=SIZES[size])
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.set_default_timeout(timeout_ms)
    page.goto(url)
    return page


def offline_page(browser, path: Path, errors: list, refused: list, size: str = "720p", query: str = "",
                 locale: str = "en-US"):
    """A page on the file `path` (file://), in a context where every request for anything else is refused (and
    listed in `refused`): a page that works here needs no server and no network."""
    own = path.resolve().as_uri()
    context = browser.new_context(viewport=SIZES[size], locale=locale)

    def route(r):
        if r.request.url.split("?")[0].split("#")[0] == own:
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()
    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.set_default_timeout(30_000)
    page.goto(own + query)
    page.wait_for_function("window.hwmState && window.hwmState.total > 0")
    return page


def shots_dir(name: str) -> Path:
    path = ARTIFACTS / name
    path.mkdir(parents=True, exist_ok=True)
    return path


# What must never leave the screen: every lane, each lane's HWM bar and its stretch of the leader's line, and
# the leader line's label. Answers the elements that stick out (empty when all is inside).
OUTSIDE_VIEWPORT = """() => {
  const out = [], W = window.innerWidth, H = window.innerHeight;
  const check = (el, what) => {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) return;
    if (r.left < -0.5 || r.top < -0.5 || r.right > W + 0.5 || r.bottom > H + 0.5)
      out.push(`${what}: ${Math.round(r.left)},${Math.round(r.top)} to ${Math.round(r.right)},${Math.round(r.bottom)} in ${W}x${H}`);
  };
  document.querySelectorAll('.lane').forEach((l) => check(l, 'lane ' + l.dataset.node));
  document.querySelectorAll('.lane .mark, .lane .leader-line, .lane .mark-label').forEach((m) =>
    check(m, m.className + ' of ' + m.closest('.lane').dataset.node));
  const label = document.querySelector('#hwm-line .hwm-label');
  if (label) check(label, 'leader HWM label');
  return out;
}"""

# Every truncated (doomed) cell drawn, with where it is against its own lane's HWM bar. Installed in the page
# as a check on every animation frame, so that no frame in which the entry looked committed is missed.
WATCH_DOOMED = """() => {
  window.doomedSeen = 0; window.doomedLeftOfBar = [];
  const look = () => {
    document.querySelectorAll('.lane').forEach((lane) => {
      const bar = lane.querySelector('.mark');
      lane.querySelectorAll('.cell.conflict').forEach((cell) => {
        window.doomedSeen += 1;
        if (bar && cell.getBoundingClientRect().left < bar.getBoundingClientRect().left)
          window.doomedLeftOfBar.push(lane.dataset.node + ' ' + cell.dataset.key);
      });
    });
    requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
}"""

# Labels whose text must fit their own box (no ellipsis), and stage labels that must lie inside the lane's track
# (which hides whatever sticks out). Answers what is cut.
CUT = """() => {
  const out = [];
  const shown = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
  const fits = (e, what) => {
    if (shown(e) && e.scrollWidth > e.clientWidth + 1) out.push(`${what} "${e.textContent}" ${e.scrollWidth}>${e.clientWidth}`);
  };
  document.querySelectorAll('#summary, #rate, #skipped, .legend > span, .info .line, .cutchips, #feed li .x, .cell .p, .cell .i, #seq-caption')
    .forEach((e) => fits(e, e.id || e.className));
  const inside = (e, box, what) => {
    if (!shown(e)) return;
    const r = e.getBoundingClientRect(), b = box.getBoundingClientRect();
    if (r.left < b.left - 0.5 || r.right > b.right + 0.5 || r.top < b.top - 0.5 || r.bottom > b.bottom + 0.5)
      out.push(`${what} "${e.textContent}": ${Math.round(r.left)}-${Math.round(r.right)} outside ${Math.round(b.left)}-${Math.round(b.right)}`);
  };
  document.querySelectorAll('.lane').forEach((lane) => {
    const track = lane.querySelector('.track');
    track.querySelectorAll('.mark, .mark-label, .above-label, .index-marker, .conflict-note, .cell')
      .forEach((e) => inside(e, track, lane.dataset.node + ' ' + e.className));
  });
  const line = document.querySelector('#hwm-line');
  if (!line.hidden) inside(line.querySelector('.hwm-label'), document.querySelector('#lanes-wrap'), 'leader label');
  return out;
}"""

# How many lines of the event feed are wholly in view.
FEED_ROWS = """() => {
  const box = document.querySelector('#feed').getBoundingClientRect();
  return [...document.querySelectorAll('#feed li')].filter((li) => {
    const r = li.getBoundingClientRect();
    return r.height > 0 && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5;
  }).length;
}"""
