"""The dashboard's Socket.IO handlers: pages connect, follow the instructor, watch live or a replay, send controls."""

from __future__ import annotations

from flask import request
from flask_socketio import SocketIO, join_room, leave_room

from lab import i18n
from lab.i18n import say
from web.actions import VIEWERS_ONLY, perform, said
from web.frames import localize_tree, localized_frame
from web.room import seat_of


def socket_handlers(socketio: SocketIO, dashboard) -> None:
    # Each page joins the rooms of its language ("live:es" or "watch:es", "follow:es", "lang:es"): what a room is sent is said
    # once per language in it.
    def lang_of(sid: str) -> str:
        return dashboard.viewers.get(sid, {}).get("lang", i18n.SOURCE)

    def send(event: str, payload, sid: str) -> None:
        socketio.emit(event, localize_tree(payload, lang_of(sid)), to=sid)

    def answer(payload: dict) -> dict:  # a callback's answer, in the asking page's language
        return localize_tree(payload, lang_of(request.sid))

    @socketio.on("connect")
    def connect(auth=None):
        if not dashboard.origin_ok(request.headers.get("Origin"), request.host):
            return False
        auth = auth if isinstance(auth, dict) else {}
        can_control = dashboard.may_control(auth.get("token") or request.args.get("token"))
        lang = i18n.supported(auth.get("lang")) or dashboard.request_lang()
        # Watchers follow the instructor unless they leave; whoever holds the token leads.
        dashboard.viewers[request.sid] = {"control": can_control, "follow": not can_control, "lang": lang,
                                          "seat": seat_of(auth.get("seat"), request.sid)}
        join_room(f"lang:{lang}", sid=request.sid)
        if not can_control:
            join_room(f"follow:{lang}", sid=request.sid)
        _show(request.sid, dashboard.lead["mode"] if not can_control else dashboard.mode)
        return None

    def _show(sid: str, mode: str, position: int | None = None) -> None:
        if mode == "replay" and dashboard.replay is not None:
            _watch_replay(sid, dashboard.lead["position"] if position is None else position)
        elif dashboard.feed.client is not None or dashboard.replay is None:
            _watch_live(sid)
        else:
            _watch_replay(sid, 0)

    def _hello(sid: str, mode: str) -> dict:
        viewer = dashboard.viewers[sid]
        return dashboard.hello(viewer["control"], mode, viewer["follow"], viewer["seat"])

    def _watch_live(sid: str) -> None:
        dashboard.viewers[sid]["mode"] = "live"
        leave_room(f"replay:{lang_of(sid)}", sid=sid)
        send("hello", _hello(sid, "live"), sid)
        # A page that controls the cluster is sent every frame whole ("live"); one that only watches (a student's),
        # thinned ("watch": Dashboard.emit_live).
        room = "live" if dashboard.viewers[sid]["control"] else "watch"
        with dashboard.lock:  # the snapshot and the room join together: no delta can slip in between
            socketio.emit("frame", localized_frame(dashboard.feed.snapshot(), lang_of(sid)), to=sid)
            join_room(f"{room}:{lang_of(sid)}", sid=sid)
        dashboard.ensure_running()

    def _watch_replay(sid: str, position: int = 0) -> None:
        dashboard.viewers[sid]["mode"] = "replay"
        leave_room(f"live:{lang_of(sid)}", sid=sid)
        leave_room(f"watch:{lang_of(sid)}", sid=sid)
        join_room(f"replay:{lang_of(sid)}", sid=sid)
        send("hello", _hello(sid, "replay"), sid)
        send("frame", dashboard.replay_frame(position), sid)

    def _lead(mode: str, position: int = 0) -> None:
        """An instructor changed view: every follower changes with them."""
        dashboard.lead = {"mode": mode, "position": position}
        for sid, viewer in list(dashboard.viewers.items()):
            if viewer.get("follow") and sid != request.sid:
                _show(sid, mode, position)

    @socketio.on("follow")
    def follow(message):
        message = message if isinstance(message, dict) else {}
        viewer = dashboard.viewers.get(request.sid)
        if viewer is None:
            return answer({"ok": False, "error": say("not connected")})
        viewer["follow"] = bool(message.get("on"))
        if viewer["follow"]:
            join_room(f"follow:{viewer['lang']}", sid=request.sid)
            _show(request.sid, dashboard.lead["mode"])
        else:
            leave_room(f"follow:{viewer['lang']}", sid=request.sid)
        return {"ok": True, "follow": viewer["follow"], "mode": viewer.get("mode")}

    @socketio.on("replay_open")
    def replay_open(message):
        message = message if isinstance(message, dict) else {}
        viewer = dashboard.viewers.get(request.sid, {})
        if message.get("dir"):
            if not viewer.get("control"):
                return answer({"ok": False, "error": say("opening a trace needs the instructor token")})
            try:
                dashboard.open_replay(str(message["dir"]))
            except ValueError as exc:
                return answer({"ok": False, "error": said(exc)})
        if dashboard.replay is None:
            return answer({"ok": False, "error": say("no trace is open: give a trace directory")})
        _watch_replay(request.sid)
        if viewer.get("control"):
            _lead("replay", 0)
        return answer({"ok": True, "replay": dashboard.replay.info()})

    @socketio.on("explore")
    def explore(message):
        """The explorer's panel: open a counterexample at a step, go to another step, take a choice, save. Every
        page then shows the state it leads to, as the replay's stage."""
        message = message if isinstance(message, dict) else {}
        if not dashboard.viewers.get(request.sid, {}).get("control"):
            return answer({"ok": False, "error": VIEWERS_ONLY})
        try:
            done = dashboard.explore(str(message.get("action", "")), message)
        except ValueError as exc:
            return answer({"ok": False, "error": said(exc)})
        _watch_replay(request.sid, done["position"])
        _lead("replay", done["position"])
        return answer(done)

    @socketio.on("go_live")
    def go_live(*_):
        if dashboard.feed.client is None:
            return answer({"ok": False, "error": say("no live cluster: this dashboard only replays (hwm-lab replay)")})
        _watch_live(request.sid)
        if dashboard.viewers.get(request.sid, {}).get("control"):
            _lead("live")
        return {"ok": True}

    @socketio.on("disconnect")
    def disconnect(*_):
        dashboard.viewers.pop(request.sid, None)

    @socketio.on("resync")
    def resync(*_):
        if dashboard.viewers.get(request.sid, {}).get("mode", dashboard.mode) == "live":
            return localized_frame(dashboard.snapshot(), lang_of(request.sid))
        return None

    @socketio.on("control")
    def control(message):
        message = message if isinstance(message, dict) else {}
        action = str(message.get("action", ""))
        if not dashboard.viewers.get(request.sid, {}).get("control"):
            return answer({"ok": False, "action": action, "error": VIEWERS_ONLY})
        return answer(perform(dashboard, action, message.get("args") or {}))

    @socketio.on("answer")
    def answer_question(message):
        """A page's answer to the open question (any page may answer; a second answer replaces the first)."""
        message = message if isinstance(message, dict) else {}
        viewer = dashboard.viewers.get(request.sid)
        if viewer is None:
            return answer({"ok": False, "error": say("not connected")})
        return answer(dashboard.room.answer(viewer["seat"], message.get("id"), message.get("choice")))

    @socketio.on("replay_seek")
    def replay_seek(message):
        message = message if isinstance(message, dict) else {}
        try:
            frame = dashboard.replay_frame(message.get("position"), message.get("time"))
        except (RuntimeError, ValueError, TypeError) as exc:
            return answer({"ok": False, "error": said(exc)})
        viewer = dashboard.viewers.get(request.sid, {})
        if viewer.get("control") and viewer.get("mode") == "replay":
            dashboard.lead = {"mode": "replay", "position": frame["position"]}
            followed = {**frame, "playing": bool(message.get("playing")), "speed": message.get("speed")}
            dashboard.emit("frame", followed, "follow", skip_sid=request.sid, localize_as=localized_frame)
        return localized_frame(frame, lang_of(request.sid))
