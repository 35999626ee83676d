"""The explorer in the browser (issue 35), in Debian's Chromium against `hwm-lab replay`: the article's-formula
counterexample opened from the replay page at its last step, two steps back, another enabled choice taken, a
different state reached and saved; `hwm-lab simulate --script` replays the saved file to the state the page shows."""

from __future__ import annotations

import re
import subprocess
import sys

from lab.explore.counterexample import explore
from tests.dashboard.browser import BROWSER_MARKS, ROOT, chromium, open_page, shots_dir
from tests.dashboard.test_cli import Served
from web.fold import Replay

pytestmark = BROWSER_MARKS

ARTICLE = "tests.wrong_variants.ex1_article_formula"


def lanes(page) -> dict[str, str]:
    """What each lane says of its log and mark ("log end 1 · HWM 1")."""
    return page.evaluate("Object.fromEntries([...document.querySelectorAll('.lane')]"
                         ".map((l) => [l.dataset.node, l.querySelector('.l2').textContent]))")


def test_open_a_counterexample_go_back_two_steps_take_another_choice_save_and_replay_it(tmp_path):
    from playwright.sync_api import expect

    found = explore(ARTICLE, sizes=(4,), budget=20, out=tmp_path / "article")  # `sorted(m)[n // 2]` on 4 nodes
    assert found.violation.check == "hwm-majority"
    total = len(found.found.choices)
    errors: list[str] = []
    served = Served("replay", str(tmp_path / "article" / "trace"), "--port", "0", "--async-mode", "eventlet")
    try:
        with chromium() as browser:
            page = open_page(browser, served.url, errors)
            expect(page.locator("#conn")).to_have_text("replay")
            page.evaluate("window.hwmSeek({position: window.hwmState.total})")  # the counterexample's last step
            page.wait_for_function("window.hwmState.position === window.hwmState.total")
            page.click("button[data-tab=replay]")
            page.click("#btn-explore-here")  # the replay page's link to the explorer
            expect(page.locator("#explore-at")).to_have_text(f"The state after step {total} of {total}")
            expect(page.locator("#explore-rules li.broken")).to_have_attribute("data-check", "hwm-majority")
            expect(page.locator("#explore-choices button")).to_have_count(0)  # the run ends where the rule broke
            at_end = lanes(page)

            page.click("#btn-explore-back")
            expect(page.locator("#explore-at")).to_have_text(f"The state after step {total - 1} of {total}")
            page.click("#btn-explore-back")
            expect(page.locator("#explore-at")).to_have_text(f"The state after step {total - 2} of {total}")
            expect(page.locator("#explore-rules li.broken")).to_have_count(0)
            taken_there = " ".join(found.found.choices[total - 2])
            choice = page.locator("#explore-choices button[data-words^='deliver']"
                                  f":not([data-words='{taken_there}'])").first
            words = choice.get_attribute("data-words")
            choice.click()
            expect(page.locator("#explore-at")).to_have_text(f"The state after step {total - 1} of {total - 1}")
            page.wait_for_function("window.hwmState.position === window.hwmState.total")
            reached = lanes(page)
            assert reached != at_end, (words, reached)  # another state than the counterexample's end
            page.click("#btn-explore-save")
            expect(page.locator("#explore-saved")).to_contain_text("branch-1.txt")
            page.screenshot(path=str(shots_dir("explore") / "branched.png"))
            assert errors == []
    finally:
        assert served.stop() == 0

    saved = tmp_path / "article" / "branch-1.txt"
    assert saved.read_text().rstrip().endswith(words)  # the choice taken is the script's last step
    out = subprocess.run([sys.executable, "-m", "lab.cli", "simulate", "--script", str(saved), "--out",
                          str(tmp_path / "replayed")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    replayed = Replay(tmp_path / "replayed")
    nodes = replayed.fold_at(len(replayed)).status()["nodes"]
    shown = {n: tuple(int(x) for x in re.findall(r"\d+", text)) for n, text in reached.items()}
    assert shown == {n["id"]: (len(n["log"]), n["hwm"]) for n in nodes}  # the page's state, replayed
