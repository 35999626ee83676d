"""The feed's sentences for what is done to the cluster: its start and stop, the faults the instructor or a script
injects (a node killed, restarted, paused or resumed; a full disk, a failing fsync; a link cut or healed; slow motion;
lost messages), its settings changed and its clocks held or released.

None of them reads what web.narrate's Narrator remembers of the run: each says its event alone. The Narrator has
them as its own methods (web.narrate.NARRATION names each under its event kind)."""

from __future__ import annotations

from lab.i18n import Listed, counted, say


class ControlNarrations:
    """The narrations of the cluster's controls and faults, a part of web.narrate.Narrator."""

    def _cluster_started(self, e: dict):
        g = e.get
        return say("Cluster started: nodes {nodes}; truncation {truncation}; fsync {fsync}",
                   nodes=Listed(g("nodes") or []), truncation=g("truncation"), fsync=_fsync(g("fsync")))

    def _cluster_stopped(self, e: dict):
        return say("Cluster stopped")

    def _node_killed(self, e: dict):
        g = e.get
        lost = g("lost_entries")
        if lost:
            return counted("{node} killed (SIGKILL); {lost} unflushed entry lost",
                           "{node} killed (SIGKILL); {lost} unflushed entries lost", lost, node=g("target"), lost=lost)
        return say("{node} killed (SIGKILL)", node=g("target"))

    def _node_restarted(self, e: dict):
        g = e.get
        return say("{node} restarted", node=g("target"))

    def _disk_full(self, e: dict):
        g = e.get
        return say("{node}'s disk is full: its writes fail (ENOSPC) until the disk is freed", node=g("target"))

    def _disk_ok(self, e: dict):
        g = e.get
        return say("{node}'s disk has room again", node=g("target"))

    def _fsync_fail(self, e: dict):
        g = e.get
        return say("{node}'s disk will fail its next fsync (EIO), dropping what it was to sync", node=g("target"))

    def _node_paused(self, e: dict):
        g = e.get
        return say("{node} paused", node=g("target"))

    def _node_resumed(self, e: dict):
        g = e.get
        return say("{node} resumed", node=g("target"))

    def _link_cut(self, e: dict):
        g = e.get
        return say("Link {src} → {dst} cut", src=g("src"), dst=g("dst"))

    def _link_healed(self, e: dict):
        g = e.get
        return say("Link {src} → {dst} healed", src=g("src"), dst=g("dst"))

    def _delay_set(self, e: dict):
        g = e.get
        ms = g("ms") or 0
        return say("Slow motion: every message delayed {ms:g} ms", ms=ms) if ms else say("Slow motion off")

    def _drop_set(self, e: dict):
        g = e.get
        percent = round(100 * (g("rate") or 0), 1)
        if g("src"):
            return say("Link {src} → {dst} drops {percent:g}% of its messages", src=g("src"), dst=g("dst"),
                       percent=percent)
        if percent:
            return say("Every link drops {percent:g}% of its messages", percent=percent)
        return say("Random message loss off")

    def _settings_changed(self, e: dict):
        changes = {k: v for k, v in e.items() if k not in ("type", "node", "time", "seq", "v", "boot", "gen", "n")}
        return say("Settings: {changes}",
                   changes=Listed(f"{k} {_fsync(v) if k == 'fsync' else v}" for k, v in changes.items()))

    def _clocks_held(self, e: dict):
        return say("Node clocks held: nothing happens by itself until the next command")

    def _clocks_released(self, e: dict):
        return say("Node clocks running")


def _fsync(value) -> str:
    if isinstance(value, dict):
        kinds = set(value.values())
        if len(kinds) == 1:
            return kinds.pop()
        return ", ".join(f"{n} {p}" for n, p in sorted(value.items()))
    return str(value)
