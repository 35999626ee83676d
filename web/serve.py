"""Runs the dashboard server for `hwm-lab demo | dashboard | replay`.

As `python -m web.serve ARGS` it is the eventlet entry point: it monkey-patches first, before Flask or anything
that opens sockets is imported. `serve_command(args)` is the same work for threading mode, in-process.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
import time


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "threading" not in argv:  # eventlet is the default mode
        import warnings

        # Known and planned for (`--async-mode threading` is the tested fallback): not news on a projector.
        # The message starts with a newline, which `.` does not match.
        warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
        import eventlet

        eventlet.monkey_patch()
    from web import args as arguments

    parser = argparse.ArgumentParser(prog="hwm-lab")
    arguments.register(parser.add_subparsers(dest="command", required=True), serve_command)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


def find_cluster(run_dir: str) -> tuple[str, str | None]:
    """The control URL and token of the cluster running in RUN_DIR (what `hwm-lab up --dir RUN_DIR` wrote)."""
    from lab.processes.client import cluster_info  # after eventlet's monkey-patching (see the module's docstring)

    from lab.i18n import say

    info = cluster_info(run_dir)
    if info is None:
        up = "hwm-lab up" + ("" if run_dir == ".hwm-lab" else f" --dir {run_dir}")
        raise NoCluster(say("no cluster is running in {dir} (no live cluster.json): start one with `{up}`, or give "
                            "--control-url", dir=run_dir, up=up))
    return info["control_url"], info.get("token")


class NoCluster(Exception):
    """`hwm-lab dashboard` found no cluster to show (its reason, a sentence of the catalogue)."""


def port_taken(host: str, port: int):
    """Why the dashboard could not listen on host:port (a sentence of the catalogue, the error named by errno, never
    by the system's words), or None if it can (checked before a cluster starts)."""
    import errno

    from lab.i18n import say

    if port == 0:
        return None
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            address = f"{host}:{port}"
            if exc.errno == errno.EADDRINUSE:
                return say("cannot listen on {address}: the address is in use (another dashboard may run there); "
                           "choose another --port", address=address)
            if exc.errno == errno.EACCES:
                return say("cannot listen on {address}: a port below 1024 needs privileges; choose another --port",
                           address=address)
            return say("cannot listen on {address} ({error}); choose another --port or --host", address=address,
                       error=errno.errorcode.get(exc.errno, str(exc.errno)))
    return None


def reachable_address() -> str:
    """An address of this machine that students' laptops on the same network can reach (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: picks the outgoing interface, sends nothing
            return probe.getsockname()[0]
        except OSError:
            return socket.gethostname()


def _interrupt(*_):
    raise KeyboardInterrupt


class Refused(Exception):
    """A step of `serve_command` that cannot go on: its reason (a sentence of the catalogue) and the exit code."""

    def __init__(self, reason, code: int):
        super().__init__(reason, code)
        self.reason, self.code = reason, code


def serve_command(args: argparse.Namespace) -> int:
    """`hwm-lab demo | dashboard | replay` in this process: the app's settings (the cluster to show, a free port),
    the demo's cluster started, the app built, then served until Ctrl-C; a demo's cluster is stopped however it ends."""
    # Imported here, after eventlet's monkey-patching (see the module's docstring).
    from lab import i18n
    from lab.i18n import complaint, localize, say

    lang = args.lang or i18n.from_environment()
    prog = f"hwm-lab {args.command_name}"

    def tell(text, **options) -> None:
        print(localize(text, lang), flush=True, **options)

    try:
        config = app_config(args)
    except Refused as exc:
        print(complaint(prog, exc.reason, lang), file=sys.stderr)
        return exc.code
    signal.signal(signal.SIGTERM, _interrupt)  # while the cluster starts; run_server takes over after
    host = None
    try:
        if args.command_name == "demo":
            host = demo_host(args)
            start_demo(host, args, tell)
            config["CLUSTER_HOST"] = host
        elif args.command_name != "dashboard":
            config["EXPLORE_DIR" if args.explore else "REPLAY_DIR"] = args.trace_dir
        app = build_app(config, args, tell)
        run_server(app, args.host, args.port, announcer(app, args, host, tell))
    except Refused as exc:
        print(complaint(prog, exc.reason, lang), file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        pass
    finally:
        if host is not None:
            tell(say("stopping the cluster…"))
            host.stop()
            tell(say("stopped"))
    return 0


def app_config(args: argparse.Namespace) -> dict:
    """The app's settings from the command's arguments; for `dashboard`, the cluster it shows (none running is said
    first, whatever holds the port); then the port, checked free before a cluster starts (a second dashboard must
    not share the port with the first)."""
    config = {"ASYNC_MODE": args.async_mode, "HOST": args.host, "FRAME_HZ": args.frame_hz, "TOKEN": args.token,
              "LANGUAGE": args.lang}
    if args.async_mode == "eventlet":  # the scenario's model in an OS thread: the pages are served meanwhile
        from eventlet import tpool

        config["OFFLOAD"] = tpool.execute
    if args.command_name == "dashboard":
        try:
            url, token = (args.control_url, args.control_token) if args.control_url else find_cluster(args.dir)
        except NoCluster as exc:
            raise Refused(exc.args[0], 1) from exc
        config["CONTROL_URL"], config["CONTROL_TOKEN"] = url, token
    taken = port_taken(args.host, args.port)
    if taken:
        raise Refused(taken, 1)
    return config


def demo_host(args: argparse.Namespace):
    """The demo's cluster, not started yet (a size the lab cannot run is refused)."""
    from lab.core.config import MAX_NODES, pace_timing, wait_seconds
    from lab.core.reasons import CLUSTER_SIZE, Reason
    from web.cluster import POINTER_DIR, ClusterHost

    if not 1 <= args.nodes <= MAX_NODES:
        raise Refused(Reason(CLUSTER_SIZE, most=MAX_NODES, count=args.nodes), 2)
    timing = pace_timing(args.pace)
    return ClusterHost(args.dir, impl=args.impl, pointer_dir=POINTER_DIR,
                       supervisor_options={"tick_ms": timing.tick_ms}, wait_seconds=wait_seconds(timing))


def start_demo(host, args: argparse.Namespace, tell) -> None:
    """Starts the demo's cluster with the command's settings, saying where it runs."""
    from lab.i18n import counted, say
    from web.cluster import ClusterError

    tell(counted("starting a cluster of {count} node in {dir}…", "starting a cluster of {count} nodes in "
                 "{dir}…", args.nodes, count=args.nodes, dir=args.dir))
    settings = {k: v for k, v in (("truncation", args.truncation), ("fsync", args.fsync)) if v}
    try:
        host.start(args.nodes, settings=settings)
    except ClusterError as exc:
        raise Refused(exc.args[0], 1) from exc
    tell(say("cluster: {dir} (its data and traces; `hwm-lab status`, `write`, `read`... run from this folder "
             "find it)", dir=str(host.run_dir)))


def build_app(config: dict, args: argparse.Namespace, tell):
    """The dashboard's app; for `replay`, the trace it plays said first."""
    from lab.i18n import counted
    from web.app import create_app

    try:
        app = create_app(config)
    except ValueError as exc:  # a counterexample that cannot be explored: said, not a traceback
        raise Refused(exc.args[0] if exc.args else exc, 2) from exc
    if args.command_name == "replay":
        replay = app.extensions["hwm_dashboard"].replay
        tell(counted("trace {dir}: {events} event over {seconds} s", "trace {dir}: {events} events over {seconds} s",
                     len(replay), dir=args.trace_dir, events=len(replay), seconds=round(replay.duration, 1)))
    return app


def announcer(app, args: argparse.Namespace, host, tell):
    """What `run_server` calls once the port is bound: the dashboard's address (the instructor's, with its token),
    the students' where they can reach it, and what Ctrl-C stops."""
    from lab.i18n import say
    from web.app import is_loopback

    def ready(port: int) -> None:
        shown = args.host if args.host not in ("0.0.0.0", "::") else reachable_address()
        url = f"http://{shown}:{port}/"
        token = app.config["TOKEN"]
        if token:
            tell(say("dashboard: {url} (the instructor's: it controls the cluster)", url=f"{url}?token={token}"))
        else:
            tell(say("dashboard: {url}", url=url))
        if token and not is_loopback(args.host):
            tell(say("students (watch only): {url}", url=url))
        if token:
            tell(say("instructor token: {token} (viewers without it can only watch)", token=token))
        tell(say("Ctrl-C stops the cluster and the dashboard") if host else say("Ctrl-C stops the dashboard"))

    return ready


def run_server(app, host: str, port: int, ready) -> None:
    """Serve until Ctrl-C or SIGTERM; `ready(port)` is called once the port is bound (port 0 picks a free one).

    The server runs in a green thread (eventlet) or a thread (threading); the main thread only waits for the
    stop flag that the signal handlers set, so a signal never lands in the middle of a request."""
    dashboard = app.extensions["hwm_dashboard"]
    stop = {"now": False}

    def on_signal(*_):
        stop["now"] = True

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if app.config["ASYNC_MODE"] == "eventlet":
            import eventlet
            import eventlet.wsgi

            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            listener = eventlet.listen((host, port), family=family, reuse_port=False)  # never share a port
            app.config["PORT"] = listener.getsockname()[1]
            dashboard.ensure_running()  # frames are ready before the first page asks
            server = eventlet.spawn(eventlet.wsgi.server, listener, app, log_output=False, debug=False)
            ready(app.config["PORT"])
            while not stop["now"] and not server.dead:
                eventlet.sleep(0.2)
            server.kill()
            listener.close()
        else:
            import logging
            import threading

            from werkzeug.serving import make_server

            logging.getLogger("werkzeug").setLevel(logging.WARNING)
            server = make_server(host, port, app, threaded=True)
            app.config["PORT"] = server.server_port
            dashboard.ensure_running()
            thread = threading.Thread(target=server.serve_forever, name="dashboard-http", daemon=True)
            thread.start()
            ready(app.config["PORT"])
            while not stop["now"] and thread.is_alive():
                time.sleep(0.2)
            server.shutdown()
    finally:
        dashboard.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    sys.exit(main())
