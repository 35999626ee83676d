/* The stage's two other views, each drawn by the server, the same pictures it exports:
   - the message-sequence view (lab/i18n/sequence.py): a replay's is of the events up to its cursor, fetched again
     whenever the cursor moves; a live cluster's is of the whole run (or its last seconds), fetched at most once a
     second. It is drawn as wide as the stage, and the nodes' names stay at the top however far it scrolls;
   - the clients' history (lab/i18n/intervals.py): each operation an interval on a time axis, stale reads marked,
     the whole run; a live cluster's is drawn again at most every two seconds. */
import { $, el, T } from "hwm/page";
import { redraw, S } from "hwm/state";
import { source } from "hwm/socket";
import { stage } from "hwm/board";

const seq = { on: false, pending: false, again: false, shownKey: null, at: 0 };
const SEQ_ZOOM = 1.3;  // large type draws the diagram bigger (dashboard.css)
function sequenceWidth() {
  const zoom = document.body.classList.contains("large") ? SEQ_ZOOM : 1;
  return Math.floor(($("#sequence").clientWidth - 2) / zoom);
}
function sequenceUrl(download) {
  const q = new URLSearchParams({ lang: T.lang, width: String(sequenceWidth()) });
  if (S.mode === "replay") { q.set("mode", "replay"); q.set("position", String(S.position)); }
  else if ($("#seq-span").value === "whole") q.set("whole", "1");
  else q.set("seconds", "15");
  if ($("#seq-heartbeats").checked) q.set("heartbeats", "1");
  if (download) q.set("download", "1");
  return "sequence.svg?" + q.toString();
}
function renderSequence(now) {
  const key = [S.mode, S.mode === "replay" ? S.position : "", $("#seq-heartbeats").checked, $("#seq-span").value,
               sequenceWidth()].join("|");
  if (S.mode === "replay" ? key === seq.shownKey : key === seq.shownKey && now - seq.at < 1000) return;
  if (seq.pending) { seq.again = true; return; }
  seq.pending = true; seq.at = now; seq.shownKey = key;
  const position = S.position;
  $("#seq-span").hidden = S.mode === "replay";
  $("#seq-caption").textContent = S.mode === "replay" ? T.seqReplay(position, S.total)
    : $("#seq-span").value === "whole" ? T.seqWhole : T.seqLive(15);
  $("#seq-export").href = sequenceUrl(true);
  source.sequence(sequenceUrl(false)).then((text) => {
    const box = $("#sequence");
    box.innerHTML = text;  // this server's own SVG: every label in it is escaped (lab/i18n/sequence.py)
    const names = el("div", "seq-names");  // the lines' names, kept in view at the top as the diagram scrolls
    for (const g of box.querySelectorAll("svg g.node")) {
      const n = el("span", "", g.dataset.node); n.style.left = g.dataset.x + "px"; names.appendChild(n);
    }
    box.prepend(names);
    box.dataset.position = S.mode === "replay" ? String(position) : "";
    box.scrollTop = box.scrollHeight;  // the newest rows (the cursor's) in view
  }).catch(() => { seq.shownKey = null; }).finally(() => {
    seq.pending = false;
    if (seq.again) { seq.again = false; redraw(); }
  });
}
export function setSequence(on) {
  if (on && hist.on) setHistory(false);
  seq.on = on; seq.shownKey = null;
  document.body.classList.toggle("sequence-view", on);
  $("#sequence-wrap").hidden = !on;
  $("#btn-sequence").setAttribute("aria-pressed", String(on));
  if (!on) stage.clearFlights();
  redraw();
}
$("#btn-sequence").addEventListener("click", () => setSequence(!seq.on));
$("#seq-heartbeats").addEventListener("change", redraw);
$("#seq-span").addEventListener("change", redraw);
window.hwmSequence = setSequence;

const hist = { on: false, pending: false, shownKey: null, at: 0 };
function renderHistory(now) {
  const key = [S.mode, S.mode === "replay" ? S.total : ""].join("|");
  if (key === hist.shownKey && (S.mode === "replay" || now - hist.at < 2000)) return;
  if (hist.pending) return;
  hist.pending = true; hist.at = now; hist.shownKey = key;
  $("#history-caption").textContent = S.mode === "replay" ? T.historyReplay : T.seqWhole;
  const q = new URLSearchParams({ lang: T.lang });
  if (S.mode === "replay") q.set("mode", "replay");
  source.history("history.svg?" + q.toString())
    .then((text) => { $("#history").innerHTML = text; })  // the server's own SVG: its labels are escaped
    .catch(() => { hist.shownKey = null; }).finally(() => { hist.pending = false; });
}
export function setHistory(on) {
  if (on && seq.on) setSequence(false);
  hist.on = on; hist.shownKey = null;
  document.body.classList.toggle("history-view", on);
  $("#history-wrap").hidden = !on;
  $("#btn-history").setAttribute("aria-pressed", String(on));
  redraw();
}
$("#btn-history").addEventListener("click", () => setHistory(!hist.on));
window.hwmHistory = setHistory;

export const sequenceOn = () => seq.on;
export const historyOn = () => hist.on;
// The stage's place shows one of them, else the lanes (stage.js).
export function renderView(now) {
  if (hist.on) renderHistory(now); else if (seq.on) renderSequence(now); else stage.render(now);
}
