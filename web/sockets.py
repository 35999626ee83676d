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
    """Register each Socket.IO event's handler: a method of one Pages (its table, EVENTS)."""
    pages = Pages(socketio, dashboard)
    for event, method in EVENTS.items():
        socketio.on(event)(getattr(pages, method))


EVENTS = {  # a page's Socket.IO event -> the method of Pages that answers it
    "connect": "connect",
    "follow": "follow",
    "replay_open": "replay_open",
    "explore": "explore",
    "go_live": "go_live",
    "disconnect": "disconnect",
    "resync": "resync",
    "control": "control",
    "answer": "answer_question",
    "replay_seek": "replay_seek",
}


class Pages:
    """The dashboard's pages over Socket.IO. Each page joins the rooms of its language ("live:es" or "watch:es",
    "follow:es", "lang:es"): what a room is sent is said once per language in it."""

    def __init__(self, socketio: SocketIO, dashboard):
        self.socketio, self.dashboard = socketio, dashboard

    def lang_of(self, sid: str) -> str:
        return self.dashboard.viewers.get(sid, {}).get("lang", i18n.SOURCE)

    def send(self, event: str, payload, sid: str) -> None:
        self.socketio.emit(event, localize_tree(payload, self.lang_of(sid)), to=sid)

    def answer(self, payload: dict) -> dict:  # a callback's answer, in the asking page's language
        return localize_tree(payload, self.lang_of(request.sid))

    def connect(self, auth=None):
        if not self.dashboard.origin_ok(request.headers.get("Origin"), request.host):
            return False
        auth = auth if isinstance(auth, dict) else {}
        can_control = self.dashboard.may_control(auth.get("token") or request.args.get("token"))
        lang = i18n.supported(auth.get("lang")) or self.dashboard.request_lang()
        # Watchers follow the instructor unless they leave; whoever holds the token leads.
        self.dashboard.viewers[request.sid] = {"control": can_control, "follow": not can_control, "lang": lang,
                                               "seat": seat_of(auth.get("seat"), request.sid)}
        join_room(f"lang:{lang}", sid=request.sid)
        if not can_control:
            join_room(f"follow:{lang}", sid=request.sid)
        self._show(request.sid, self.dashboard.lead["mode"] if not can_control else self.dashboard.mode)
        return None

    def _show(self, sid: str, mode: str, position: int | None = None) -> None:
        if mode == "replay" and self.dashboard.replay is not None:
            self._watch_replay(sid, self.dashboard.lead["position"] if position is None else position)
        elif self.dashboard.feed.client is not None or self.dashboard.replay is None:
            self._watch_live(sid)
        else:
            self._watch_replay(sid, 0)

    def _hello(self, sid: str, mode: str) -> dict:
        viewer = self.dashboard.viewers[sid]
        return self.dashboard.hello(viewer["control"], mode, viewer["follow"], viewer["seat"])

    def _watch_live(self, sid: str) -> None:
        self.dashboard.viewers[sid]["mode"] = "live"
        leave_room(f"replay:{self.lang_of(sid)}", sid=sid)
        self.send("hello", self._hello(sid, "live"), sid)
        # A page that controls the cluster is sent every frame whole ("live"); one that only watches (a student's),
        # thinned ("watch": Dashboard.emit_live).
        room = "live" if self.dashboard.viewers[sid]["control"] else "watch"
        with self.dashboard.lock:  # the snapshot and the room join together: no delta can slip in between
            if room == "watch":
                self.dashboard.flush_watchers()  # (the frames held for the watchers are before this snapshot)
            self.socketio.emit("frame", localized_frame(self.dashboard.feed.snapshot(), self.lang_of(sid)), to=sid)
            join_room(f"{room}:{self.lang_of(sid)}", sid=sid)
        self.dashboard.ensure_running()

    def _watch_replay(self, sid: str, position: int = 0) -> None:
        self.dashboard.viewers[sid]["mode"] = "replay"
        leave_room(f"live:{self.lang_of(sid)}", sid=sid)
        leave_room(f"watch:{self.lang_of(sid)}", sid=sid)
        join_room(f"replay:{self.lang_of(sid)}", sid=sid)
        self.send("hello", self._hello(sid, "replay"), sid)
        self.send("frame", self.dashboard.replay_frame(position), sid)

    def _lead(self, mode: str, position: int = 0) -> None:
        """An instructor changed view: every follower changes with them."""
        self.dashboard.lead = {"mode": mode, "position": position}
        for sid, viewer in list(self.dashboard.viewers.items()):
            if viewer.get("follow") and sid != request.sid:
                self._show(sid, mode, position)

    def follow(self, message):
        message = message if isinstance(message, dict) else {}
        viewer = self.dashboard.viewers.get(request.sid)
        if viewer is None:
            return self.answer({"ok": False, "error": say("not connected")})
        viewer["follow"] = bool(message.get("on"))
        if viewer["follow"]:
            join_room(f"follow:{viewer['lang']}", sid=request.sid)
            self._show(request.sid, self.dashboard.lead["mode"])
        else:
            leave_room(f"follow:{viewer['lang']}", sid=request.sid)
        return {"ok": True, "follow": viewer["follow"], "mode": viewer.get("mode")}

    def replay_open(self, message):
        message = message if isinstance(message, dict) else {}
        viewer = self.dashboard.viewers.get(request.sid, {})
        if message.get("dir"):
            if not viewer.get("control"):
                return self.answer({"ok": False, "error": say("opening a trace needs the instructor token")})
            try:
                self.dashboard.open_replay(str(message["dir"]))
            except ValueError as exc:
                return self.answer({"ok": False, "error": said(exc)})
        if self.dashboard.replay is None:
            return self.answer({"ok": False, "error": say("no trace is open: give a trace directory")})
        self._watch_replay(request.sid)
        if viewer.get("control"):
            self._lead("replay", 0)
        return self.answer({"ok": True, "replay": self.dashboard.replay_info()})

    def explore(self, message):
        """The explorer's panel: open a counterexample at a step, go to another step, take a choice, save. Every
        page then shows the state it leads to, as the replay's stage."""
        message = message if isinstance(message, dict) else {}
        if not self.dashboard.viewers.get(request.sid, {}).get("control"):
            return self.answer({"ok": False, "error": VIEWERS_ONLY})
        try:
            done = self.dashboard.explore(str(message.get("action", "")), message)
        except ValueError as exc:
            return self.answer({"ok": False, "error": said(exc)})
        self._watch_replay(request.sid, done["position"])
        self._lead("replay", done["position"])
        return self.answer(done)

    def go_live(self, *_):
        if self.dashboard.feed.client is None:
            return self.answer({"ok": False,
                                "error": say("no live cluster: this dashboard only replays (hwm-lab replay)")})
        self._watch_live(request.sid)
        if self.dashboard.viewers.get(request.sid, {}).get("control"):
            self._lead("live")
        return {"ok": True}

    def disconnect(self, *_):
        self.dashboard.viewers.pop(request.sid, None)

    def resync(self, *_):
        if self.dashboard.viewers.get(request.sid, {}).get("mode", self.dashboard.mode) == "live":
            return localized_frame(self.dashboard.snapshot(), self.lang_of(request.sid))
        return None

    def control(self, message):
        message = message if isinstance(message, dict) else {}
        action = str(message.get("action", ""))
        if not self.dashboard.viewers.get(request.sid, {}).get("control"):
            return self.answer({"ok": False, "action": action, "error": VIEWERS_ONLY})
        return self.answer(perform(self.dashboard, action, message.get("args") or {}))

    def answer_question(self, message):
        """A page's answer to the open question (any page may answer; a second answer replaces the first)."""
        message = message if isinstance(message, dict) else {}
        viewer = self.dashboard.viewers.get(request.sid)
        if viewer is None:
            return self.answer({"ok": False, "error": say("not connected")})
        return self.answer(self.dashboard.room.answer(viewer["seat"], message.get("id"), message.get("choice")))

    def replay_seek(self, message):
        message = message if isinstance(message, dict) else {}
        try:
            frame = self.dashboard.replay_frame(message.get("position"), message.get("time"))
        except (RuntimeError, ValueError, TypeError) as exc:
            return self.answer({"ok": False, "error": said(exc)})
        viewer = self.dashboard.viewers.get(request.sid, {})
        if viewer.get("control") and viewer.get("mode") == "replay":
            self.dashboard.lead = {"mode": "replay", "position": frame["position"]}
            followed = {**frame, "playing": bool(message.get("playing")), "speed": message.get("speed")}
            self.dashboard.emit("frame", followed, "follow", skip_sid=request.sid, localize_as=localized_frame)
        return localized_frame(frame, self.lang_of(request.sid))
