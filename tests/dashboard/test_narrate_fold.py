"""Events in words, and the replay's rebuilt state: the same as the simulator's own at every point."""

from __future__ import annotations

import random

import pytest

from lab.sim.cluster import SimCluster
from lab.harness.scenario import simulate
from tests.studentcode import StudentCode
from web.fold import Replay, slim
from web.narrate import Narrator


def test_truncation_in_words_names_the_leader_it_conflicts_with():
    narrator = Narrator()
    narrator.describe({"type": "replication_received", "node": "C", "from": "B", "first": 4, "last": 4, "hwm": 3})
    text = narrator.describe({"type": "truncated", "node": "C", "from_index": 4, "removed": [[4, 1, "d"]],
                              "reason": "conflict", "conflicting_generation": 2, "hwm": 3})
    assert text == "C truncated index 4 (generation 1): conflicts with generation 2 from B"
    several = narrator.describe({"type": "truncated", "node": "C", "from_index": 4, "reason": "restart-hwm",
                                 "removed": [[4, 1, "d"], [5, 2, "e"]], "conflicting_generation": None, "hwm": 3})
    assert several == ("C truncated indexes 4-5 (generations 1, 2) on restart: above its own high-water mark 3 "
                       "(high-water-mark strategy)")


@pytest.mark.parametrize("event, words", [
    ({"type": "node_killed", "node": "cluster", "target": "A"}, "A killed (SIGKILL)"),
    ({"type": "link_cut", "node": "cluster", "src": "A", "dst": "B"}, "Link A → B cut"),
    ({"type": "read_refused", "node": "A", "index": 4, "hwm": 3,
      "reason": "not available: index 4 is above the high-water mark 3"},
     "A refuses to read index 4: not available: index 4 is above the high-water mark 3"),
    ({"type": "became_leader", "node": "B", "generation": 2, "votes": ["B", "C"]},
     "B is leader of generation 2 (votes B, C)"),
    ({"type": "replication_sent", "node": "B", "to": "C", "first": 5, "last": 4, "hwm": 4},
     "B → C: heartbeat, high-water mark 4"),
    ({"type": "replication_sent", "node": "B", "to": "C", "first": 4, "last": 6, "hwm": 3},
     "B → C: entries 4-6, high-water mark 3"),
    ({"type": "hwm_changed", "node": "B", "from_hwm": 3, "hwm": 4, "role": "leader"},
     "B's high-water mark 3 → 4: index 4 committed"),
    ({"type": "step", "node": "cluster", "text": "Kill A.", "index": 2}, "Step 3: Kill A."),
    ({"type": "something_new", "node": "A"}, "A: something_new"),
])
def test_events_in_words(event, words):
    assert Narrator().describe(event) == words


def _random_run(seed: int, trace_dir) -> SimCluster:
    rng = random.Random(seed)
    cluster = SimCluster(rng.choice([1, 3, 4, 5]), seed=seed, trace_dir=trace_dir,
                         truncation=rng.choice(["generation", "high-water-mark", "leader-epoch"]),
                         fsync=rng.choice(["always", "never"]))
    for step in range(40):
        op, name = rng.random(), rng.choice(cluster.names)
        if op < 0.4:
            cluster.write(f"p{step}")
        elif op < 0.5:
            cluster.kill(name, lose_unsynced=rng.random() < 0.5)
        elif op < 0.6:
            cluster.restart(name)
        elif op < 0.65:
            cluster.pause(name)
        elif op < 0.7:
            cluster.resume(name)
        elif op < 0.8 and len(cluster.names) > 1:
            cluster.cut(name, rng.choice(cluster.names), one_way=rng.random() < 0.5)
        elif op < 0.85:
            cluster.heal()
        cluster.run(rng.randint(1, 30))
    return cluster


def _comparable(status: dict):
    nodes = {n["id"]: (n["state"], n["role"], n["generation"], n["leader"], n["hwm"],
                       [list(e) for e in n["log"]], n["match_index"], n["next_index"]) for n in status["nodes"]}
    return nodes, status["leader"], sorted((l["src"], l["dst"]) for l in status["links"] if l.get("cut", True))


@pytest.mark.parametrize("seed", range(12))
def test_replay_rebuilds_what_the_simulator_held_at_every_checked_point(tmp_path, seed):
    """Faults, restarts, lost tails, partitions; odd and even sizes: the fold agrees with the simulator."""
    cluster = _random_run(seed, tmp_path)
    expected = _comparable(cluster.status())
    cluster.close()
    replay = Replay(tmp_path)
    closing = sum(1 for e in replay.events if e["type"] in ("log_snapshot", "cluster_stopped"))
    assert _comparable(replay.fold_at(len(replay) - closing).status()) == expected


def test_scrubbing_back_and_forth_gives_the_same_state(tmp_path):
    cluster = _random_run(5, tmp_path)
    cluster.close()
    replay = Replay(tmp_path)
    middle = len(replay) // 2
    first = replay.fold_at(middle).status()
    replay.fold_at(len(replay))
    replay.fold_at(3)
    assert replay.fold_at(middle).status() == first
    assert replay.position_at_time(-1) == 0 and replay.position_at_time(1e9) == len(replay)


def test_slim_cuts_long_lists_and_keeps_their_length():
    event = {"type": "hwm_changed", "committed": [[i, 1, "x"] for i in range(100)], "payload": "y" * 100}
    small = slim(event)
    assert len(small["committed"]) == 8 and small["committed_count"] == 100 and len(small["payload"]) == 40


def test_the_replay_of_a_run_the_students_code_stopped_shows_the_node_exited_and_why(tmp_path, monkeypatch):
    code = StudentCode(tmp_path, name="replayed_fault_code")
    code.edit("high_water_mark.py", "    return sorted(match_indexes, reverse=True)[majority - 1]",
              "    return sorted(match_indexes)[len(match_indexes)]")
    monkeypatch.syspath_prepend(str(code.root))
    monkeypatch.chdir(tmp_path)
    verdict = simulate("n4", seed=7, impl=f"{code.name}:high_water_mark", out=tmp_path / "run")
    assert verdict.fault and verdict.fault["node"] == "A"
    replay = Replay(tmp_path / "run")
    stopped = [t for t in replay.texts if t.startswith("A stopped: ")]
    assert len(stopped) == 1 and "high_water_mark([" in stopped[0] and "IndexError" in stopped[0]
    assert stopped[0].endswith("replayed_fault_code/high_water_mark.py:12")
    lane = replay.final.nodes["A"]
    assert lane["state"] == "exited" and lane["fault"]["function"] == "high_water_mark"
    assert "IndexError" in lane["exit_reason"]
