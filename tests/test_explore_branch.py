"""The explorer in the dashboard, server side: a counterexample opened at a step (lab.explore.branch), the choices
enabled there and each rule's status, taking one (the run branches), saving the branch as a script that `hwm-lab
simulate --script` replays to the same state; and the dashboard's `explore` socket event (web.app, web.sockets)."""

from __future__ import annotations

import json

import pytest

from lab.explore.branch import Branch, find_script, state_of
from lab.explore.counterexample import explore
from tests.dashboard.conftest import make_app, received
from tests.test_explore import ARTICLE, cli
from web.fold import Replay


@pytest.fixture(scope="module")
def article(tmp_path_factory):
    """The article's formula (`sorted(m)[n // 2]`) on 4 nodes: the counterexample `hwm-lab explore` finds."""
    out = tmp_path_factory.mktemp("article")
    found = explore(ARTICLE, sizes=(4,), budget=20, out=out)  # its script and trace, as `hwm-lab explore` writes
    assert found.violation.check == "hwm-majority"
    return out


def other_choice(branch: Branch) -> tuple[str, ...]:
    """A choice enabled two steps before the end that is not the step the counterexample took there."""
    taken = branch.steps[branch.at][0]
    return next(words for words, _ in branch.choices() if words != taken and words[0] == "deliver")


def test_the_last_step_breaks_the_rule_and_offers_no_choice(article):
    branch = Branch.open(article)
    assert branch.at == len(branch.steps) and branch.impl == ARTICLE
    assert branch.choices() == []  # the run ends where a rule broke, as simulate --script ends it
    broken = {r.check: r.broken for r in branch.rules() if r.broken}
    assert list(broken) == ["hwm-majority"] and "a majority is 3" in str(broken["hwm-majority"])


def test_two_steps_back_every_enabled_choice_is_listed_and_every_rule_holds(article):
    branch = Branch.open(article / "trace")  # its trace folder names it too
    branch.go(branch.at - 2)
    assert not [r for r in branch.rules() if r.broken]
    kinds = {words[0] for words, _ in branch.choices()}
    assert {"deliver", "drop", "duplicate", "campaign", "kill", "pause", "write", "read", "cut"} <= kinds
    world, _ = branch.world()
    for src, dst, message in world.inflight:  # each message in flight can be delivered and dropped
        labels = [str(label) for words, label in branch.choices() if words[1:2] == (f"{src}->{dst}",)]
        assert any(label.startswith(f"{dst} receives from {src}") for label in labels)
        assert any(label.startswith(f"The network loses a message from {src} to {dst}") for label in labels)


def test_taking_another_choice_branches_the_run_and_the_saved_script_replays_to_that_state(article, tmp_path):
    branch = Branch.open(article)
    end = state_of(branch.world()[0])
    branch.go(branch.at - 2)
    words = other_choice(branch)
    branch.take(words)
    assert branch.at == len(branch.steps) == len(Branch.open(article).steps) - 1
    assert branch.steps[-1][0] == words
    reached = state_of(branch.world()[0])
    assert reached != end
    saved = branch.save(tmp_path)
    assert saved.name == "branch-1.txt" and branch.save(tmp_path).name == "branch-2.txt"  # never overwritten
    assert state_of(Branch.open(saved).world()[0]) == reached
    code, out, _ = cli("simulate", "--script", str(saved), "--out", str(tmp_path / "trace"), "--json")
    assert code == 0 and json.loads(out)["passed"]
    replayed = Replay(tmp_path / "trace")
    folded = {n["id"]: n for n in replayed.fold_at(len(replayed)).status()["nodes"]}
    for name, node in reached["nodes"].items():
        assert (folded[name]["hwm"], folded[name]["generation"], len(folded[name]["log"])) == \
            (node["hwm"], node["generation"], len(node["log"])), name


def test_a_choice_not_enabled_a_step_out_of_range_and_a_timed_script_are_refused(article, tmp_path):
    branch = Branch.open(article)
    with pytest.raises(ValueError):
        branch.take(("campaign", "A"))  # the last step broke a rule: no choice
    branch.go(1)
    with pytest.raises(ValueError):
        branch.take(("restart", "A"))  # A is running
    assert branch.at == 1 and len(branch.steps) == len(Branch.open(article).steps)  # nothing lost
    with pytest.raises(ValueError):
        branch.go(len(branch.steps) + 1)
    (tmp_path / "timed.txt").write_text('nodes 3\nstep "one"\n  wait-leader\n')
    with pytest.raises(ValueError):
        Branch.open(tmp_path / "timed.txt")
    with pytest.raises(ValueError):
        find_script(tmp_path / "nowhere")


@pytest.fixture
def served():
    """Dashboards made by a test, stopped after it (with them, their explorer's worker process)."""
    made = []

    def make(**config):
        app, socketio, dashboard = make_app(**config)
        made.append(dashboard)
        return app, socketio, dashboard
    yield make
    for dashboard in made:
        worker = dashboard.exploring.proc if dashboard.exploring else None
        dashboard.stop()
        assert worker is None or worker.poll() is not None


def test_the_dashboard_explores_through_its_socket(article, served):
    app, socketio, dashboard = served(EXPLORE_DIR=str(article))
    client = socketio.test_client(app)
    hello = received(client, "hello")[0]["args"][0]
    assert hello["mode"] == "replay" and hello["explore"]["at"] == hello["explore"]["total"]
    assert [r["check"] for r in hello["explore"]["rules"] if r["broken"]] == ["hwm-majority"]
    back = client.emit("explore", {"action": "go", "at": hello["explore"]["at"] - 2}, callback=True)
    assert back["ok"] and back["explore"]["choices"] and back["position"] < len(dashboard.replay)
    frame = received(client, "frame")[-1]["args"][0]
    assert frame["position"] == back["position"]  # the stage shows the state two steps back
    words = next(c["words"] for c in back["explore"]["choices"] if c["words"][0] == "drop")
    taken = client.emit("explore", {"action": "take", "words": words}, callback=True)
    assert taken["ok"] and taken["explore"]["at"] == taken["explore"]["total"] == back["explore"]["at"] + 1
    assert taken["position"] == len(dashboard.replay)  # the branch's own trace, at its end
    saved = client.emit("explore", {"action": "save"}, callback=True)
    assert saved["explore"]["saved"].endswith("branch-1.txt") and find_script(saved["explore"]["saved"])
    refused = client.emit("explore", {"action": "take", "words": ["restart", "Z"]}, callback=True)
    assert refused["ok"] is False and "not a choice enabled" in refused["error"]
    assert client.emit("explore", {"action": "go", "at": "x"}, callback=True)["ok"] is False


def test_a_watcher_cannot_explore_and_a_replay_of_a_counterexample_offers_it(article, served):
    app, socketio, _ = served(REPLAY_DIR=str(article / "trace"), TOKEN="secret")
    watcher = socketio.test_client(app)
    hello = received(watcher, "hello")[0]["args"][0]
    assert hello["replay"]["explorable"] and hello["explore"] is None
    refused = watcher.emit("explore", {"action": "open", "dir": str(article), "at": 3}, callback=True)
    assert refused["ok"] is False
    teacher = socketio.test_client(app, auth={"token": "secret"})
    opened = teacher.emit("explore", {"action": "open", "dir": str(article / "trace"), "at": 3}, callback=True)
    assert opened["ok"] and opened["explore"]["at"] == 3


NEVER_RETURNS = """from solutions import *  # noqa: F401,F403


def high_water_mark(match_indexes):
    while True:
        pass
"""

ELECTED = """nodes 3
network manual
impl never_returns

step "1. A starts an election for generation 1"
  campaign A
step "2. B receives from A: vote request for generation 1 (log end 0, last generation 0)"
  deliver A->B VoteRequest
step "3. A receives from B: vote granted in generation 1"
  deliver B->A VoteResponse
step "4. B receives from A: heartbeat of generation 1 (after index 0, HWM 0)"
  deliver A->B ReplicationRequest
"""


def test_a_function_that_never_returns_is_stopped_in_the_worker_and_the_dashboard_keeps_serving(
        served, tmp_path, monkeypatch):
    (tmp_path / "never_returns.py").write_text(NEVER_RETURNS)
    (tmp_path / "counterexample.txt").write_text(ELECTED)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # where the worker finds the student's module
    app, socketio, dashboard = served(EXPLORE_DIR=str(tmp_path))
    client = socketio.test_client(app)
    taken = client.emit("explore", {"action": "take", "words": ["deliver", "B->A", "ReplicationResponse"]},
                        callback=True)
    assert taken["ok"], taken
    broken = [r for r in taken["explore"]["rules"] if r["broken"]]
    assert [r["check"] for r in broken] == ["student-fault"] and "did not return within 1 s" in broken[0]["broken"]
    assert taken["explore"]["choices"] == []
    assert client.emit("explore", {"action": "go", "at": 2}, callback=True)["ok"]  # still serving


def test_a_worker_that_does_not_answer_in_time_is_stopped(article):
    from web.explorer import Exploring

    with pytest.raises(ValueError, match="did not answer within"):
        Exploring(str(article), answer_seconds=0.01)
