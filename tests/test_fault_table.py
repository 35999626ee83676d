"""The fault vocabulary's one table (lab.ports.fault_vocabulary.FAULTS), and the tables keyed by its words: every
cluster speaks every word; the control API routes each to the supervisor; the CLI, the scripts and the dashboard offer
each or say why not; the nemesis has a move for each fault. The scripts' expectations are one table too."""

from __future__ import annotations

import inspect
import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab.ports.fault_vocabulary import FAULTS, LINKS, NODE, NODE_WORDS, Cluster

ROOT = Path(__file__).resolve().parent.parent
FAULT_WORDS = [word for word, fault in FAULTS.items() if not fault.nudge]


def keywords(function) -> set[str]:
    return {name for name, p in inspect.signature(function).parameters.items() if p.kind is p.KEYWORD_ONLY}


@pytest.mark.parametrize("word", list(FAULTS))
def test_every_cluster_speaks_every_word_with_its_options(word):
    from lab.processes.client import ControlClient
    from lab.processes.supervisor import Supervisor
    from lab.sim.cluster import SimCluster

    fault = FAULTS[word]
    assert fault.on in (NODE, LINKS) and fault.method.isidentifier()
    for cluster in (Cluster, SimCluster, Supervisor, ControlClient):
        assert set(fault.flags) <= keywords(getattr(cluster, fault.method)), cluster
    for cluster in (Supervisor, ControlClient):  # real processes only
        assert set(fault.real_flags) <= keywords(getattr(cluster, fault.method)), cluster


# ---- the control API ------------------------------------------------------------------------------------------


class FakeSupervisor:
    """What the control API calls, recorded: (method, args, keyword args)."""

    api_token = "t0ken"
    stopped = False

    def __init__(self):
        self.calls = []

    def __getattr__(self, method):
        if method not in {fault.method for fault in FAULTS.values()}:
            raise AttributeError(method)

        def call(*args, **kwargs):
            self.calls.append((method, args, kwargs))
            return {"log_end": 4} if method == "flush" else None
        return call


@pytest.fixture
def served():
    from lab.processes import control_api
    from lab.processes.client import ControlClient

    supervisor = FakeSupervisor()
    server = control_api.serve(supervisor)
    try:
        yield supervisor, ControlClient(f"http://127.0.0.1:{server.server_address[1]}", timeout=10,
                                        token=supervisor.api_token)
    finally:
        server.shutdown()
        server.server_close()


def test_the_control_api_takes_every_word_to_the_supervisors_method(served):
    from lab.processes.control_api import LINK_ACTIONS

    supervisor, client = served
    assert set(LINK_ACTIONS) == {word for word, fault in FAULTS.items() if fault.on == LINKS}
    for word in NODE_WORDS:
        fault = FAULTS[word]
        flags = {flag: True for flag in fault.flags + fault.real_flags}
        answer = getattr(client, fault.method)("B", **flags)
        assert supervisor.calls.pop() == (fault.method, ("B",), flags)
        assert answer == ({"ok": True, "log_end": 4} if word == "flush" else {"ok": True})
    client.cut("A", "B", one_way=True)
    client.isolate("C")
    client.heal("A", "B", one_way=True)
    client.delay(80, "A", "B")
    client.drop(0.5)
    assert supervisor.calls == [("cut", ("A", "B"), {"one_way": True}), ("isolate", ("C",), {}),
                                ("heal", ("A", "B"), {"one_way": True}), ("delay", (80.0, "A", "B"), {}),
                                ("drop", (0.5, None, None), {})]


def test_the_control_api_names_the_words_it_takes_when_asked_another(served):
    from lab.processes.client import ApiError

    supervisor, client = served
    with pytest.raises(ApiError) as refused:
        client._op("POST", "/api/nodes/A/explode", {})
    assert refused.value.status == 404 and ", ".join(NODE_WORDS) in str(refused.value)
    with pytest.raises(ApiError) as refused:
        client.delay(61_000)
    assert refused.value.status == 400 and supervisor.calls == []


# ---- the CLI --------------------------------------------------------------------------------------------------


def test_the_cli_offers_every_word_or_says_why_not():
    from lab.cli import build_parser
    from lab.commands import cluster as cli

    commands = set(build_parser()._subparsers._group_actions[0].choices)
    for word, fault in FAULTS.items():
        offered = cli.CLI_NAMES.get(word, word) in commands
        assert offered != (word in cli.NOT_ON_THE_CLI), word
        if offered and fault.on == NODE:
            assert cli.NODE_HELP[word] and cli.NODE_DONE[word]
    assert set(cli.NODE_HELP) == set(cli.NODE_DONE) == set(NODE_WORDS) - set(cli.NOT_ON_THE_CLI)


@pytest.mark.parametrize("argv, called", [
    (["kill", "A", "--lose-unsynced"], ("kill", ("A",), {"lose_unsynced": True})),
    (["kill", "A"], ("kill", ("A",), {"lose_unsynced": False})),
    (["restart", "B", "--repair"], ("restart", ("B",), {"repair": True})),
    (["disk-full", "C"], ("disk_full", ("C",), {})),
])
def test_a_node_command_calls_its_words_method_with_its_options(argv, called, monkeypatch, capsys):
    from lab.cli import main
    from lab.commands import cluster as cli

    calls = []
    client = SimpleNamespace(**{f.method: (lambda m: lambda *a, **k: calls.append((m, a, k)))(f.method)
                                for f in FAULTS.values()})
    monkeypatch.setattr(cli, "_client", lambda args: (client, {}))
    assert main(argv) == cli.OK
    assert calls == [called]
    assert capsys.readouterr().out.startswith(str(cli.NODE_DONE[argv[0]].msgid).format(node=argv[1]))


# ---- the scripts ----------------------------------------------------------------------------------------------


class FakeRun:
    """A run whose cluster records what the commands ask of it."""

    def __init__(self):
        self.calls = []
        cluster = SimpleNamespace(**{f.method: (lambda m: lambda *a, **k: self.calls.append((m, a, k)))(f.method)
                                     for f in FAULTS.values()})
        self.driver = SimpleNamespace(cluster=cluster)
        self.last_killed = None

    def nodes(self, spec):
        return spec.split(",")


def test_every_word_is_a_script_command_or_says_why_not_and_the_reference_lists_it():
    from lab.harness.commands import COMMANDS, NOT_IN_SCRIPTS

    reference = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    for word in FAULTS:
        assert (word in COMMANDS) != (word in NOT_IN_SCRIPTS), word
        if word in COMMANDS:
            assert f"`{word} " in reference or f"`{word}`" in reference, word


@pytest.mark.parametrize("words, called", [
    (("pause", "A,B"), [("pause", ("A",), {}), ("pause", ("B",), {})]),
    (("disk-full", "C"), [("disk_full", ("C",), {})]),
    (("isolate", "A"), [("isolate", ("A",), {})]),
    (("kill", "B", "lose-unsynced"), [("kill", ("B",), {"lose_unsynced": True})]),
    (("cut", "A->B", "B<->C"), [("cut", ("A", "B"), {"one_way": True}), ("cut", ("B", "C"), {"one_way": False})]),
    (("heal",), [("heal", (), {})]),
])
def test_a_script_command_calls_its_words_method_on_each_node(words, called):
    from lab.harness.commands import COMMANDS

    run = FakeRun()
    COMMANDS[words[0]](run, SimpleNamespace(line=1), 0, list(words[1:]))
    assert run.calls == called
    assert run.last_killed == ("B" if words[0] == "kill" else None)


def test_every_expectation_has_its_check_and_the_reference_and_the_guide_name_only_those():
    from lab.harness.commands import EXPECTATIONS
    from lab.i18n.scenarios import COMMANDS as TEMPLATES

    reference = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`expect ([a-z_-]+)", reference))
    assert documented == set(EXPECTATIONS)
    assert {t[1] for t in TEMPLATES if t[0] == "expect"} <= set(EXPECTATIONS)


# ---- the nemesis and the dashboard ------------------------------------------------------------------------------


def test_the_nemesis_has_a_move_for_every_fault_and_each_move_calls_its_words():
    from lab.harness.checker import Fault
    from lab.harness.nemesis import MOVES, Look, Nemesis

    assert {word for move in MOVES for word in move.words} == set(FAULT_WORDS)
    for move in MOVES:
        calls = []
        api = SimpleNamespace(**{f.method: (lambda m: lambda *a, **k: calls.append(m))(f.method)
                                 for f in FAULTS.values()})
        nemesis = Nemesis(api, ["A", "B", "C"], random.Random(1), 0.0, max_down=1, storage=True)
        nemesis.disk_faulted, nemesis.cuts = {"C"}, {("A", "B")}
        look = Look(running=["A", "B"], paused=["B"], dead=["C"], doomed=[], healthy=["A", "B"], leader="A",
                    leader_generation=2, pair=["A", "B"])
        move.apply(nemesis, Fault(time=0.0, op=move.op), look)
        assert set(calls) == {FAULTS[word].method for word in move.words}, move.op


def test_the_dashboard_offers_every_node_fault():
    from web.actions import CLUSTER, NODE_FAULTS

    assert list(NODE_FAULTS) == [word for word in FAULT_WORDS if FAULTS[word].on == NODE]
    assert set(NODE_FAULTS) | {"cut", "heal"} <= set(CLUSTER)
