/* What the stage's pictures share: the generations' colours (Okabe-Ito: safe for the common colour-vision
   deficiencies; from generation 8 on the colours come back with a pattern, dots, then bars, then a grid, and every
   cell and message also prints its generation), the timer ring's size, the truncation's phases, and SVG nodes. */
export const SVGNS = "http://www.w3.org/2000/svg";
export const CONFLICT_MS = 1800, REMOVE_MS = 800, SLIDE_MS = 800;  // a truncation's phases (lanes.js)
export const RING_R = 26, RING_C = 2 * Math.PI * RING_R;
const COLORS = ["#d9dde2", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"];
const DARK = new Set([3, 5, 6]);

export const svg = (tag, attrs) => {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
};
const hue = (g) => (g ? ((g - 1) % 7) + 1 : 0);
const pattern = (g) => (g ? Math.floor((g - 1) / 7) % 4 : 0);
export const gclass = (g) => `g${hue(g)}` + (pattern(g) ? ` gp${pattern(g)}` : "");
export const color = (g) => COLORS[hue(g)];
export const dark = (g) => DARK.has(hue(g));
