/* The event feed: the run's events as the server words them (web/narrate.py), newest first, routine ones hidden
   unless asked for, and what a frame left out counted by kind. */
import { $, el, KINDS, T } from "hwm/page";
import { redraw, S } from "hwm/state";

const IMPORTANT = new Set(KINDS.important);
const ROUTINE = new Set(KINDS.routine);
// The feed is the costliest thing to draw: new lines are added at the top, old ones dropped at the bottom,
// and the whole list is rebuilt only for a snapshot or a change of filter.
const FEED_LINES = 80;
let feedShown = null;  // the newest event drawn (object identity)
function feedLine(e) {
  const li = el("li", (IMPORTANT.has(e.type) || e.stale ? "important " : "") + e.type
                + (e.type === KINDS.EXPECTATION && !e.ok ? " expect-fail" : "") + (e.stale ? " stale" : ""));
  li.appendChild(el("span", "t", e.time !== undefined ? T.feedTime(e.time) : ""));
  li.appendChild(el("span", "who", e.node === "cluster" ? "⚙" : e.node));
  li.appendChild(el("span", "x", e.text || e.type));
  return li;
}
export function renderFeed(full) {
  const hide = $("#hide-routine").checked;
  // Hundreds of entries a second are a blur, and each line costs the page a layout: keep only the story.
  const storyOnly = hide && document.body.classList.contains("busy");
  const list = $("#feed");
  const fresh = [];
  for (const e of S.feed) {
    if (!full && e === feedShown) break;
    if (hide && ROUTINE.has(e.type)) continue;
    if (storyOnly && !IMPORTANT.has(e.type)) continue;
    fresh.push(e);
    if (fresh.length >= FEED_LINES) break;
  }
  if (full || fresh.length >= FEED_LINES || feedShown === null) {
    const frag = document.createDocumentFragment();
    for (const e of fresh) frag.appendChild(feedLine(e));
    list.replaceChildren(frag);
  } else if (fresh.length) {
    const frag = document.createDocumentFragment();
    for (const e of fresh) frag.appendChild(feedLine(e));
    list.prepend(frag);
    while (list.children.length > FEED_LINES) list.lastChild.remove();
  }
  feedShown = S.feed.length ? S.feed[0] : null;
  const latest = S.feed.find((e) => IMPORTANT.has(e.type) || e.stale);
  $("#feed-latest").textContent = latest ? latest.text : "";
  const top = T.feedTop(S.skippedByType);
  // The count always; which kinds, when they fit the line (and in the tooltip).
  const skipped = $("#skipped"), said = S.skipped ? (top ? T.feedSkipped(S.skipped, top) : T.feedSkippedShort(S.skipped)) : "";
  if (skipped.title !== said || skipped.dataset.w !== String(innerWidth) + document.body.className) {
    skipped.title = said; skipped.dataset.w = String(innerWidth) + document.body.className;
    skipped.textContent = said;
    if (said && skipped.scrollWidth > skipped.clientWidth + 1) skipped.textContent = T.feedSkippedShort(S.skipped);
  }
}
$("#hide-routine").addEventListener("change", () => { S.feedFull = true; redraw(); });
