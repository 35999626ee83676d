/* Every sentence the dashboard page composes, in one place (the page's fixed labels are in index.html).
   A translation replaces this object; nothing else in the page builds words. */
window.HWM_TEXT = {
  live: "live", replay: "replay", disconnected: "disconnected",
  summary: (n, leader, gen, hwm, truncation, fsync) =>
    `${n} nodes · leader ${leader ? `${leader} (generation ${gen})` : "none"} · high-water mark ${hwm} · ` +
    `truncation ${truncation} · fsync ${fsync}`,
  apiError: (e) => `control API: ${e}`,
  rate: (r) => `${r.toLocaleString()} events/s`,
  following: "following the instructor ✓", notFollowing: "follow the instructor",
  followLeft: "You left the instructor's view; press “follow the instructor” to come back.",

  // lanes
  roleLeader: "★ leader", roleNone: "—",
  generation: (g) => `generation ${g}`,
  logLine: (end, hwm) => `log end ${end} · HWM ${hwm}`,
  lastKnown: (line) => `${line} (last known)`,
  staleTitle: (id) => `${id} did not answer the supervisor just now: its last known figures`,
  staleRole: (id, g) => `${id} still believes it leads generation ${g}; a newer generation has a leader`,
  buttons: { kill: "kill", restart: "restart", pause: "pause", resume: "resume" },
  cutChip: (src, dst) => `✂ ${src}→${dst}`,
  older: (n) => [`1–${n}`, "older", ""],
  olderTitle: (n) => `${n} older entries collapsed`,
  cellTitle: (id, i, p, g, above, hwm) =>
    `${id}[${i}] = ${p}, generation ${g}` + (above ? ` — above ${id}'s high-water mark ${hwm}: not visible to clients` : " — committed"),
  doomedTitle: (id, i) => `${id}[${i}] conflicts with the leader: truncated`,
  hwmTag: (h) => `HWM ${h}`,
  hwmTitle: (id, h) => `${id}'s high-water mark: ${h}`,
  above: "above HWM: not visible",
  matchMark: (m) => `▲m ${m}`, nextMark: (n) => `▲n ${n}`,
  matchTitle: (leader, id, m) => `${leader}: ${id}'s match index ${m}`,
  nextTitle: (leader, id, n) => `${leader}: ${id}'s next index ${n}`,
  truncating: (from, gen, reason) => reason === "conflict"
    ? `✗ conflicts with generation ${gen}: truncating from ${from}` : `✗ truncating from ${from} (${reason})`,
  leaderLine: (id, h) => `leader ${id}: high-water mark ${h}`,
  cutLink: (src, dst, both) => (both ? `${src} ↔ ${dst} cut` : `${src} → ${dst} cut`),
  slowLink: (src, dst, ms) => `${src} → ${dst}: ${ms} ms a message`,
  slowMark: "slow",
  timerTitle: (id, e, t, held) => `${id}'s election clock: ${Math.round(e)} of ${t} ticks` + (held ? " (clocks held)" : ""),
  leadsTitle: (id) => `${id} leads: it sends heartbeats instead of waiting for them`,

  // legend and banners
  legendGeneration: "generation:",
  legendAbove: "above that node's high-water mark: not visible to clients",
  legendMarks: "▲m match · ▲n next index (the leader's view)",
  legendTimer: "ring: election timer",
  slowBanner: (ms) => `slow motion: each message takes ${ms >= 1000 ? (ms / 1000).toLocaleString() + " s" : ms + " ms"}`,
  heldBanner: "❄ clocks held: no elections, heartbeats or time-outs (T releases)",

  // messages in flight
  msg: {
    append: (a, b) => (a === b ? `append ${a}` : `append ${a}–${b}`),
    heartbeat: (h) => `♥ HWM ${h}`,
    ack: (m) => `ack ${m}`,
    heartbeatAck: "♥ ok",
    refuse: (i) => `✗ differs at ${i}`,
    vote: (g) => `vote? g${g}`,
    voteYes: "vote ✓", voteNo: "vote ✗",
    prevote: (g) => `could I win g${g}?`, prevoteYes: "pre-vote ✓", prevoteNo: "pre-vote ✗",
    epochQuery: (g) => `end of g${g}?`, epochAnswer: (i) => `ends at ${i}`,
  },
  dropTitle: (src, dst, label) => `${src} → ${dst}: ${label} — click to drop it`,
  dropped: (src, dst, label) => `Dropped ${src} → ${dst} “${label}”: the link ${src} → ${dst} is cut until it would have landed`,
  lost: "✂ lost",

  // guide and replay captions
  guideCaption: (name, done, total, text) => `${name.toUpperCase()} · step ${done} of ${total}: ${text}`,
  guideStarting: (name) => `${name.toUpperCase()} · starting a fresh cluster…`,
  guideRunning: (done, total) => `Running step ${done} of ${total}…`,
  guideGoingBack: (target, total) => `Going back to step ${target} of ${total}…`,
  guideStartingLabel: "Starting a fresh cluster…",
  guideStep: (done, total) => `Step ${done} of ${total}`,
  guideTitle: (title, truncation) => title + (truncation ? ` (truncation: ${truncation})` : ""),
  guideIntro: "A guided scenario starts a fresh cluster and runs the scenario one narrated step at a time: press Next to run a step, Back to return to the one before.",
  guideFirst: "Press Next to run the first step.",
  guideNext: (t) => `Next: ${t}`,
  guideDone: (passed) => (passed ? "Done: every expectation held." : "Done."),
  replayCaption: (k, n, text) => `step ${k} of ${n}: ${text}`,
  replayInfo: (dir, run, source, events, seconds, warnings) =>
    `${dir}: ${run} (${source}), ${events} events, ${seconds} s at 1×` + (warnings ? `; ${warnings} warnings` : ""),
  scrubLabel: (pos, total, play, duration, stepped) =>
    `event ${pos.toLocaleString()} of ${total.toLocaleString()} · ${play.toFixed(1)} s of ${duration.toFixed(1)} s` +
    (stepped ? " (one tick a moment)" : ""),
  stepMarker: (k, text) => `step ${k}: ${text}`,
  play: "▶ Play", pause: "❚❚ Pause",

  // feed
  feedOpen: "Events ▾", feedClosed: "Events ▸",
  feedSkipped: (n, top) => `+ ${n.toLocaleString()} routine events summarised (${top})`,
  feedCount: (v, k) => `${v.toLocaleString()} ${k}`,

  // answers and toasts
  wrote: (p, i, g, n) => `Wrote “${p}” at index ${i} (generation ${g}) via ${n}: acknowledged, the high-water mark covers it.`,
  notAcked: (p, e) => `Write “${p}” not acknowledged: ${e}`,
  served: (n, i, p, g, h) => `${n} serves index ${i}: “${p}” (generation ${g}); its high-water mark is ${h}.`,
  refused: (n, i, e) => `${n} refuses index ${i}: ${e}`,
  needNode: (key) => `${key} needs a selected node: press 1–7 or click a lane first`,
  noChange: "No change", applied: "Settings applied",
  started: (n) => `Started a ${n}-node cluster`,
  clocksHeld: "Clocks held: the timers stop until you press T again",
  clocksReleased: "Clocks running",
  refusedControl: "refused",
  viewerOnly: "Watching only: controls need the instructor token",
  toLeader: "to the leader", to: (id) => `to ${id}`, from: (id) => `from ${id}`,
  attached: "Attached to a cluster this dashboard did not start: start others with `hwm-lab up`.",
  linkTitle: (s, d, cut) => `${s} → ${d}: ${cut ? "cut (click to heal)" : "connected (click to cut)"}`,
};
