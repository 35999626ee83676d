/* The room: the language a page reads (the one it chose, ?lang=, else the room's, which the instructor's page
   sets), and following the instructor (a student's page shows what the projector shows). Another language is
   another page load: the server renders the page and its catalogue in it. */
import { $, I18N, T, toast } from "hwm/page";
import { S } from "hwm/state";
import { control, socket } from "hwm/socket";

function reloadIn(lang) {
  const url = new URL(location.href);
  if (lang) url.searchParams.set("lang", lang); else url.searchParams.delete("lang");
  location.replace(url.toString());
}
export function followRoomLanguage(lang) {
  S.roomLang = lang || S.roomLang;
  if (!lang || I18N.chosen || lang === T.lang) return false;
  reloadIn(null);
  return true;
}
socket.on("room_lang", (r) => followRoomLanguage(r && r.lang));
$("#lang").addEventListener("change", () => {
  const lang = $("#lang").value;
  if (S.canControl) {  // the instructor's language is the room's: every page that did not choose follows
    I18N.chosen = null;
    control("room_lang", { lang }).then((a) => { if (a.ok && lang !== T.lang) reloadIn(null); });
  } else {
    reloadIn(lang === S.roomLang ? null : lang);  // the room's language again: follow the room again
  }
});

// ---- following the instructor ------------------------------------------------------------------------
export function renderFollow() {
  const b = $("#btn-follow");
  b.hidden = S.canControl;  // whoever holds the token leads
  b.setAttribute("aria-pressed", String(S.follow));
  b.textContent = S.follow ? T.following : T.notFollowing;
}
function setFollow(on) {
  socket.emit("follow", { on }, (a) => { if (a && a.ok) { S.follow = a.follow; renderFollow(); } });
}
export function leaveFollow() {
  if (!S.follow) return;
  S.follow = false; renderFollow(); setFollow(false); toast(T.followLeft);
}
$("#btn-follow").addEventListener("click", () => setFollow(!S.follow));
