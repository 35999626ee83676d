"""`hwm-lab up | status | write | read | kill | restart | pause | resume | partition | heal | delay | campaign |
disk-full | disk-ok | fsync-fail | down | scenario`: a cluster of real node processes, driven through the
supervisor's control API.

`up` starts the supervisor in the background and returns once a leader is elected; the other commands find the
cluster through RUN_DIR/cluster.json (RUN_DIR is `--dir`, default ./.hwm-lab).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from lab.ports.fault_vocabulary import FAULTS, NODE_WORDS, check_delay
from lab.core.config import FSYNC_POLICIES, MAX_NODES, PACES, TRUNCATION_STRATEGIES, pace_timing
from lab.commands.options import lang_of, lang_option, limit_option
from lab.core.impl import ImplError
from lab.core.reasons import NODE_DOWN, UNREACHABLE, reason_from_record
from lab.processes.client import ApiError, ClusterUnavailable, ControlClient, cluster_info, pid_alive
from lab.processes import daemon
from lab.processes.supervisor import SupervisorError
from lab.harness import script as scripts
from lab.harness.commands import ScenarioError
from lab.harness.realdriver import run_real
from lab.i18n import Joined, Listed, columns, complaint, counted, localize, number, say, word
from lab.i18n.scenarios import title as scenario_title
from lab.i18n.verdicts import summary

DEFAULT_DIR = ".hwm-lab"

# Exit codes, the same for every command.
OK, FAILED, USAGE, NO_CLUSTER, START_FAILED = 0, 1, 2, 3, 4
EXIT_CODES = f"""exit codes: {OK} done; {FAILED} refused or failed (a read above the high-water mark, a write not
acknowledged, a scenario that fails); {USAGE} bad arguments; {NO_CLUSTER} no cluster running (or one already
running, for up); {START_FAILED} the cluster could not start."""


# The fault vocabulary's words that name one node (lab.ports.fault_vocabulary), as the CLI says them: what each does,
# and what it did. tests/test_fault_table.py holds them to the vocabulary.
NODE_HELP = {
    "kill": "kill a node with SIGKILL (what it wrote survives; see --lose-unsynced)",
    "restart": "restart a node on its data directory (a running node is killed first)",
    "pause": "pause a node (SIGSTOP)",
    "resume": "resume a paused node (SIGCONT)",
    "campaign": "make a node start an election now",
    "disk-full": "fill a node's disk: its writes fail with ENOSPC (it stops) until disk-ok",
    "disk-ok": "free a node's disk again (then restart it)",
    "fsync-fail": "make a node's next fsync fail with EIO, losing what it was to sync",
}
NODE_DONE = {  # what each did, a whole sentence (the `lose_unsynced` kill has its own)
    "kill": say("node {node} killed (SIGKILL)"), "restart": say("node {node} restarted on its data directory"),
    "pause": say("node {node} paused (SIGSTOP)"), "resume": say("node {node} resumed (SIGCONT)"),
    "campaign": say("node {node} started an election"),
    "disk-full": say("node {node} has a full disk: its next write fails with ENOSPC"),
    "disk-ok": say("node {node} has room on its disk again"),
    "fsync-fail": say("node {node} will fail its next fsync (EIO)"),
}
KILLED_LOSING = say("node {node} killed (SIGKILL), losing what it had not synced")
FLAG_HELP = {
    "lose_unsynced": "a power cut: what the node had not synced (an fsync never node's tail) is lost too",
    "repair": "start even on a write-ahead log damaged in the middle: keep the valid prefix; the node catches up "
              "before it votes again",
}
CLI_NAMES = {"cut": "partition"}  # a word the CLI says otherwise; the links' own commands are partition, heal, delay
NOT_ON_THE_CLI = {  # the vocabulary's words the CLI does not offer, and why
    "flush": "a cluster that `up` starts writes a `never` node's buffer back every 500 ms itself",
    "isolate": "not a command yet: `partition` cuts one pair at a time",
    "drop": "not a command yet: the control API and the chaos run lose messages",
}


class CommandError(Exception):
    """What a command could not do: a sentence of the catalogue (said in the reader's language), an exit code, and
    what `--json` adds."""

    def __init__(self, message, code: int = FAILED, **extra):
        super().__init__(message)
        self.code = code
        self.extra = extra


def register(subparsers) -> None:
    """The cluster's commands, in the order `hwm-lab --help` lists them: start it, ask it, fault it, its scenarios."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", default=DEFAULT_DIR, metavar="DIR",
                        help=f"run directory of the cluster (default ./{DEFAULT_DIR})")
    common.add_argument("--json", action="store_true", help="print machine-readable JSON")
    lang_option(common)

    def add(name: str, help_text: str, description: str | None = None, func=None) -> argparse.ArgumentParser:
        parser = subparsers.add_parser(name, parents=[common], help=help_text, description=description or help_text,
                                       epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
        parser.set_defaults(func=_wrap(func))
        return parser

    _register_up(add)
    _register_clients(add)
    _register_faults(add)
    _register_scenario(subparsers, common)


def _register_up(add) -> None:
    p = add("up", "start a cluster of node processes in the background",
            "Start one process per node and the supervisor (control API) in the background; return once a "
            "leader is elected. Data and traces go to DIR.", cmd_up)
    p.add_argument("--nodes", type=int, default=3, help=f"how many nodes, 1 to {MAX_NODES} (default 3)")
    p.add_argument("--impl", default="solutions", help="solutions (default), exercises, or a module name")
    limit_option(p)
    p.add_argument("--fsync", choices=FSYNC_POLICIES, default="always", help="fsync policy (default always)")
    p.add_argument("--delay-ms", type=float, default=0.0, metavar="MS",
                   help="delay of every message, e.g. 800 for a classroom's slow motion (default 0)")
    p.add_argument("--seed", type=int, default=0, help="seed of the election timers (default 0)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address the nodes listen on (default 127.0.0.1, loopback; the control API stays on "
                        "loopback)")
    p.add_argument("--truncation", choices=TRUNCATION_STRATEGIES, default="generation",
                   help="restart truncation strategy (default `generation`)")
    p.add_argument("--fresh", action="store_true", help="wipe a previous run's data and traces in DIR first "
                   "(otherwise the nodes restart on their data and the traces continue)")
    p.add_argument("--pace", choices=tuple(PACES), default="normal",
                   help="normal (default), or classroom: election timers of 3 to 6 s that a room can watch fill")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for a leader (default 30)")
    p.add_argument("--no-pre-vote", action="store_true",
                   help="nodes campaign without asking for pre-votes first (see a cut-off node depose a leader)")



def _register_clients(add) -> None:
    """What a client asks: the cluster's status, a write, a read."""
    add("status", "show the nodes, roles, generations, log ends, high-water marks and links", func=cmd_status)

    p = add("write", "write an entry; acknowledged once the high-water mark covers it",
            "Send a client write to any node (default: the leader); it is forwarded to the leader and "
            "acknowledged only when the high-water mark covers it.", cmd_write)
    p.add_argument("text", help="the payload")
    p.add_argument("--node", metavar="ID", help="send it to this node (it redirects to the leader)")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the acknowledgement (default 5)")

    p = add("read", "read an entry; refused above the node's high-water mark", func=cmd_read)
    p.add_argument("index", type=int, help="log index, from 1")
    p.add_argument("--node", metavar="ID", help="node to read from (default: the leader)")
    p.add_argument("--linearizable", action="store_true",
                   help="a read that cannot be stale: the leader first confirms it still leads with a round of "
                        "heartbeats to a majority, then serves up to its mark (a follower asked so names the leader, "
                        "and the read goes there)")



def _register_faults(add) -> None:
    """The fault vocabulary's words (a node's, a link's, the delay) and stopping the cluster."""
    for word in NODE_WORDS:  # the fault vocabulary's words that name one node, each `hwm-lab WORD ID`
        if word in NOT_ON_THE_CLI:
            continue
        fault = FAULTS[word]
        p = add(word, NODE_HELP[word], func=cmd_node_action)
        p.add_argument("node", metavar="ID", help="node name, e.g. A")
        p.set_defaults(action=word)
        for flag in fault.flags + fault.real_flags:
            p.add_argument("--" + flag.replace("_", "-"), action="store_true", help=FLAG_HELP[flag])

    p = add("partition", "cut the link between two nodes (both ways unless --one-way)", func=cmd_partition)
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    p.add_argument("--one-way", action="store_true", help="cut only A -> B (messages from A to B are dropped)")

    p = add("heal", "heal every cut link (or only A-B)", func=cmd_heal)
    p.add_argument("a", metavar="A", nargs="?")
    p.add_argument("b", metavar="B", nargs="?")
    p.add_argument("--one-way", action="store_true", help="heal only A -> B")

    p = add("delay", "delay messages (every link, or one link with --from and --to)", func=cmd_delay)
    p.add_argument("ms", type=float, metavar="MS", help="milliseconds per message, e.g. 800 for slow motion; 0 off")
    p.add_argument("--from", dest="src", metavar="A")
    p.add_argument("--to", dest="dst", metavar="B")

    p = add("down", "stop every process of the cluster; data and traces stay in DIR", func=cmd_down)
    p.add_argument("--timeout", type=float, default=15.0, help="seconds before stragglers are killed (default 15)")



def _register_scenario(subparsers, common) -> None:
    """`hwm-lab scenario list` and `hwm-lab scenario run NAME`: the teaching scenarios as real processes."""
    scenario = subparsers.add_parser("scenario", help="list or run the teaching scenarios as real processes",
                                     description="Teaching scenarios (SCENARIOS.md) as real node processes.")
    scenario_sub = scenario.add_subparsers(dest="scenario_command", metavar="COMMAND")
    scenario.set_defaults(func=lambda args: _usage(scenario))
    p = scenario_sub.add_parser("list", parents=[common], help="list the scenarios", epilog=EXIT_CODES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=_wrap(cmd_scenario_list))
    p = scenario_sub.add_parser("run", parents=[common], help="run a scenario as real processes",
                                description="Run a scenario on real node processes; write its trace directory "
                                            "and verdict.json; exit 0 if every expectation held.",
                                epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="scenario name (see `hwm-lab scenario list`) or a script file")
    p.add_argument("--impl", default="solutions", help="solutions (default), exercises, or a module name")
    limit_option(p)
    p.add_argument("--out", metavar="DIR", help="trace directory (default runs/NAME-real-TIMESTAMP)")
    p.add_argument("--truncation", choices=TRUNCATION_STRATEGIES, help="override the scenario's strategy")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_wrap(cmd_scenario_run))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return USAGE


def _wrap(func):
    """Run a command; turn the errors every command can meet into one clear line and an exit code."""
    def run(args) -> int:
        try:
            return func(args)
        except CommandError as exc:
            return _fail(args, exc.args[0], exc.code, **exc.extra)
        except ClusterUnavailable as exc:
            return _fail(args, say("the cluster in {dir} does not answer ({error}); start one with `hwm-lab up`",
                                   dir=args.dir, error=exc.args[0] if exc.args else str(exc)), NO_CLUSTER)
        except ApiError as exc:
            return _fail(args, exc.args[0] if exc.args else str(exc), FAILED)

    return run


def _print(args, data: dict, text, code: int = OK) -> int:
    """`text` (a Text, said in the reader's language), or `data` as JSON with --json."""
    if args.json:
        print(json.dumps(data))
    else:
        print(localize(text, lang_of(args)))
    return code


def _fail(args, message, code: int, **extra) -> int:
    if getattr(args, "json", False):
        print(json.dumps({"ok": False, "error": message, "exit_code": code, **extra}))  # JSON keeps the English
    else:
        print(complaint("hwm-lab", message, lang_of(args)), file=sys.stderr)
    return code


def _client(args):

    info = cluster_info(args.dir)
    if info is None:
        raise CommandError(say("no cluster is running in {dir}: start one with `hwm-lab up`", dir=args.dir)
                           if args.dir == DEFAULT_DIR else
                           say("no cluster is running in {dir}: start one with `hwm-lab up --dir {dir}`", dir=args.dir),
                           NO_CLUSTER)
    return ControlClient(info["control_url"], token=info.get("token")), info


# ---- up and down ---------------------------------------------------------------------------------------------


def cmd_up(args) -> int:

    if not 1 <= args.nodes <= MAX_NODES:
        raise CommandError(say("--nodes must be between 1 and {most}, not {nodes}", most=MAX_NODES, nodes=args.nodes),
                           USAGE)
    try:
        check_delay(args.delay_ms)  # a usage error here, not a cluster that could not start
    except ValueError as exc:
        raise CommandError(exc.args[0], USAGE) from None
    run_dir = Path(args.dir)
    info = cluster_info(run_dir)
    if info is not None:
        try:
            ControlClient(info["control_url"], timeout=5.0, token=info.get("token")).state(log=0)
            raise CommandError(say("a cluster is already running in {dir} (supervisor pid {pid}, control {url}); "
                                   "stop it first with `hwm-lab down`", dir=str(run_dir), pid=info["pid"],
                                   url=info["control_url"]), NO_CLUSTER, control_url=info["control_url"])
        except ClusterUnavailable:
            pass  # a stale file: that supervisor is gone
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "cluster.json").unlink(missing_ok=True)
    (run_dir / daemon.START_ERROR).unlink(missing_ok=True)  # (a previous start's)
    options = {"nodes": args.nodes, "impl": args.impl, "fsync": args.fsync, "truncation": args.truncation,
               "delay_ms": args.delay_ms, "seed": args.seed, "host": args.host, "fresh": args.fresh,
               "pre_vote": not args.no_pre_vote, "limit": args.limit}
    if args.pace != "normal":
        options["tick_ms"] = pace_timing(args.pace).tick_ms
    log_path = run_dir / daemon.LOG_FILE
    log_start = log_path.stat().st_size if log_path.exists() else 0
    proc = daemon.launch(run_dir, options, new_session=True)
    deadline = time.monotonic() + args.timeout
    state = None
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            why = daemon.start_error(run_dir) or _log_tail(log_path, log_start)
            raise CommandError(say("the cluster could not start: {log}", log=why), START_FAILED)
        info = cluster_info(run_dir)
        if info and info.get("pid") == proc.pid:
            try:
                state = ControlClient(info["control_url"], timeout=5.0, token=info.get("token")).state(log=0)
            except ClusterUnavailable:
                state = None
            if state and state["leader"]:
                # Nodes that cannot run (an exercise not written yet) die on their first message: look again.
                time.sleep(0.5)
                state = ControlClient(info["control_url"], timeout=5.0, token=info.get("token")).state(log=0)
                dead = [n for n in state["nodes"] if n["state"] == "exited"]
                if dead:
                    _stop_process(proc)
                    raise CommandError(say("the cluster could not run: {why}", why=Joined(map(_exited, dead), "; ")),
                                       START_FAILED)
                if state["leader"]:
                    break
        time.sleep(0.1)
    else:
        _stop_process(proc)
        raise CommandError(say("no leader was elected within {seconds} s; the cluster is stopped. {log}",
                               seconds=args.timeout, log=_log_tail(log_path, log_start)), START_FAILED)
    data = {"ok": True, "dir": str(run_dir), "control_url": info["control_url"], "pid": proc.pid,
            "leader": state["leader"], "nodes": [{k: n[k] for k in ("id", "pid", "host", "port", "data_dir")}
                                                 for n in state["nodes"]],
            "settings": state["settings"]}
    text = Joined([counted("cluster of {count} node up in {dir} (leader {leader}; control API {url}; supervisor pid "
                           "{pid})", "cluster of {count} nodes up in {dir} (leader {leader}; control API {url}; "
                           "supervisor pid {pid})", len(state["nodes"]), count=len(state["nodes"]), dir=str(run_dir),
                           leader=state["leader"], url=info["control_url"], pid=proc.pid)]
                  + [Joined(["  ", say("{node}: pid {pid}, {host} port {port}", node=n["id"], pid=n["pid"],
                                       host=n["host"], port=n["port"])], "") for n in state["nodes"]], "\n")
    return _print(args, data, text)


def _exited(node: dict):
    """Why a node stopped on its own, as `status` and `up` say it."""
    if node.get("exit_reason"):  # (the control API's JSON carries the reason's kind beside its English)
        return say("node {node} exited (code {code}): {why}", node=node["id"], code=node.get("exit_code"),
                   why=reason_from_record(node.get("exit_because")) or node["exit_reason"])
    return say("node {node} exited (code {code}); its node.log says why", node=node["id"], code=node.get("exit_code"))


def _stop_process(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _log_tail(path: Path, start: int = 0, lines: int = 3) -> str:
    """The last lines the supervisor logged since `start` (its own lines, not a previous run's)."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            text = f.read().decode("utf-8", errors="replace").strip().splitlines()
    except OSError:
        return say("(no log)")
    mine = [line.removeprefix("supervisor: ") for line in text[-lines:]]
    return " | ".join(mine) if mine else say("see {path}", path=str(path))


def cmd_down(args) -> int:

    client, info = _client(args)
    pids = [int(info["pid"])]
    try:
        state = client.state(log=0)
        pids += [n["pid"] for n in state["nodes"] if n.get("pid") and n["state"] in ("running", "paused")]
        client.shutdown()
    except ClusterUnavailable:
        pass
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.05)
    killed = []
    for pid in pids:
        if pid_alive(pid):
            try:
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
    (Path(args.dir) / "cluster.json").unlink(missing_ok=True)
    data = {"ok": True, "dir": args.dir, "stopped": pids, "killed": killed}
    text = (say("cluster stopped; data and traces are kept in {dir} (killed stragglers: {pids})", dir=args.dir,
                pids=Listed(map(str, killed))) if killed
            else say("cluster stopped; data and traces are kept in {dir}", dir=args.dir))
    return _print(args, data, text)


# ---- observing -----------------------------------------------------------------------------------------------


STATUS_COLUMNS = (word("status column", "node"), word("status column", "state"), word("status column", "role"),
                  word("status column", "gen"), word("status column", "log_end"), word("status column", "hwm"),
                  word("status column", "pid"), word("status column", "port"), word("status column", "match_index"))
ROLES = {"leader": word("role", "leader"), "follower": word("role", "follower"),
         "candidate": word("role", "candidate")}


def cmd_status(args) -> int:
    client, info = _client(args)
    state = client.state(log=0)
    settings = state["settings"]
    lang = lang_of(args)
    rows = [[localize(c, lang) for c in STATUS_COLUMNS]]
    for n in state["nodes"]:
        match = " ".join(f"{k}:{v}" for k, v in sorted(n.get("match_index", {}).items()))
        rows.append([n["id"], localize(word("state", n["state"]), lang),
                     localize(ROLES.get(n["role"], n["role"]), lang) if n["role"] else "-",
                     *(str(number(n[k], lang)) for k in ("generation", "log_end", "hwm")), str(n["pid"] or "-"),
                     str(n["port"] or "-"), match])
    widths = [max(columns(r[i]) for r in rows) for i in range(len(rows[0]))]
    table = "\n".join("  ".join(c + " " * (w - columns(c)) for c, w in zip(r, widths)).rstrip() for r in rows)
    cuts = [f"{link['src']}->{link['dst']}" for link in state["links"] if link["cut"]]
    fsync = settings["fsync"] if isinstance(settings["fsync"], str) else json.dumps(settings["fsync"])
    values = dict(dir=args.dir, url=info["control_url"], leader=state["leader"], fsync=fsync,
                  truncation=settings["truncation"], ms=settings["delay_ms"])
    lines = [say("cluster in {dir} (control {url}); leader {leader}; fsync {fsync}; truncation {truncation}; delay "
                 "{ms} ms", **values) if state["leader"] else
             say("cluster in {dir} (control {url}); no leader; fsync {fsync}; truncation {truncation}; delay {ms} ms",
                 **values), table,
             say("cut links: {links}", links=Listed(cuts)) if cuts else say("cut links: none")]
    lines += [_exited(n) for n in state["nodes"] if n["state"] == "exited"]
    if state.get("trace_unwritable"):  # a full disk: the supervisor goes on, keeping what it cannot write in memory
        lines.append(say("warning: {what}", what=state["trace_unwritable"]))
    return _print(args, {"ok": True, **state}, Joined(lines, "\n"))


# ---- clients ---------------------------------------------------------------------------------------------------


def cmd_write(args) -> int:
    client, _ = _client(args)
    answer = client.write(args.text, args.node, timeout=args.timeout)
    if not answer.get("ok"):
        raise CommandError(say("write not acknowledged: {error}", error=_error(answer)), FAILED,
                           **{k: v for k, v in answer.items() if k not in ("ok", "error")})
    text = say("acknowledged: index {index}, generation {generation} (leader {node}, high-water mark {hwm})",
               index=answer["index"], generation=answer["generation"], node=answer["node"],
               hwm=answer["high_water_mark"])
    return _print(args, answer, text)


def _error(answer: dict):
    """An answer's error: its Reason when the answer says which (`because`), said in the reader's language."""
    return reason_from_record(answer.get("because")) or answer.get("error")


def cmd_read(args) -> int:
    client, _ = _client(args)
    answer = client.read(args.index, args.node, linearizable=args.linearizable)
    if not answer.get("ok"):
        extra = {k: v for k, v in answer.items() if k not in ("ok", "error")}
        if answer.get("refusal") in (NODE_DOWN, UNREACHABLE):  # nobody refused: the node could not answer
            raise CommandError(say("not read: {error} (`hwm-lab status` says why)", error=_error(answer)), FAILED,
                               **extra)
        if answer.get("node") is None:  # the supervisor refused it before any node could (a node it does not have)
            raise CommandError(say("not read: {error}", error=_error(answer)), FAILED, **extra)
        raise CommandError(say("refused by node {node}: {error}", node=answer.get("node"), error=_error(answer)),
                           FAILED, **extra)
    values = dict(index=answer["index"], generation=answer["generation"], node=answer["node"],
                  hwm=answer["high_water_mark"], payload=answer["payload"])
    text = say("index {index} (generation {generation}) from the leader {node}, which confirmed it still leads "
               "(high-water mark {hwm}): {payload}", **values) if args.linearizable else \
        say("index {index} (generation {generation}) from node {node} (high-water mark {hwm}): {payload}", **values)
    return _print(args, answer, text)


# ---- faults --------------------------------------------------------------------------------------------------


def cmd_node_action(args) -> int:
    client, _ = _client(args)
    fault = FAULTS[args.action]
    flags = {flag: getattr(args, flag) for flag in fault.flags + fault.real_flags}
    getattr(client, fault.method)(args.node, **flags)
    done = KILLED_LOSING if flags.get("lose_unsynced") else NODE_DONE[args.action]
    return _print(args, {"ok": True, "node": args.node, "action": args.action}, say(done.msgid, node=args.node))


def cmd_partition(args) -> int:
    client, _ = _client(args)
    client.cut(args.a, args.b, one_way=args.one_way)
    text = (say("cut {a} -> {b}", a=args.a, b=args.b) if args.one_way
            else say("cut {a} -> {b} and {b} -> {a}", a=args.a, b=args.b))
    return _print(args, {"ok": True, "cut": [[args.a, args.b]] + ([] if args.one_way else [[args.b, args.a]])}, text)


def cmd_heal(args) -> int:
    if bool(args.a) != bool(args.b):
        raise CommandError(say("heal takes no node (heal every link) or two nodes A B"), USAGE)
    client, _ = _client(args)
    client.heal(args.a, args.b, one_way=args.one_way)
    text = (say("every link healed") if not args.a else say("healed {a} -> {b}", a=args.a, b=args.b) if args.one_way
            else say("healed {a} -> {b} and {b} -> {a}", a=args.a, b=args.b))
    return _print(args, {"ok": True}, text)


def cmd_delay(args) -> int:
    if bool(args.src) != bool(args.dst):
        raise CommandError(say("a per-link delay needs both --from and --to"), USAGE)
    try:
        check_delay(args.ms)
    except ValueError as exc:
        raise CommandError(exc.args[0], USAGE) from None
    client, _ = _client(args)
    client.delay(args.ms, args.src, args.dst)
    text = (say("delay {ms} ms per message on {a} -> {b}", ms=args.ms, a=args.src, b=args.dst) if args.src
            else say("delay {ms} ms per message on every link", ms=args.ms))
    return _print(args, {"ok": True, "ms": args.ms, "src": args.src, "dst": args.dst}, text)


# ---- scenarios -----------------------------------------------------------------------------------------------


def cmd_scenario_list(args) -> int:

    items, titles = [], []
    for name in scripts.available():
        script = scripts.load(name)
        items.append({"name": name, "title": script.title, "nodes": script.nodes})
        titles.append(Joined([f"{name:<4} ", scenario_title(script)], ""))
    text = Joined(titles, "\n")
    return _print(args, {"ok": True, "scenarios": items}, text)


def cmd_scenario_run(args) -> int:

    out = Path(args.out) if args.out else Path("runs") / (
        f"{Path(args.name).stem.lower()}-real-{datetime.now().strftime('%Y%m%d-%H%M%S')}")
    try:
        verdict, out = run_real(args.name, impl=args.impl, out=out, seed=args.seed, truncation=args.truncation,
                                limit=args.limit)
    except (ScenarioError, ImplError) as exc:
        raise CommandError(exc.args[0] if exc.args else str(exc), USAGE) from None
    except SupervisorError as exc:
        raise CommandError(say("the cluster could not start: {log}", log=exc.args[0] if exc.args else str(exc)),
                           START_FAILED) from None
    code = OK if verdict.passed else FAILED
    return _print(args, {**verdict.as_dict(), "ok": verdict.passed, "out": str(out)},
                  Joined([summary(verdict), say("trace written to {out}", out=str(out))], "\n"), code)
