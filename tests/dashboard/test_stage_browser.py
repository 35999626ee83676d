"""The stage as a room sees it, in Debian's Chromium against `hwm-lab demo` (real node processes): it fits
1280x720 and 1920x1080 with 3, 5 and 7 nodes in normal and large type; a one-way cut is drawn; in slow motion
messages travel with their labels and a click drops one; a page that joins late still sees the first election.
Screenshots go to test-artifacts/stage/ (gitignored)."""

from __future__ import annotations

import re
import time

from tests.dashboard.browser import (BROWSER_MARKS, CUT, FEED_ROWS, OUTSIDE_VIEWPORT, SIZES, chromium, open_page,
                                    running_demo, shots_dir)

pytestmark = BROWSER_MARKS

CELL_WIDTH = "Math.min(...[...document.querySelectorAll('.cell:not(.collapsed)')].map((c) => c.getBoundingClientRect().width))"


def fits_everywhere(page, nodes: int, shots, name: str) -> None:
    """Every lane, HWM bar and the leader's line inside the viewport at both sizes, normal and large type."""
    for size in ("720p", "1080p"):
        page.set_viewport_size(SIZES[size])
        for large in (False, True):
            if page.evaluate("document.body.classList.contains('large')") != large:
                page.click("#btn-large")
            page.wait_for_timeout(700)  # cells slide to their new places
            outside = page.evaluate(OUTSIDE_VIEWPORT)
            assert outside == [], f"{nodes} nodes at {size}, large={large}: {outside}"
            cut = page.evaluate(CUT)  # no label of the stage, the header, the legend or the feed is cut
            assert cut == [], f"{nodes} nodes at {size}, large={large}: {cut}"
            assert page.evaluate(FEED_ROWS) >= 3, f"{nodes} nodes at {size}, large={large}: the feed shrank"
            assert page.locator(".lane").count() == nodes
            if size == "720p" and nodes <= 5:
                assert page.evaluate(CELL_WIDTH) >= 46, f"cells too small at 720p with {nodes} nodes (large={large})"
            if (size, large) in (("720p", True), ("1080p", False)):
                page.screenshot(path=str(shots / f"{name}-{size}{'-large' if large else ''}.png"))
    page.set_viewport_size(SIZES["720p"])
    if page.evaluate("document.body.classList.contains('large')"):
        page.click("#btn-large")


def test_the_stage_fits_the_screen_and_draws_what_happens(tmp_path):
    from playwright.sync_api import expect

    shots = shots_dir("stage")
    errors: list[str] = []
    with running_demo(tmp_path, "eventlet", ["--token", "room"]) as demo, chromium() as browser:
        page = open_page(browser, demo.url, errors)
        expect(page.locator(".lane")).to_have_count(3)
        page.wait_for_selector(".lane.leader")

        def write(payload: str, node: str | None = None) -> dict:
            args = {"payload": payload, **({"node": node} if node else {})}
            return page.evaluate("(a) => window.hwmControl('write', a)", args)

        for i in range(1, 7):
            assert write(f"e{i}")["ok"]
        # The live cluster's run as a message-sequence diagram (Q), then the stage again.
        page.keyboard.press("q")
        expect(page.locator("#sequence svg g.msg.request").first).to_be_attached(timeout=10_000)
        labels = page.evaluate("[...document.querySelectorAll('#sequence svg g.msg')].map((g) => g.textContent)")
        assert any(re.fullmatch(r"append \d+", t) for t in labels) and any(t.startswith("ack ") for t in labels)
        assert page.locator("#seq-caption").inner_text() == "the whole run, as far as the dashboard keeps it"
        page.select_option("#seq-span", "last")  # the room's default is the whole run; the last seconds on demand
        expect(page.locator("#seq-caption")).to_have_text("the last 15 s")
        page.keyboard.press("q")
        expect(page.locator("#lanes-wrap")).to_be_visible()
        fits_everywhere(page, 3, shots, "3-nodes")

        # A one-way cut, made in the Network tab, is drawn between the two lanes with its direction.
        page.click("button[data-tab=network]")
        page.uncheck("#both-ways")
        page.click("#link-B-A")
        link = page.locator('#links-svg .link.cut.one[data-src="B"][data-dst="A"]')
        expect(link).to_have_count(1)
        assert link.locator("path").get_attribute("marker-end") == "url(#cut-head)"
        expect(page.locator("#lane-A .cutchips")).to_have_text("✂ B→A")
        expect(page.locator("#lane-A .state")).to_have_text("running")  # only deaf to B: not cut off
        page.screenshot(path=str(shots / "one-way-cut.png"))
        page.click("#btn-heal-all")
        expect(page.locator("#links-svg .link")).to_have_count(0)

        # A page that joins late still sees the first election, however many heartbeats came since.
        api_total = lambda: page.evaluate("window.hwmStats.covered")  # noqa: E731
        deadline = time.monotonic() + 30
        while api_total() < 400 and time.monotonic() < deadline:
            page.wait_for_timeout(500)
        late_errors: list[str] = []
        late = open_page(browser, demo.url.split("?")[0], late_errors)
        expect(late.locator("#feed")).to_contain_text(re.compile(r"[A-C] is leader of generation 1 \(votes"))
        expect(late.locator("#feed")).to_contain_text(re.compile(r"[A-C] starts an election for generation 1"))
        expect(late.locator("#feed")).to_contain_text("Link B → A cut")
        expect(late.locator("#skipped")).to_contain_text("routine events summarised")
        # ... named by kind (text.js keys its names by the declarations, window.HWM_KINDS): the heartbeats' first
        expect(late.locator("#skipped")).to_have_attribute("title", re.compile(r"replication requests (sent|received)"))
        late.screenshot(path=str(shots / "late-joiner.png"))
        late.close()
        errors.extend(late_errors)

        # Slow motion: messages travel between the lanes, labelled, big enough to read; a click drops one.
        page.click("button[data-tab=cluster]")
        page.select_option("#set-delay", "2000")
        page.click("#btn-settings")
        expect(page.locator(".banner.slow")).to_contain_text("each message takes 2 s")
        page.evaluate("() => { window.hwmControl('write', {payload: 'e7'}); }")  # not awaited: watch it travel
        append = page.locator("#wires .flight.request", has_text="append 7").first
        expect(append).to_be_visible(timeout=15_000)
        box = append.bounding_box()
        assert box["height"] >= 18 and box["width"] >= 60, box
        assert 0 <= box["x"] and box["x"] + box["width"] <= 1280 and 0 <= box["y"] <= 720
        assert page.evaluate("parseFloat(getComputedStyle(document.querySelector('#wires .flight.request .msg')).fontSize)") >= 14
        page.wait_for_timeout(600)  # (the picture: on its way)
        page.screenshot(path=str(shots / "message-in-flight.png"))
        # drop the next one: the link is cut until it would have landed, then healed
        page.evaluate("() => { window.hwmControl('write', {payload: 'e8'}); }")
        target = page.locator("#wires .flight.request", has_text="append 8").first
        expect(target).to_be_visible(timeout=15_000)
        hit = target.bounding_box()  # it moves: click where it is now, as a student would
        page.mouse.click(hit["x"] + hit["width"] / 2, hit["y"] + hit["height"] / 2)
        expect(page.locator("#toast")).to_contain_text(re.compile(r"Dropped [A-C] → [A-C] “append 8”"))
        # (messages to two followers leave together: whichever was on top was dropped)
        src, dst = re.search(r"Dropped ([A-C]) → ([A-C])", page.locator("#toast").inner_text()).groups()
        expect(page.locator(f'#links-svg .link.cut.one[data-src="{src}"][data-dst="{dst}"]')).to_have_count(1)
        expect(page.locator("#feed")).to_contain_text(f"Link {src} → {dst} cut")
        expect(page.locator("#links-svg .link")).to_have_count(0, timeout=10_000)
        expect(page.locator("#feed")).to_contain_text(f"Link {src} → {dst} healed")
        expect(page.locator(f"#lane-{dst} .l2")).to_contain_text("log end 8", timeout=30_000)  # sent again

        # Election timers: with the leader paused, the followers' rings fill (slow clocks: seconds, not ms).
        leader = page.locator(".lane.leader").first.get_attribute("data-node")
        follower = next(n for n in "ABC" if n != leader)
        ring = f"parseFloat(document.querySelector('#lane-{follower} .ring').getAttribute('stroke-dasharray'))"
        page.locator(f"#lane-{leader} .btn-pause").click()
        expect(page.locator(f"#lane-{leader} .state")).to_have_text("paused")
        page.wait_for_timeout(1000)
        before = page.evaluate(ring)
        page.wait_for_timeout(2000)
        assert page.evaluate(ring) > before, "a follower's election timer must fill while it hears no leader"
        page.screenshot(path=str(shots / "election-timers.png"))
        page.locator(f"#lane-{leader} .btn-resume").click()
        expect(page.locator(f"#lane-{leader} .state")).to_have_text("running")

        # A slower link (the control API can delay one link) is drawn as such, its messages take longer.
        api = demo.control()
        api.post("/api/links/delay", {"ms": 4000, "src": "A", "dst": "C"})
        expect(page.locator('#links-svg .link.slow[data-src="A"][data-dst="C"]')).to_have_count(1)
        api.post("/api/links/delay", {"ms": 2000, "src": "A", "dst": "C"})
        expect(page.locator("#links-svg .link")).to_have_count(0)
        page.select_option("#set-delay", "0")
        page.click("#btn-settings")
        expect(page.locator(".banner.slow")).to_have_count(0)

        # 5 and 7 nodes: a new cluster from the page; the lane buttons work on each.
        for nodes in (5, 7):
            page.select_option("#start-nodes", str(nodes))
            page.click("#btn-start")
            expect(page.locator(".lane")).to_have_count(nodes, timeout=90_000)
            page.wait_for_selector(".lane.leader", timeout=60_000)
            for i in range(1, 5):
                assert write(f"n{nodes}-{i}")["ok"]
            last = "ABCDEFG"[nodes - 1]
            page.locator(f"#lane-{last} .btn-pause").click()
            expect(page.locator(f"#lane-{last} .state")).to_have_text("paused")
            page.locator(f"#lane-{last} .btn-resume").click()
            expect(page.locator(f"#lane-{last} .state")).to_have_text("running")
            fits_everywhere(page, nodes, shots, f"{nodes}-nodes")
    assert errors == [], errors
