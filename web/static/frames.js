/* What a frame does to the page's state: a snapshot (every node) or a delta (changed nodes) plus the events
   since the last frame, the messages those events sent set flying; and the replay's seeks, one in flight at a
   time, whose answers are frames too. */
import { $, KINDS, T } from "hwm/page";
import { redraw, S, stats } from "hwm/state";
import { control, socket } from "hwm/socket";
import { stage } from "hwm/board";

export function onFrame(f) {
  stats.frames += 1;
  const now = performance.now();
  stats.lastFrameAt = performance.timeOrigin + now;
  if (f.kind === "delta" && S.seq !== null && f.base !== S.seq) {
    socket.emit("resync", null, (snap) => { if (snap) onFrame(snap); });
    return;
  }
  const replaying = f.position !== undefined;
  const forward = replaying && f.position > S.position && f.position - S.position <= 60;
  const fresh = f.kind === "delta" ? f.events : (forward ? f.events.filter((e) => e.n > S.position) : []);
  for (const e of fresh) if (e.type === KINDS.TRUNCATED) stage.startTruncation(e);  // before its state lands
  if (f.kind === "snapshot") S.nodes = {};
  for (const n of f.nodes) S.nodes[n.id] = n;
  for (const id of f.gone || []) delete S.nodes[id];
  S.cluster = f.cluster; S.seq = f.seq; S.rate = f.rate; S.eventsNext = f.events_next;
  if (f.clocks) {
    // A clock that ran on since the last poll (no heartbeat reset it) may be drawn running on between polls.
    const clocks = {};
    for (const [id, c] of Object.entries(f.clocks)) {
      const before = S.clocks[id];
      clocks[id] = { ...c, at: now, running: !!before && c.elapsed > before.elapsed };
    }
    S.clocks = clocks;
  }
  if (f.kind === "snapshot") {
    S.feed = f.events.slice().reverse(); S.skipped = f.skipped || 0; S.skippedByType = { ...(f.skipped_by_type || {}) };
    S.feedFull = true;
  } else {
    if (f.events.length) S.feed = f.events.slice().reverse().concat(S.feed);
    S.skipped += f.skipped || 0;
    for (const [k, v] of Object.entries(f.skipped_by_type || {})) S.skippedByType[k] = (S.skippedByType[k] || 0) + v;
    if (S.feed.length > 400) S.feed.length = 400;
  }
  if (replaying) {
    S.position = f.position; S.total = f.total; S.time = f.time; S.play = f.play || 0; S.duration = f.duration;
    S.stepNow = f.step_now || null;
    if (S.playUntil !== null && S.position >= S.playUntil) stepPlayed();
  }
  // Messages in flight: live ones are timed by the run's clock (how long ago each left); replayed ones by
  // the replay's pace.
  const speed = Number(f.speed || $("#play-speed").value) || 1;
  for (const e of fresh) {
    if (replaying) {
      const step = S.replay && S.replay.step_seconds;
      const delay = Number(S.cluster.settings.delay_ms) >= 100 ? Number(S.cluster.settings.delay_ms) : 600;
      stage.addFlights(e, 0, Math.max(150, Math.min(4000, (step ? step * 950 : delay) / speed)));
    } else {
      const age = f.run_clock != null && e.time != null ? Math.max(0, (f.run_clock - e.time) * 1000) : 0;
      stage.addFlights(e, age, Number(S.cluster.settings.delay_ms) || 0);
    }
  }
  stats.events += f.events.length;
  stats.covered += f.events.length + (f.skipped || 0);
  // per frame: when it arrived, when the server sent it, the first event number after it, events in full, summarised
  if (stats.record && f.kind === "delta") stats.arrivals.push([performance.timeOrigin + now, f.sent * 1000, f.events_next, f.events.length, f.skipped || 0]);
  redraw();
}
socket.on("frame", onFrame);

// One seek in flight at a time, the newest wish waiting; a pause or a drag of the slider makes the answers
// to earlier wishes stale, so that the picture stops where the user stopped it.
let seekBusy = false, seekPending = null, seekGen = 0;
export function seek(target) {
  if (seekBusy) { seekPending = target; return; }
  seekBusy = true;
  const gen = seekGen;
  socket.emit("replay_seek", target, (frame) => {
    seekBusy = false;
    if (frame && frame.kind && gen === seekGen) onFrame(frame);
    if (seekPending) { const t = seekPending; seekPending = null; seek(t); }
  });
}
export function stopPlaying() { S.playing = false; seekGen += 1; seekPending = null; updatePlayButton(); }
export function updatePlayButton() { $("#btn-play").textContent = S.playing ? T.pause : T.play; }
window.hwmSeek = seek;  // for the browser tests: {position: n} or {time: s}

// A question about a replayed step: closing it plays the step (the followers follow), then asks for the reveal
// (replay.js plays it).
export function stepPlayed() {
  const end = S.playUntil;
  S.playUntil = null;
  stopPlaying();
  if (S.position !== end) seek({ position: end });  // a played moment may overshoot the step's last event
  control("question_reveal");
}
