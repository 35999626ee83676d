/* What every module of the page reads: its sentences (text.js, a classic script run before the modules, sets
   window.HWM_TEXT: onefile.js reads them too), its catalogue's settings and the event kinds (set by the page
   before any script), its address's options, and two DOM helpers. A toast says a short answer at the bottom. */
export const T = window.HWM_TEXT;
export const I18N = window.HWM_I18N || { lang: "en", chosen: null };
export const KINDS = window.HWM_KINDS;  // the event kinds, from their declarations (web/narrate.py FEED_KINDS)
export const params = new URLSearchParams(location.search);
export const token = params.get("token");

export const $ = (sel, root) => (root || document).querySelector(sel);
export const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

export function toast(text, bad) {
  let t = $("#toast");
  if (!t) { t = el("div", ""); t.id = "toast"; t.setAttribute("role", "alert"); document.body.appendChild(t); }
  t.textContent = text;
  t.className = bad ? "bad" : "";
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => t.remove(), 4500);
}
