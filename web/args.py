"""The arguments of `hwm-lab demo`, `hwm-lab dashboard` and `hwm-lab replay`, for the CLI (web.cli) and for the
eventlet entry point (web.serve) alike. No Flask, no eventlet here."""

from __future__ import annotations

import argparse
import os

from lab.core.config import FSYNC_POLICIES, MAX_NODES, PACES, TRUNCATION_STRATEGIES
from lab.core.impl import has_reference
from lab.i18n import LANGUAGES


def _common(p: argparse.ArgumentParser, port: int) -> None:
    p.add_argument("--host", default="127.0.0.1",
                   help="address to serve on (default 127.0.0.1; 0.0.0.0 for a classroom: controls then need "
                        "the instructor token printed at start)")
    p.add_argument("--port", type=int, default=port, help=f"port (default {port}; 0 picks a free one)")
    p.add_argument("--async-mode", choices=("eventlet", "threading"), default="eventlet",
                   help="Socket.IO server mode (default eventlet)")
    p.add_argument("--frame-hz", type=float, default=10.0, help="frames pushed to each page per second (default 10)")
    p.add_argument("--token", default=None, help="instructor token (default: generated when not on loopback)")
    p.add_argument("--lang", choices=list(LANGUAGES), default=None,
                   help="the room's language: every page reads it unless it chooses its own (default: each "
                        "browser's Accept-Language); the instructor can change it from the page's header")


def register(subparsers, run) -> None:
    code = "the reference answers" if has_reference() else "your code in exercises/"  # a handout has no reference
    demo = subparsers.add_parser("demo", help="start a 3-node cluster and the dashboard; Ctrl-C stops both",
                                 description=f"Start a cluster of node processes ({code}) and the dashboard in one "
                                             "command; prints the URL; Ctrl-C stops everything.")
    _common(demo, 8800)
    demo.add_argument("--nodes", type=int, default=3, help=f"cluster size, 1 to {MAX_NODES} (default 3)")
    demo.add_argument("--dir", default=os.path.join("runs", "demo"),
                      help="where the clusters' traces and data go (default runs/demo); `hwm-lab status`, `write`, "
                           "`read`... run from the same folder find the demo's cluster")
    demo.add_argument("--impl", default="solutions", help="exercise implementation the nodes run (default solutions: "
                                                          f"{code})")
    demo.add_argument("--truncation", default=None, choices=TRUNCATION_STRATEGIES)
    demo.add_argument("--fsync", default=None, choices=FSYNC_POLICIES)
    demo.add_argument("--pace", default="classroom", choices=tuple(PACES),
                      help="classroom (default): election timers of 3 to 6 s, heartbeats every 0.5 s, so that the "
                           "room can watch an election; normal: the lab's own pace (hundreds of ms)")
    demo.set_defaults(func=run, command_name="demo")

    dash = subparsers.add_parser("dashboard", help="open the dashboard on a running cluster (hwm-lab up)",
                                 description="Serve the dashboard for a cluster that is already running.")
    _common(dash, 8800)
    dash.add_argument("--control-url", default=None, help="the supervisor's control API (default: from RUN_DIR)")
    dash.add_argument("--control-token", default=None,
                      help="the cluster's token for --control-url (default: from RUN_DIR/cluster.json)")
    dash.add_argument("--dir", default=".hwm-lab",
                      help="the cluster's run directory, as given to `hwm-lab up` (default ./.hwm-lab)")
    dash.set_defaults(func=run, command_name="dashboard")

    replay = subparsers.add_parser("replay", help="replay a trace directory in the dashboard",
                                   description="Open a trace directory (a real or simulated run, or a student's "
                                               "submission) in the dashboard's replay view.")
    replay.add_argument("trace_dir", metavar="DIR")
    replay.add_argument("--html", metavar="FILE", default=None,
                        help="write the replay as one HTML file instead of serving it: it plays from disk in a "
                             "browser, with no server and no network (a long run keeps its rare events and "
                             "summarises the rest)")
    replay.add_argument("--explore", action="store_true",
                        help="DIR is a counterexample (the folder hwm-lab explore --out wrote, or its script): stand "
                             "at any of its steps, see every choice enabled there and each rule's status, take "
                             "another choice and save the branch as a script that hwm-lab simulate --script replays")
    _common(replay, 8801)
    replay.set_defaults(func=run, command_name="replay")


def to_argv(args: argparse.Namespace) -> list[str]:
    """The command line that means `args` (to re-run it through web.serve)."""
    argv = [args.command_name, "--host", args.host, "--port", str(args.port), "--async-mode", args.async_mode,
            "--frame-hz", str(args.frame_hz)]
    if args.token:
        argv += ["--token", args.token]
    if args.lang:
        argv += ["--lang", args.lang]
    if args.command_name == "demo":
        argv += ["--nodes", str(args.nodes), "--dir", args.dir, "--impl", args.impl]
        argv += ["--truncation", args.truncation] if args.truncation else []
        argv += ["--fsync", args.fsync] if args.fsync else []
        argv += ["--pace", args.pace]
    elif args.command_name == "dashboard":
        argv += ["--control-url", args.control_url] if args.control_url else []
        argv += ["--control-token", args.control_token] if args.control_token else []
        argv += ["--dir", args.dir]
    else:
        argv += [args.trace_dir] + (["--explore"] if getattr(args, "explore", False) else [])
    return argv
