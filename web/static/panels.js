/* The page's panels: the control tabs, the keyboard help, large type for a projector, the controls and the
   event feed shown or hidden (each remembered by the browser, or asked in the address: ?large=1, ?panel=0,
   ?feed=0). */
import { $, params, T } from "hwm/page";
import { redraw, S } from "hwm/state";

export function showTab(name) {
  if (document.body.classList.contains("no-panel")) setPanel(true);
  for (const b of document.querySelectorAll(".tabs button")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
  for (const t of document.querySelectorAll(".tab")) t.hidden = t.id !== "tab-" + name;
}
for (const b of document.querySelectorAll(".tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
export const help = $("#help");
$("#btn-help").addEventListener("click", () => { help.hidden = false; $("#btn-help-close").focus(); });
$("#btn-help-close").addEventListener("click", () => { help.hidden = true; });
function remember(key, on) { try { localStorage.setItem(key, on ? "1" : ""); } catch (e) { /* private mode */ } }
function remembered(key) { try { return localStorage.getItem(key); } catch (e) { return null; } }
export function setLarge(on) {
  document.body.classList.toggle("large", on);
  $("#btn-large").setAttribute("aria-pressed", String(on));
  remember("hwm-large", on);
  redraw();
}
export function setPanel(on) {
  document.body.classList.toggle("no-panel", !on);
  $("#btn-panel").setAttribute("aria-pressed", String(on));
  remember("hwm-no-panel", !on);
  redraw();
}
export function setFeed(open) {
  $("#feed-wrap").classList.toggle("collapsed", !open);
  document.body.classList.toggle("feed-collapsed", !open);
  $("#btn-feed").setAttribute("aria-expanded", String(open));
  $("#btn-feed").textContent = open ? T.feedOpen : T.feedClosed;
  remember("hwm-feed-closed", !open);
  S.feedFull = true; redraw();
}
$("#btn-large").addEventListener("click", () => setLarge(!document.body.classList.contains("large")));
$("#btn-panel").addEventListener("click", () => setPanel(document.body.classList.contains("no-panel")));
$("#btn-feed").addEventListener("click", () => setFeed($("#feed-wrap").classList.contains("collapsed")));
$("#show-heartbeats").addEventListener("change", (ev) => { S.showHeartbeats = ev.target.checked; });
if (remembered("hwm-large") || params.get("large")) setLarge(true);
if (remembered("hwm-no-panel") || params.get("panel") === "0") setPanel(false);
if (remembered("hwm-feed-closed") || params.get("feed") === "0") setFeed(false);
window.addEventListener("resize", redraw);
