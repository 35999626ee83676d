/* The keyboard (the help lists every key: index.html, #help): K, R, P, X act on the selected node; the replay's
   keys only in a replay; nothing while a box has the focus, nor with Ctrl, Alt or Meta. */
import { $, T, toast } from "hwm/page";
import { redraw, S } from "hwm/state";
import { control } from "hwm/socket";
import { isolate, nodeAction, toggleClocks } from "hwm/controls";
import { help, setFeed, setLarge, setPanel, showTab } from "hwm/panels";
import { historyOn, sequenceOn, setHistory, setSequence } from "hwm/views";
import { seek, stopPlaying } from "hwm/frames";
import { jumpStep, togglePlay } from "hwm/replay";
import { leaveFollow } from "hwm/room";

document.addEventListener("keydown", (ev) => {
  if (ev.key === "Escape") { help.hidden = true; if (document.activeElement) document.activeElement.blur(); return; }
  const tag = (ev.target.tagName || "").toLowerCase();
  if (["input", "select", "textarea"].includes(tag) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const k = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
  const ids = S.cluster.ids || [];
  const sel = S.selected;
  const needsNode = new Set(["k", "r", "p", "x"]);  // they act on the selected node
  let handled = true;
  if (k === "?") help.hidden = !help.hidden;
  else if (/^[1-7]$/.test(k) && ids[Number(k) - 1]) { S.selected = ids[Number(k) - 1]; redraw(); }
  else if (needsNode.has(k) && !sel) toast(T.needNode(k.toUpperCase()), true);
  else if (k === "k") nodeAction(sel, "kill");
  else if (k === "r") nodeAction(sel, "restart");
  else if (k === "p") nodeAction(sel, (S.nodes[sel] || {}).state === "paused" ? "resume" : "pause");
  else if (k === "x") isolate(sel);
  else if (k === "h") control("heal_all");
  else if (k === "t") toggleClocks();
  else if (k === "w") { showTab("client"); $("#write-payload").focus(); }
  else if (k === "e") { showTab("client"); $("#read-index").focus(); }
  else if (k === "s") control("settings", { delay_ms: (S.cluster.settings.delay_ms || 0) ? 0 : 1000 });
  else if (k === "n") { if (!$("#btn-next").disabled) control("guide_next"); }
  else if (k === "b") { if (!$("#btn-back").disabled) control("guide_back"); }
  else if (k === "l") setLarge(!document.body.classList.contains("large"));
  else if (k === "q") setSequence(!sequenceOn());
  else if (k === "i") setHistory(!historyOn());
  else if (k === "c") setPanel(document.body.classList.contains("no-panel"));
  else if (k === "f") setFeed($("#feed-wrap").classList.contains("collapsed"));
  else if (k === " " && S.mode === "replay") togglePlay();
  else if ((k === "ArrowRight" || k === "ArrowLeft") && S.mode === "replay") {
    stopPlaying(); leaveFollow();
    seek({ position: S.position + (k === "ArrowRight" ? 1 : -1) * (ev.shiftKey ? 20 : 1) });
  } else if ((k === "[" || k === "]") && S.mode === "replay") jumpStep(k === "]" ? 1 : -1);
  else handled = false;
  if (handled) ev.preventDefault();
});
