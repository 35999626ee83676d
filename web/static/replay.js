/* A replay (`hwm-lab replay DIR`, or a trace opened in the Replay tab): the timeline's play button, slider and
   step markers, the steps the room may be asked about, and a question's step played before its reveal. */
import { $, el, T, toast } from "hwm/page";
import { S, steps } from "hwm/state";
import { answered, control, socket } from "hwm/socket";
import { seek, stepPlayed, stopPlaying, updatePlayButton } from "hwm/frames";
import { leaveFollow } from "hwm/room";

answered((answer) => { if (answer.play_to !== undefined) playStep(answer.play_to); });

$("#replay-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  socket.emit("replay_open", { dir: $("#replay-dir").value.trim() }, (a) => { if (!a.ok) toast(a.error, true); });
});
$("#btn-live").addEventListener("click", () => {
  stopPlaying();
  leaveFollow();
  socket.emit("go_live", null, (a) => { if (!a.ok) toast(a.error, true); });
});

$("#scrub").addEventListener("input", () => {
  stopPlaying(); leaveFollow();
  const t = Number($("#scrub").value);  // the slider's steps are 0.01 s: its end is the replay's end
  seek(t >= Number($("#scrub").max) - 0.005 ? { position: S.total } : { time: t });
});
$("#btn-play").addEventListener("click", togglePlay);
$("#btn-step-back").addEventListener("click", () => jumpStep(-1));
$("#btn-step-next").addEventListener("click", () => jumpStep(1));
export function togglePlay() {
  if (S.mode !== "replay") return;
  leaveFollow();
  if (S.playing) { stopPlaying(); return; }
  S.playing = true;
  S.playTime = S.position >= S.total ? 0 : S.play;
  if (S.position >= S.total) seek({ position: 0 });
  updatePlayButton();
  lastPlayTick = performance.now();
  requestAnimationFrame(playTick);
}
let lastPlayTick = 0;
function playTick(now) {
  if (!S.playing) return;
  const dt = (now - lastPlayTick) / 1000;
  if (dt >= 0.1) {  // ten seeks a second at most: the server answers with a frame each
    lastPlayTick = now;
    const speed = Number($("#play-speed").value);
    S.playTime += dt * speed;
    const end = S.playTime >= S.duration;
    if (end) S.playTime = S.duration;
    seek({ time: S.playTime, playing: true, speed });
    if (end) { S.playing = false; updatePlayButton(); }  // the last seek above still lands
  }
  requestAnimationFrame(playTick);
}
export function jumpStep(direction) {
  const list = steps();
  if (!list.length) return;
  stopPlaying(); leaveFollow();
  const target = direction > 0 ? list.find((s) => s.n > S.position) : [...list].reverse().find((s) => s.n < S.position);
  if (target) seek({ position: target.n });
  else if (direction < 0) seek({ position: 0 });
}
export function renderMarkers() {
  const box = $("#markers");
  box.replaceChildren();
  const list = steps();
  const broken = S.replay && S.replay.broken;
  list.forEach((s, k) => {
    const m = el("button", "marker" + (broken && broken.step === k + 1 ? " broken" : "")); m.type = "button";
    m.style.left = (100 * s.play / Math.max(S.duration, 0.001)) + "%";
    m.title = T.stepMarker(k + 1, s.text);
    m.appendChild(el("span", "", String(k + 1)));
    m.addEventListener("click", () => { stopPlaying(); leaveFollow(); seek({ position: s.n }); });
    box.appendChild(m);
  });
}

// A question about a replayed step: closing it plays the step (the followers follow), then asks for the reveal.
function playStep(end) {
  S.playUntil = end;
  if (S.position >= end) { stepPlayed(); return; }
  if (!S.playing) togglePlay();
}
function renderReplayAsks() {
  const box = $("#replay-asks"), asks = (S.replay && S.replay.asks) || [], list = steps();
  const k = list.findIndex((s) => s.n >= S.position);  // the step the cursor is before (or at the start of)
  const open = S.question && S.question.state !== "revealed";
  const key = [k, open, S.canControl, S.mode, S.replay && S.replay.run_dir].join("|");
  if (box.dataset.key === key) return;
  box.dataset.key = key; box.replaceChildren();
  if (S.mode !== "replay" || k < 0 || open || !S.canControl) return;
  (asks[k] || []).forEach((prompt, n) => {
    const b = el("button", "ask", T.qAskStep(k + 1, prompt)); b.type = "button"; b.id = `btn-replay-ask-${n}`;
    b.addEventListener("click", () => control("question_ask", { replay_step: k + 1, n }));
    box.appendChild(b);
  });
}

export function renderTimeline() {
  renderReplayAsks();
  if (S.mode !== "replay") return;
  const scrub = $("#scrub");
  scrub.max = String(Math.ceil(S.duration * 100) / 100);
  if (document.activeElement !== scrub) scrub.value = String(S.play);
  $("#scrub-label").textContent = T.scrubLabel(S.position, S.total, S.play, S.duration, S.replay && S.replay.stepped);
}
