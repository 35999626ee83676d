"""hwm-lab explore: the world's choices and copies, the searches, the shrinker, the counterexample script that
`hwm-lab simulate --script` replays to the same violation, the explanation, and the student's faults. Long
searches (every mistake, the reference for 120 s) are in bench/explore.py."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import re
import textwrap
import weakref
from pathlib import Path

import pytest

from lab.cli import main
from lab.explore.search import Config, Figures, Found, bfs, run, search
from lab.explore.shrink import shrink
from lab.sim.world import Bounds, World
from lab.i18n import localize
from lab.harness.script import parse

LOOSE_GATE = "tests.wrong_variants.ex4_serves_above_hwm"
ARTICLE = "tests.wrong_variants.ex1_article_formula"


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


# ---- the world ------------------------------------------------------------------------------------------------


def test_messages_wait_in_flight_until_a_choice_delivers_them():
    world = World(3, fast=True)
    # a read at every index, one past the log's end too (here, the empty log's index 1)
    assert world.choices() == [("campaign", "A"), ("read", "1", "at", "A"), ("kill", "A"), ("campaign", "B"),
                               ("read", "1", "at", "B"), ("kill", "B"), ("campaign", "C"), ("read", "1", "at", "C"),
                               ("kill", "C")]
    world.apply(("campaign", "A"))
    assert [(s, d, type(m).__name__) for s, d, m in world.inflight] == [("A", "B", "VoteRequest"),
                                                                        ("A", "C", "VoteRequest")]
    assert ("deliver", "A->B", "VoteRequest") in world.choices()
    world.apply(("deliver", "A->B", "VoteRequest"))
    world.apply(("deliver", "B->A", "VoteResponse"))
    assert world.leader() == "A"
    assert world.apply(("deliver", "B->A", "VoteResponse")) is None  # no longer in flight
    assert world.apply(("write", "A")) == ("write", "v1", "to", "A", "nowait")


def test_the_worlds_clients_are_the_simulators_and_a_node_down_answers_node_down():
    """The world's write and read are the simulator's (one implementation): the request ids count on in a clone,
    a write is traced with its digest, and a node that is down answers NODE_DOWN to both."""
    from lab.core.events import CLIENT_WRITE
    from lab.core.messages import NODE_DOWN, digest

    world = World(3, fast=False)
    world.apply(("kill", "B"))
    write = world.write("v1", node="B")
    assert world.answers[write].refusal == NODE_DOWN and not world.answers[write].ok
    read = world.read(1, "B")
    assert read.refusal == NODE_DOWN and read.request == "r2" and "B" in localize(read.error, "en")
    assert world.clone().write("v2", node="A") == "w3"
    traced = [e for e in world.events if e["type"] == CLIENT_WRITE]
    assert [(e["request"], e["digest"]) for e in traced] == [("w1", digest("v1"))]


def test_a_clone_steps_on_its_own_and_equal_states_hash_alike():
    world = World(3, fast=True)
    world.apply(("campaign", "A"))
    key = world.key()
    child = world.clone()
    child.apply(("deliver", "A->B", "VoteRequest"))
    child.apply(("deliver", "B->A", "VoteResponse"))
    assert child.leader() == "A" and world.leader() is None
    assert world.key() == key != child.key()
    twin = world.clone()
    twin.apply(("deliver", "A->B", "VoteRequest"))
    twin.apply(("deliver", "B->A", "VoteResponse"))
    assert twin.key() == child.key()



def test_a_world_the_search_drops_is_freed_without_the_collector():
    """The search runs with the collector off and no longer collects per level: a dropped world must hold no cycle
    (its ports, trace sinks and monitor see it through a weak reference), or the search's memory grows unbounded."""
    gc.disable()
    try:
        world = World(3, fast=True)
        child = world.clone()
        for words in (("campaign", "A"), ("deliver", "A->B", "VoteRequest"), ("deliver", "B->A", "VoteResponse"),
                      ("write", "v1", "to", "A", "nowait"), ("kill", "C"), ("restart", "C")):
            assert child.apply(words) is not None
        assert child.violations() == [] and child.leader() == "A"
        gone = weakref.ref(child)
        del child
        assert gone() is None
    finally:
        gc.enable()

def test_the_bounds_end_the_breadth_first_search():
    figures = Figures()
    found = bfs(Config(2), Bounds(writes=0, generation=1, kills=0, kinds=frozenset({"deliver", "campaign"})),
                depth=30, max_states=10**6, deadline=float("inf"), figures=figures)
    assert found is None and figures.distinct > 10 and figures.depth < 30  # the space ran out before the depth


# ---- searches and shrinking -----------------------------------------------------------------------------------


def test_the_breadth_first_search_finds_the_shortest_run():
    found, figures = search([Config(3, impl=LOOSE_GATE)], budget=20)
    # every call is judged by its exercise's rule as the run goes: the first read, of index 1 on an empty log at
    # mark 0, is served by this gate (the replica then finds no entry there, but the gate's answer was wrong)
    assert found.search == "bfs" and found.violation.check == "student-call"
    assert found.choices == [("read", "1", "at", "A")]
    call = dict(found.violation.facts)["call"]
    assert (call.function, call.args, call.result) == ("check_read", (1, 0), None)
    assert str(call.why) == "it serves index 1, above the high-water mark 0"
    assert figures.states <= 3  # found at the first level: campaign A, then the read


def test_random_walks_find_the_articles_formula_on_four_nodes_and_the_shrinker_keeps_the_rule_broken():
    found, _ = search([Config(4, impl=ARTICLE)], budget=25, seed=0)
    assert found is not None and found.violation.check == "hwm-majority"
    small = shrink(found)
    assert small.violation.check == "hwm-majority" and len(small.choices) <= min(25, len(found.choices))
    for position in range(len(small.choices)):  # 1-minimal: no single step can go
        _, violation, _ = run(small.config, small.choices[:position] + small.choices[position + 1:])
        assert violation is None or violation.check != "hwm-majority", small.choices[position]


def test_the_shrinker_moves_a_run_to_a_smaller_cluster_where_it_breaks_the_rule_in_no_more_steps():
    # found on five nodes, the gate's wrong answer needs one node: the run is moved to three, E named C there
    # (only the call's rule asked: the run stays the call's)
    config = Config(5, impl=LOOSE_GATE, rules=frozenset({"student-call"}))
    choices = [("campaign", "D"), ("deliver", "D->E", "VoteRequest"), ("read", "1", "at", "E")]
    done, violation, _ = run(config, choices)
    assert violation is not None and violation.check == "student-call"
    small = shrink(Found(config, done, violation, "walk"))
    assert small.config.nodes == 3 and small.choices == [("read", "1", "at", "C")]
    assert run(small.config, small.choices)[1].check == "student-call"


def test_a_run_that_breaks_a_calls_rule_is_moved_toward_the_clusters_rule():
    # The loose gate's one-step run: check_read(1, 0) serves index 1, but the node has no index 1 and refuses it;
    # the cluster's state breaks nothing there. A short search finds where it does: a node holding index 1 under
    # its mark serves it. The counterexample shows that rule, with only the cluster's rules ending its replay.
    from lab.explore.search import CLUSTER_RULES

    config = Config(3, impl=LOOSE_GATE)
    done, violation, _ = run(config, [("read", "1", "at", "A")])
    assert violation.check == "student-call"
    small = shrink(Found(config, done, violation, "bfs"))
    assert small.violation.check == "read-above-hwm" and small.config.rules == CLUSTER_RULES
    assert small.choices[-1][0] == "read" and len(small.choices) <= 6
    for position in range(len(small.choices)):  # 1-minimal for the rule it shows
        _, broken, _ = run(small.config, small.choices[:position] + small.choices[position + 1:])
        assert broken is None or broken.check != "read-above-hwm", small.choices[position]


MOVES_BACK = ("from solutions import *  # noqa\n\n\ndef on_replication_response(match_index, follower, acknowledged, "
              "current_hwm, generation, generation_at, high_water_mark):\n"
              "    match_index[follower] = max(match_index.get(follower, 0), acknowledged)\n"
              "    others = [m for node, m in match_index.items() if node != follower]\n"
              "    candidate = high_water_mark(others + [acknowledged])\n"
              "    if generation_at(candidate) == generation:\n        return candidate\n    return current_hwm\n")


def test_a_run_that_breaks_only_a_calls_rule_stays_the_calls(tmp_path, monkeypatch):
    # A leader whose returned mark moves back (it counts a late acknowledgement as it came): the replica never moves
    # its mark back, so no rule of the cluster's state breaks; the counterexample is the call's, and says what the
    # run did with the answer.
    from lab.explore.counterexample import explore

    (tmp_path / "moves_back.py").write_text(MOVES_BACK)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = explore("moves_back:on_replication_response", sizes=(3,), budget=20, seed=0)
    assert result.found is not None and result.found.violation.check == "student-call"
    said = str(result.explain())
    assert "A rule of one function's answers" in said and "judged on its own inputs" in said
    assert "What the run did in that step: " in said and "kept its high-water mark at " in said


def test_a_run_that_needs_its_cluster_stays_on_it():
    # the article's formula is right on three nodes: its counterexample on four cannot move
    found, _ = search([Config(4, impl=ARTICLE)], budget=25, seed=0)
    assert shrink(found).config.nodes == 4


@pytest.mark.parametrize("words, nodes, renamed", [
    (("deliver", "B->E", "VoteRequest", "1"), ["B", "E"], ("deliver", "A->C", "VoteRequest", "1")),
    (("cut", "E<->B"), ["E", "B"], ("cut", "C<->A")), (("heal",), [], ("heal",)),
    (("read", "2", "at", "D"), ["D"], ("read", "2", "at", "B")),
    (("write", "v1", "to", "E", "nowait"), ["E"], ("write", "v1", "to", "C", "nowait")),
    (("kill", "D", "lose-unsynced"), ["D"], ("kill", "B", "lose-unsynced")), (("campaign", "B"), ["B"], ("campaign", "A"))])
def test_a_step_is_renamed_node_by_node(words, nodes, renamed):
    from lab.explore.shrink import _renamed, nodes_of

    assert nodes_of(words) == nodes
    assert _renamed(words, {"B": "A", "D": "B", "E": "C"}) == renamed


def test_the_reference_breaks_no_rule_in_a_short_search():
    found, figures = search([Config(3), Config(4, "leader-epoch")], budget=3, seed=1)
    assert found is None, found and found.violation.sentence()
    assert figures.states > 1000


# ---- the command, the script and the replay ---------------------------------------------------------------------


def test_explore_writes_a_script_that_simulate_replays_to_the_same_violation(tmp_path):
    code, out, _ = cli("explore", "--impl", LOOSE_GATE, "--nodes", "3", "--budget", "20", "--out",
                       str(tmp_path), "--json")
    assert code == 1
    result = json.loads(out)
    violation = result["violation"]
    assert violation["rule"] == "read-above-hwm" and violation["kind"] == "state" and violation["steps"] <= 25
    assert violation["title"] == "No read above the serving node's HWM"
    assert set(result["figures"]) >= {"states", "distinct_states", "depth", "states_per_second", "seconds"}
    script = tmp_path / "counterexample.txt"
    assert parse(script.read_text(), "c").network == "manual"
    assert parse(script.read_text(), "c").impl == LOOSE_GATE  # the code it was found with: no flag to replay it
    code, out, _ = cli("simulate", "--script", str(script), "--json")
    assert code == 1
    assert json.loads(out)["violation"]["detail"] == violation["detail"]
    events = (tmp_path / "trace" / "events-cluster.jsonl").read_text()
    assert '"type":"rule_broken"' in events and (tmp_path / "trace" / "trace.json").exists()
    calls = [json.loads(line) for path in (tmp_path / "trace").glob("events-[A-C].jsonl")
             for line in path.read_text().splitlines() if '"student_call"' in line]
    assert any(c["function"] == "check_read" and c["wrong"] for c in calls)


def test_simulate_script_says_a_missing_file_skips_a_step_that_cannot_be_done_and_counts_steps_from_1(tmp_path):
    code, _, err = cli("simulate", "--script", str(tmp_path / "nope.txt"))
    assert code == 2 and err.strip() == f"hwm-lab simulate: there is no script file {tmp_path / 'nope.txt'}"
    code, _, err = cli("simulate", "--script", str(tmp_path / "nope.txt"), "--lang", "es")
    assert "no existe el archivo de guion" in err and "available" not in err and "disponibles" not in err
    code, out, _ = cli("explore", "--impl", LOOSE_GATE, "--nodes", "3", "--budget", "20", "--out", str(tmp_path),
                       "--json")
    steps = json.loads(out)["violation"]["steps"]
    script = (tmp_path / "counterexample.txt").read_text()
    code, out, _ = cli("simulate", "--script", str(tmp_path / "counterexample.txt"), "--json")
    verdict = json.loads(out)
    assert verdict["expectations"][-1]["step"] == steps  # from 1, as the text says it
    assert f"step {steps}: rule read-above-hwm broken" in verdict["aborted"]
    broken = [json.loads(line) for line in (tmp_path / "trace" / "events-cluster.jsonl").read_text().splitlines()
              if '"rule_broken"' in line]
    assert [e["step"] for e in broken] == [steps]
    # The first step left out (the election): the vote's messages are never sent, so their steps cannot be done;
    # the replay skips them, as the shrinker does, and says so; the read is refused, and no rule breaks.
    lines = script.splitlines()
    first = next(k for k, line in enumerate(lines) if line == "step" or line.startswith("step "))
    (tmp_path / "left-out.txt").write_text("\n".join(lines[:first] + lines[first + 2:]) + "\n")
    code, out, _ = cli("simulate", "--script", str(tmp_path / "left-out.txt"))
    assert code == 0, out
    skipped = [line for line in out.splitlines() if line.startswith("  [skipped] ")]
    assert skipped and all("cannot be done in this state, so the replay goes on without it" in line
                           for line in skipped), out
    from lab.explore.search import CLUSTER_RULES

    choices = [tuple(step.commands[0].words) for step in parse(script, "c").steps]
    assert run(Config(3, impl=LOOSE_GATE, rules=CLUSTER_RULES), choices[1:])[1] is None  # (the shrinker too)
    code, out, _ = cli("simulate", "--script", str(tmp_path / "left-out.txt"), "--json")
    assert [s["command"].split()[0] for s in json.loads(out)["skipped"]] == ["deliver"] * len(skipped)


def test_a_counterexample_of_one_exercise_replays_as_written(tmp_path):
    # Found with the student's exercise 1 and the reference for the rest: the script says so, and a replay without
    # flags runs that same code (with the reference alone, the run would break nothing).
    code, out, _ = cli("explore", "--impl", ARTICLE, "--exercise", "1", "--nodes", "4", "--budget", "25", "--out",
                       str(tmp_path), "--json")
    assert code == 1
    violation = json.loads(out)["violation"]
    script = tmp_path / "counterexample.txt"
    assert f"impl {ARTICLE}:high_water_mark" in script.read_text().splitlines()
    code, out, _ = cli("simulate", "--script", str(script), "--json")
    assert code == 1 and json.loads(out)["violation"]["detail"] == violation["detail"]
    code, out, _ = cli("simulate", "--script", str(script), "--impl", "solutions", "--json")  # a flag overrides it
    assert code == 0 and json.loads(out)["violation"] is None


def test_the_same_seed_writes_the_same_counterexample_byte_for_byte(tmp_path):
    texts = []
    for attempt in ("one", "two"):
        code, _, _ = cli("explore", "--impl", ARTICLE, "--nodes", "4", "--budget", "25", "--seed", "0", "--out",
                         str(tmp_path / attempt), "--json")
        assert code == 1
        texts.append([(tmp_path / attempt / "counterexample.txt").read_bytes(),
                      (tmp_path / attempt / "trace" / "events-A.jsonl").read_bytes(),
                      (tmp_path / attempt / "counterexample.html").read_bytes()])  # its replay in one file
    assert texts[0] == texts[1]


def test_nothing_found_exits_0_and_bad_arguments_exit_2(tmp_path):
    code, out, _ = cli("explore", "--impl", "solutions", "--nodes", "3", "--budget", "1", "--out", str(tmp_path),
                       "--json")
    assert code == 0 and json.loads(out)["violation"] is None
    assert cli("explore", "--impl", "solutions", "--nodes", "0")[0] == 2
    assert cli("explore", "--impl", "no_such_module_anywhere")[0] == 2
    assert cli("explore", "--exercise", "9", "--impl", "solutions")[0] == 2
    assert cli("simulate")[0] == 2


def test_the_explanation_names_the_rule_the_steps_and_the_call_in_three_languages(tmp_path):
    from lab.explore.counterexample import explore

    result = explore(LOOSE_GATE, sizes=(3,), budget=20, out=tmp_path)
    english = str(result.explain())
    assert english.startswith("Rule broken: No read above the serving node's HWM\nA rule of the cluster's state")
    # the student's call, its inputs and result, the exercise's rule it broke judged on those inputs, and what the
    # node then did
    assert "check_read(1, 0) returned None (exercise 4); judged on its own inputs, it serves index 1, above the " \
           "high-water mark 0." in english
    assert "What the run did in that step: A served index 1 to the client, with its high-water mark at 0." in english
    assert "A client reads index 1 at A" in english and "reference" not in english
    spanish, chinese = localize(result.explain(), "es"), localize(result.explain(), "zh")
    assert spanish != english and chinese != english and "check_read(1, 0)" in spanish + chinese
    for said in (spanish, chinese):  # every sentence in the reader's language
        assert "Rule broken" not in said and "judged on its own inputs" not in said and "What the run" not in said


def test_the_headline_is_the_rule_actually_broken_and_the_worlds_findings_read_as_invariants():
    from lab.core import reasons
    from lab.core.monitor import Violation
    from lab.core.reasons import Reason
    from lab.explore.explain import TITLES, explanation
    from lab.i18n import say

    older = Reason(reasons.RULE_OLDER_ENTRY, leader="A", index=1, generation=2, entry_generation=1)
    said = str(explanation(Violation("hwm-majority", "A", 1, older), [say("A starts")] * 2, [], students=False))
    assert said.startswith("Rule broken: A leader raises its HWM only over an entry of its own generation\n"), said
    minority = Reason(reasons.RULE_MINORITY, leader="A", index=1, generation=1, nodes=["A"], holders=1, size=3,
                      majority=2)
    said = str(explanation(Violation("hwm-majority", "A", 1, minority), [say("A starts")] * 2, [], students=False))
    assert said.startswith("Rule broken: The HWM never exceeds what a majority held\n"), said
    assert [str(TITLES[c]) for c in ("student-fault", "student-call", "node-exited")] == [
        "No function of yours fails", "Every call of your functions keeps its exercise's rule", "No node stops"]


# ---- the student's faults ---------------------------------------------------------------------------------------

FAULTY = {
    "raises": ("check_read", "def check_read(index, high_water_mark):\n    return 1 // 0\n", "ZeroDivisionError"),
    "loops": ("high_water_mark", "def high_water_mark(match_indexes):\n    while True:\n        pass\n",
              "0.2 s"),
    "wrong_type": ("follower_append", "def follower_append(log, prev_index, prev_generation, entries):\n"
                                      "    return (True, prev_index)\n", "expected AppendResult"),
}


@pytest.mark.parametrize("kind", sorted(FAULTY))
def test_a_student_function_that_fails_ends_the_search_naming_it(kind, tmp_path, monkeypatch):
    function, body, detail = FAULTY[kind]
    module = f"faulty_{kind}"
    (tmp_path / f"{module}.py").write_text("from solutions import *  # noqa\n\n" + textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    found, _ = search([Config(3, impl=module, limit=0.2)], budget=20)
    assert found is not None and found.violation.check == "student-fault"
    fault = dict(found.violation.facts)["fault"]
    assert fault.function == function and detail in fault.detail
    assert fault.file.endswith(f"{module}.py") and fault.line >= 3 and fault.inputs
    from lab.explore.explain import rule_words

    said = {"raises": "raised ZeroDivisionError", "loops": "did not return within 0.2 s",
            "wrong_type": "returned (True, "}[kind]
    assert said in str(rule_words(found.violation)) and f"{module}.py:{fault.line}" in str(rule_words(found.violation))


# ---- where students meet it -------------------------------------------------------------------------------------


def test_exercise_check_ends_with_a_short_exploration_that_shows_the_counterexample(tmp_path):
    from lab.student.checks import run_check

    report = run_check(4, LOOSE_GATE, out_root=tmp_path)
    assert report.status == "failing" and report.exploration["found"]
    assert report.exploration["rule"] == "read-above-hwm" and report.exploration["steps"] <= 25
    text = report.text("en")
    assert "[FAIL] explore: a run of" in text and "check_read(1, 0) returned None" in text
    assert (tmp_path / "ex4-explore" / "counterexample.txt").exists()
    passing = run_check(4, "solutions", out_root=tmp_path)
    assert passing.status == "passing" and not passing.exploration["found"]
    assert "[ok] explore: no rule broken" in passing.text("en")


def test_under_high_water_mark_the_search_rediscovers_kip_101_and_explains_the_lost_write(tmp_path):
    code, out, _ = cli("explore", "--impl", "solutions", "--nodes", "3", "--truncation", "high-water-mark",
                       "--rule", "acked-in-final-logs", "--budget", "60", "--out", str(tmp_path), "--json")
    assert code == 1
    violation = json.loads(out)["violation"]
    assert violation["rule"] == "acked-in-final-logs" and violation["steps"] <= 25
    # KIP-101's two ways: truncated to the mark on restart, or kept diverging below the leader's (no generation
    # is compared); either way a write the client was told is committed is gone
    assert "the write acknowledged at index" in violation["explanation"] and " is lost: " in violation["explanation"]
    # no call to blame (the reference's code): the strategy's known flaw is the lesson, not a fault of the lab
    assert "This is the high-water-mark strategy's known flaw (KIP-101)" in violation["explanation"]
    assert "a fault of the lab" not in violation["explanation"]
    script = tmp_path / "counterexample.txt"
    assert "rules acked-in-final-logs" in script.read_text()
    code, out, _ = cli("simulate", "--script", str(script), "--json")
    assert code == 1 and json.loads(out)["violation"]["detail"] == violation["detail"]
    # the same run under the fix (KIP-101's leader epochs) breaks no rule
    text = script.read_text().replace("truncation high-water-mark", "truncation leader-epoch")
    (tmp_path / "fixed.txt").write_text(text)
    code, out, _ = cli("simulate", "--script", str(tmp_path / "fixed.txt"), "--json")
    assert json.loads(out)["violation"] is None


def test_the_dashboards_replay_marks_the_broken_step_and_shows_the_students_calls(tmp_path):
    from web.fold import Replay

    code, _, _ = cli("explore", "--impl", LOOSE_GATE, "--nodes", "3", "--budget", "20", "--out", str(tmp_path),
                     "--json")
    assert code == 1
    replay = Replay(tmp_path / "trace")
    info = replay.info()
    assert info["stepped"] and len(info["steps"]) >= 4
    assert info["broken"]["step"] == len(info["steps"]) and "Rule broken" in str(info["broken"]["text"])
    # a step's tick lands on its last event: the red one shows the rule broken, and step ▶ gets there
    step = info["steps"][-1]
    assert step["start"] < info["broken"]["n"] <= step["n"] == len(replay)
    assert replay.events[step["start"] - 1]["type"] == "step"
    calls = [str(t) for t, e in zip(replay.texts, replay.events) if e["type"] == "student_call"]
    assert "A calls your check_read(1, 0) → None, which breaks the rule of exercise 4, judged on those inputs: it " \
           "serves index 1, above the high-water mark 0" in calls


def test_a_function_not_written_yet_is_a_usage_error_not_a_violation(tmp_path):
    code, out, err = cli("explore", "--impl", "exercises", "--nodes", "3", "--budget", "5", "--out", str(tmp_path))
    assert code == 2 and "not written yet" in err and "--exercise N" in err
    code, out, err = cli("explore", "--impl", "exercises", "--exercise", "4", "--budget", "5", "--out", str(tmp_path))
    assert code == 2 and "exercise 4 cannot run yet: check_read -- not written yet" in err


def test_a_search_leaves_out_the_runs_that_reach_a_function_not_written_yet(tmp_path, monkeypatch):
    # Everything written but exercise 4: the search goes on without the runs that read, and says so.
    (tmp_path / "no_reads.py").write_text("from solutions import *  # noqa\n\n\ndef check_read(index, hwm):\n"
                                          "    raise NotImplementedError('exercise 4')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found, figures = search([Config(3, impl="no_reads")], budget=2, seed=0)
    assert found is None and figures.unwritten == {"check_read"}
    assert {"high_water_mark", "on_replication_response", "follower_append"} <= figures.called
    assert figures.as_dict()["left_out"] == ["check_read"]


def test_a_stale_epoch_answer_no_longer_cuts_a_committed_entry():
    """Found by explore on the reference under leader-epoch (120 s at 3 nodes): A restarted, asked the leader
    where generation 1 ends (twice), appended index 2 of generation 2, which was committed, restarted again, and
    took the answer to its earlier question as the answer to its new one: it cut index 2. The replica now heeds only
    the answer to the question it asks."""
    from lab.harness.scenario import simulate

    verdict = simulate(str(Path(__file__).with_name("explore_cases") / "leader_epoch_stale_answer.txt"))
    assert verdict.violation is None and verdict.passed, verdict.summary()


# ---- what a search reached ----------------------------------------------------------------------------------------

PLAIN_READ = ("from solutions import *  # noqa\n\n\ndef check_read(index, high_water_mark):\n    if index < 1:\n"
              "        return 'below one'\n    if index > high_water_mark:\n        return 'above the mark'\n"
              "    return None\n")


def test_a_world_records_each_choice_and_the_range_of_each_calls_inputs(tmp_path, monkeypatch):
    (tmp_path / "plain_read_world.py").write_text(PLAIN_READ)
    monkeypatch.syspath_prepend(str(tmp_path))
    world = World(3, impl="plain_read_world", fast=True)
    for words in (("read", "1", "at", "A"), ("read", "3", "at", "B"), ("campaign", "A")):
        world.reach.made(world.apply(words))
    reach = world.reach.as_dict()
    assert reach["choices"] == {"campaign": 1, "read": 2}
    read = reach["functions"]["check_read"]
    assert read["calls"] == 2 and read["inputs"] == {"index_minus_mark": [1, 3], "mark": [0, 0]}
    # no read at or below the mark: the lines that serve it never ran, nor the one for an index below 1
    assert read["lines"] == 5 and read["lines_run"] == 3 and read["never_run"] == [6, 9]


def test_nothing_found_says_what_was_searched_and_the_json_holds_it(tmp_path, monkeypatch):
    (tmp_path / "plain_read.py").write_text(PLAIN_READ)
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ("explore", "--impl", "plain_read", "--exercise", "4", "--nodes", "3", "--budget", "4", "--memory", "2",
            "--out", str(tmp_path / "out"))
    code, out, _ = cli(*args)
    assert code == 0 and out.startswith("Nothing found")
    assert re.search(r"Searched: the choices made, by kind: [\d,]+ campaigns?\b", out) and " client read" in out
    assert "Your check_read was called " in out and "the index read " in out and " from the mark" in out
    assert "These lines of its body never ran: 6" in out  # no read below index 1 is ever made
    code, out, _ = cli(*args, "--json")
    figures = json.loads(out)["figures"]
    assert figures["bytes_per_state"] > 0 and figures["bfs_bound"] == 2 * 2**20 // figures["bytes_per_state"]
    read = figures["reach"]["functions"]["check_read"]
    low, high = read["inputs"]["index_minus_mark"]
    assert read["calls"] == figures["reach"]["choices"]["read"] and low <= high
    # a read at or below the mark is served by line 9: it ran exactly when the coverage says such a read was made
    assert 6 in read["never_run"] and (9 in read["never_run"]) == (low > 0)
    code, out, _ = cli(*args, "--lang", "es")
    assert "Your check_read" not in out and "Tu check_read se llamó" in out


def test_a_check_read_that_loops_below_the_mark_is_found(tmp_path, monkeypatch):
    (tmp_path / "loopy_read.py").write_text(PLAIN_READ.replace("    if index > high_water_mark:",
                                                               "    while index < high_water_mark:\n        pass\n"
                                                               "    if index > high_water_mark:"))
    monkeypatch.syspath_prepend(str(tmp_path))
    found, figures = search([Config(3, impl="loopy_read", limit=0.2)], budget=20, seed=0)
    assert found is not None and found.violation.check == "student-fault"
    fault = dict(found.violation.facts)["fault"]
    assert fault.function == "check_read" and "did not return" in fault.sentence()
    assert found.choices[-1][0] == "read"


def test_the_breadth_first_bound_is_set_by_memory_and_the_same_on_every_run():
    small, large = [search([Config(3)], budget=30, max_walks=0, bfs_memory=memory)[1] for memory in (4, 8)
                    for memory in [memory * 2**20]]
    assert 4_000 <= small.bytes_per_state <= 32_000 and small.bytes_per_state % 1024 == 0
    assert small.bfs_bound == 4 * 2**20 // small.bytes_per_state and small.distinct == small.bfs_bound - 1
    assert large.bfs_bound == 8 * 2**20 // large.bytes_per_state > small.bfs_bound
    again = search([Config(3)], budget=30, max_walks=0, bfs_memory=4 * 2**20)[1]
    assert (again.bytes_per_state, again.distinct, again.states) == (small.bytes_per_state, small.distinct,
                                                                    small.states)
    assert again.as_dict()["bytes_per_state"] == small.bytes_per_state


# ---- the same run twice -------------------------------------------------------------------------------------------

FLIPPING_READ = ("from solutions import *  # noqa\n\n_calls = [0]\n\n\ndef check_read(index, high_water_mark):\n"
                 "    _calls[0] += 1\n    if index < 1 or index > high_water_mark:\n        return 'refused'\n"
                 "    return 'refused' if _calls[0] % 2 else None\n")


def test_a_function_that_answers_from_a_global_it_changes_is_named_with_the_call(tmp_path, monkeypatch):
    (tmp_path / "flipping_read.py").write_text(FLIPPING_READ)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = cli("explore", "--impl", "flipping_read", "--exercise", "4", "--nodes", "3", "--budget", "20",
                       "--out", str(tmp_path / "out"))
    assert code == 1
    said = out.strip().splitlines()[-1]
    assert said.startswith("Your check_read, called at step ") and "answered 'refused', then None" in said \
        or "answered None, then 'refused'" in said
    assert "when called again with the same inputs: its answer depends on something outside its arguments" in said
    code, out, _ = cli("explore", "--impl", "flipping_read", "--exercise", "4", "--nodes", "3", "--budget", "20",
                       "--out", str(tmp_path / "out"), "--json")
    twice = json.loads(out)["twice"]
    assert twice["same"] is False and twice["call"]["function"] == "check_read"
    assert {twice["call"]["first"], twice["call"]["second"]} == {"'refused'", "None"}


def test_a_pure_function_replays_to_the_same_counterexample_in_a_fresh_process(tmp_path):
    code, out, _ = cli("explore", "--impl", LOOSE_GATE, "--nodes", "3", "--budget", "20", "--out", str(tmp_path),
                       "--json")
    assert code == 1 and json.loads(out)["twice"] == {"same": True}


def test_a_function_that_answers_from_the_order_of_a_set_is_named_from_the_fresh_process(tmp_path):
    """The order of a set of strings changes with the hash seed: in a search whose seed orders {'keep', 'serve'}
    otherwise than the fresh process's, the answer at the mark differs there, and the call is named."""
    import os
    import subprocess
    import sys

    from lab.explore.twice import OTHER_HASH_SEED

    def first(seed: str) -> str:
        return subprocess.run([sys.executable, "-c", "print(next(iter({'keep', 'serve'})))"], capture_output=True,
                              text=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip()

    theirs = first(OTHER_HASH_SEED)
    seed = next(str(s) for s in range(1, 200) if first(str(s)) != theirs)
    (tmp_path / "set_read.py").write_text(
        "from solutions import *  # noqa\n\n\ndef check_read(index, high_water_mark):\n"
        "    if index < 1 or index > high_water_mark:\n        return 'refused'\n"
        f"    return None if next(iter({{'keep', 'serve'}})) == {theirs!r} else 'refused'\n")
    env = {**os.environ, "PYTHONHASHSEED": seed,
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).resolve().parent.parent)])}
    done = subprocess.run([sys.executable, "-m", "lab.cli", "explore", "--impl", "set_read", "--exercise", "4",
                           "--nodes", "3", "--budget", "20", "--out", str(tmp_path / "out"), "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    twice = json.loads(done.stdout)["twice"]
    assert twice["same"] is False and twice["call"]["function"] == "check_read"
    assert (twice["call"]["first"], twice["call"]["second"]) == ("'refused'", "None")


def test_walks_also_run_with_a_segment_file_per_entry_and_the_script_says_so(tmp_path):
    from lab.explore.counterexample import explore
    from lab.explore.search import SMALL_SEGMENTS, _with_small_segments
    from lab.harness.scenario import simulate

    twins = _with_small_segments([Config(3), Config(5)])
    assert [(c.nodes, c.segment_bytes) for c in twins] == [(3, 40), (3, SMALL_SEGMENTS), (5, 40), (5, SMALL_SEGMENTS)]
    world = Config(3, segment_bytes=SMALL_SEGMENTS).world()
    for words in (("campaign", "A"), ("deliver", "A->B", "VoteRequest"), ("deliver", "B->A", "VoteResponse"),
                  ("write", "A"), ("write", "A")):
        world.apply(words)
    assert [s.first_index for s in world.logs["A"]._segments] == [1, 2]  # one entry per segment file
    result = explore("tests.wrong_variants.ex5_off_by_one", sizes=(3,), budget=30, out=tmp_path, bfs_states=0,
                     max_walks=400)
    assert result.found is not None
    text = (tmp_path / "counterexample.txt").read_text()
    assert f"segment-bytes {result.found.config.segment_bytes}" in text
    verdict = simulate(str(tmp_path / "counterexample.txt"))
    assert verdict.violation is not None and verdict.violation.detail == result.found.violation.detail


def test_logs_part_when_a_node_holds_two_entries_another_contradicts():
    from lab.explore.search import parted

    world = Config(3).world()
    for words in (("campaign", "A"), ("deliver", "A->B", "VoteRequest"), ("deliver", "B->A", "VoteResponse"),
                  ("write", "v1", "to", "A", "nowait")):
        world.apply(words)
    assert not parted(world)  # A is ahead; nobody holds another entry at index 1
    world.apply(("write", "v2", "to", "A", "nowait"))
    world.apply(("campaign", "B"))
    world.apply(("deliver", "B->C", "VoteRequest"))
    world.apply(("deliver", "C->B", "VoteResponse"))
    world.apply(("write", "v3", "to", "B", "nowait"))
    assert [e.generation for e in world.replicas["A"].log] == [1, 1]
    assert [e.generation for e in world.replicas["B"].log] == [2]
    assert parted(world)  # A's two entries against B's one of another generation


def test_later_walks_lean_toward_parted_logs_and_find_a_truncation_that_keeps_later_segments(tmp_path, monkeypatch):
    import sys

    from lab.commands.explore import target
    from lab.explore import search as module
    from tests.studentcode import StudentCode
    from tests.test_mistakes import MISTAKES

    mistake = next(m for m in MISTAKES if m.id == "keeps-later-segments")
    code = StudentCode(tmp_path, name="keeps_later_segments")
    code.edit(mistake.file, mistake.old, mistake.new)
    monkeypatch.syspath_prepend(str(tmp_path))
    impl, strategy = target(code.name, mistake.exercise)
    config = Config(3, strategy, impl)
    found, figures = search([config], budget=120, seed=6, bfs_states=0, max_walks=300)
    assert found is not None and found.violation.check == "wal-truncation", figures.walks
    monkeypatch.setattr(module, "PARTED_AFTER", sys.maxsize)  # every walk as the first ones: not found as soon
    again, figures = search([config], budget=120, seed=6, bfs_states=0, max_walks=300)
    assert again is None and figures.walks == 300


# ---- the leader's fsync in parallel with replication -----------------------------------------------------------


def elect_a(world):
    """A leads generation 1, and B and C have answered its first (empty) requests."""
    for words in (("campaign", "A"), ("deliver", "A->B", "VoteRequest"), ("deliver", "B->A", "VoteResponse"),
                  ("deliver", "A->B", "ReplicationRequest"), ("deliver", "A->C", "ReplicationRequest"),
                  ("deliver", "B->A", "ReplicationResponse"), ("deliver", "C->A", "ReplicationResponse")):
        assert world.apply(words) is not None, words
    assert world.leader() == "A" and not [m for m in world.inflight if m[1] != "C"]


def test_a_leader_that_crashes_before_its_fsync_loses_no_acknowledged_write():
    """A sends v1 before its own fsync. B and C persist it and answer: a majority without A, so v1 is committed,
    and A's answer to the client waits for A's own sync. A crashes before it and loses its unsynced tail: v1 lives
    on B and C, and the next leader commits it; no rule breaks at any step."""
    world = World(3, fast=False)
    elect_a(world)
    assert world.apply(("write", "v1", "to", "A", "nowait")) is not None
    request = f"w{world.requests}"
    assert world.drivers["A"].sync_pending and ("sync", "A") in world.choices()
    assert ("kill", "A", "lose-unsynced") in world.choices()  # v1 is not on A's disk yet
    for follower in ("B", "C"):
        assert world.apply(("deliver", f"A->{follower}", "ReplicationRequest")) is not None
        assert world.apply(("deliver", f"{follower}->A", "ReplicationResponse")) is not None
        assert world.violations() == []
    assert world.replicas["A"].high_water_mark == 1 and world.replicas["A"].match_index["A"] == 0
    assert request not in world.answers  # committed, but A answers only once its own write is durable
    assert world.apply(("kill", "A", "lose-unsynced")) is not None
    assert world.logs["A"].log_end == 0 and world.violations() == []
    for words in (("campaign", "B"), ("deliver", "B->C", "VoteRequest"), ("deliver", "C->B", "VoteResponse"),
                  ("write", "v2", "to", "B", "nowait"), ("deliver", "B->C", "ReplicationRequest"),
                  ("deliver", "B->C", "ReplicationRequest"), ("deliver", "C->B", "ReplicationResponse"),
                  ("deliver", "C->B", "ReplicationResponse"), ("sync", "B"), ("restart", "A")):
        assert world.apply(words) is not None, words
        assert world.violations() == [], words
    assert [e.payload for e in world.replicas["B"].log] == ["v1", "v2"] and world.replicas["B"].high_water_mark == 2


def test_a_leader_counts_itself_only_after_its_sync_and_then_answers():
    world = World(3, fast=False)
    elect_a(world)
    world.apply(("write", "v1", "to", "A", "nowait"))
    request = f"w{world.requests}"
    world.apply(("deliver", "A->B", "ReplicationRequest"))
    world.apply(("deliver", "B->A", "ReplicationResponse"))
    assert world.replicas["A"].high_water_mark == 0  # B alone: A's own copy is not on its disk yet
    assert world.apply(("sync", "A")) == ("sync", "A")
    assert world.replicas["A"].high_water_mark == 1 and world.answers[request].ok
    assert [e["type"] for e in world.events if e["node"] == "A"][-3:] == ["log_persisted", "hwm_changed",
                                                                         "write_acked"]
    assert world.apply(("sync", "A")) is None  # nothing pending any more


def test_the_overlap_is_searched_exhaustively_and_the_reference_breaks_no_rule():
    """From A leading: every run of one write with one crash of any node (losing its unsynced tail or not) and its
    restart, each fsync of the leader a choice of its own. The breadth-first search ends (every state seen)
    without a violation."""
    from lab.explore.search import _bfs

    root = Config(3, limit=10.0).world()
    elect_a(root)
    figures = Figures()
    found = _bfs(Config(3, limit=10.0), root, Bounds(writes=1, generation=2, kills=1, per_link=1,
                                                     kinds=frozenset({"deliver", "write", "kill", "restart", "sync"})),
                 30, 100_000, float("inf"), figures, lambda: None)
    assert found is None, found and found.violation.sentence()
    assert 500 < figures.distinct < 100_000 and figures.depth < 30  # the space ran out: exhaustive
