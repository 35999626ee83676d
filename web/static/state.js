/* The page's state S: what the frames the server pushes say (web/frames.py), what this page chose, and the
   replay's cursor. Every module reads it; a change asks for a drawing (redraw), and the page draws at most once
   per animation frame whatever the rate at which frames arrive (the entry, dashboard.js, says how to draw). */
export const S = {
  mode: document.body.dataset.mode || "live",
  canControl: false, tokenRequired: false, ownsCluster: false, liveAvailable: true, follow: false,
  seq: null, nodes: {}, clocks: {}, cluster: { ids: [], links: [], settings: {}, leader: null, connected: false },
  feed: [], skipped: 0, skippedByType: {}, rate: 0, eventsNext: 1, frameHz: 10,
  selected: null, dirty: true, guide: null, scenarios: [], showHeartbeats: true,
  replay: null, position: 0, total: 0, time: 0, play: 0, duration: 0, playing: false, playTime: 0,
  question: null, myAnswer: null,  // the question put to the room (web/room.py), and this page's answer to it
  playUntil: null,  // a replayed step being played for a question's reveal: where it ends
};
// For bench/dashboard.py and the browser tests: what arrived and when, and how long each drawing took
// (recording is off unless a test turns it on).
export const stats = window.hwmStats = { frames: 0, events: 0, covered: 0, record: false, arrivals: [], drawMs: [],
                                         lastFrameAt: 0, flights: 0 };
window.hwmState = S;

let scheduled = false;  // a drawing is asked for the next animation frame
let drawing = () => {};
export function drawWith(draw) { drawing = draw; }
export function schedule() { if (!scheduled) { scheduled = true; requestAnimationFrame(frame); } }
export function redraw() { S.dirty = true; schedule(); }
function frame() { scheduled = false; drawing(); }

// What the state says, read in more than one place.
export function clocksHeld() { return !!(S.cluster.settings && S.cluster.settings.hold_ticks); }
export function steps() { return (S.replay && S.replay.steps) || []; }
