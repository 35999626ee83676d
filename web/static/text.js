/* Every sentence the dashboard page composes, in one place (the page's fixed labels are in index.html).
   Each goes through t(msgid, values): the msgid is the English sentence, looked up in the page's catalogue
   (window.HWM_I18N, the server's .po catalogue for the page's language); {name} placeholders take the values,
   which are never translated. Nothing else in the page builds words. */
(function () {
  "use strict";
  const I18N = window.HWM_I18N || { lang: "en", messages: {} };
  const t = (msgid, values) => {
    const s = I18N.messages[msgid] || msgid;
    return values ? s.replace(/\{(\w+)\}/g, (m, k) => (k in values ? String(values[k]) : m)) : s;
  };
  // A sentence whose words follow a count (the catalogue's plural forms; Spanish and English take the first when n
  // is 1, Chinese has one): tn("{count} event", "{count} events", n, values). Numbers in values are the caller's.
  const PLURALS = I18N.plurals || { forms: {}, nplurals: 2 };
  const tn = (one, other, n, values) => {
    const forms = PLURALS.forms[one] || [one, other];
    const s = forms[PLURALS.nplurals === 1 ? 0 : Math.min(n === 1 ? 0 : 1, forms.length - 1)];
    return values ? s.replace(/\{(\w+)\}/g, (m, k) => (k in values ? String(values[k]) : m)) : s;
  };
  const LOCALE = I18N.lang === "xx" ? "en" : I18N.lang;
  const num = (n) => Number(n).toLocaleString(LOCALE);
  // A quantity with `digits` decimals, as the page's language writes it (Intl: 8,8 in Spanish, 8.8 in Chinese).
  const fixed = (x, digits) => Number(x).toLocaleString(LOCALE, { minimumFractionDigits: digits,
                                                                 maximumFractionDigits: digits });
  const STATES = { running: t("running"), killed: t("killed"), paused: t("paused"), "cut off": t("cut off"),
                   exited: t("exited"), stopped: t("stopped"), starting: t("starting") };
  const ROLES = { leader: t("leader"), follower: t("follower"), candidate: t("candidate") };
  // Every event kind by name (lab.core.events.COUNTED_AS, in the page's language), for the feed's summary of what a
  // frame left out.
  const KIND_NAMES = I18N.kinds || {};
  // A list as the page's language writes one (Intl.ListFormat: "a, b y c"; in Chinese "a、b、c").
  // Chinese figures are listed with 、 (its "unit" list has no separator at all: "节点：3发出的…").
  const listOf = (items) => (I18N.lang === "zh" ? items.join("、") : Intl.ListFormat
    ? new Intl.ListFormat(I18N.lang === "xx" ? "en" : I18N.lang, { type: "unit" }).format(items) : items.join(", "));

  window.HWM_TEXT = {
    lang: I18N.lang,
    live: t("live"), replay: t("replay"), disconnected: t("disconnected"), connecting: t("connecting…"),
    summary: (n, leader, gen, hwm, truncation, fsync) => (leader
      ? tn("{n} node · leader {leader} (generation {generation}) · high-water mark {hwm} · truncation {truncation} · fsync {fsync}",
           "{n} nodes · leader {leader} (generation {generation}) · high-water mark {hwm} · truncation {truncation} · fsync {fsync}",
           n, { n: num(n), leader, generation: num(gen), hwm: num(hwm), truncation, fsync })
      : tn("{n} node · leader none · high-water mark {hwm} · truncation {truncation} · fsync {fsync}",
           "{n} nodes · leader none · high-water mark {hwm} · truncation {truncation} · fsync {fsync}",
           n, { n: num(n), hwm: num(hwm), truncation, fsync })),
    summaryMid: (leader, gen, hwm, truncation) => (leader
      ? t("leader {leader} (generation {generation}) · high-water mark {hwm} · truncation {truncation}", { leader, generation: num(gen), hwm: num(hwm), truncation })
      : t("leader none · high-water mark {hwm} · truncation {truncation}", { hwm: num(hwm), truncation })),
    summaryShort: (leader, gen, hwm, truncation) => (leader
      ? t("{leader} leads (g{generation}) · HWM {hwm} · {truncation}", { leader, generation: num(gen), hwm: num(hwm), truncation })
      : t("no leader · HWM {hwm} · {truncation}", { hwm: num(hwm), truncation })),
    apiError: (e) => t("control API: {error}", { error: e }),
    rate: (r) => tn("{rate} event/s", "{rate} events/s", r, { rate: num(r) }),
    following: t("following the instructor ✓"), notFollowing: t("follow the instructor"),
    followLeft: t("You left the instructor's view; press “follow the instructor” to come back."),
    state: (s) => STATES[s] || s,
    role: (r) => ROLES[r] || r,

    // lanes
    roleLeader: t("★ leader"), roleNone: "—",
    generation: (g) => t("generation {generation}", { generation: g }),
    logLine: (end, hwm) => t("log end {end} · HWM {hwm}", { end, hwm }),
    lastKnown: (line) => t("{line} (last known)", { line }),
    staleTitle: (id) => t("{node} did not answer the supervisor just now: its last known figures", { node: id }),
    staleRole: (id, g) => t("{node} still believes it leads generation {generation}; a newer generation has a leader", { node: id, generation: g }),
    buttons: { kill: t("kill"), restart: t("restart"), pause: t("pause"), resume: t("resume"),
               "disk-full": t("disk full"), "disk-ok": t("disk ok"), "fsync-fail": t("fsync fail") },
    storageTitle: (action, id) => ({ "disk-full": t("fill {node}'s disk: its writes fail with ENOSPC until disk ok", { node: id }),
                                     "disk-ok": t("free {node}'s disk again (then restart it)", { node: id }),
                                     "fsync-fail": t("make {node}'s next fsync fail with EIO", { node: id }) })[action],
    exitedLine: (line, reason) => t("{line} · stopped: {reason}", { line, reason }),
    diskFullChip: t("disk full"),
    buttonTitle: (action, id) => ({ kill: t("kill {node}", { node: id }), restart: t("restart {node}", { node: id }),
                                    pause: t("pause {node}", { node: id }), resume: t("resume {node}", { node: id }) })[action],
    cutChip: (src, dst) => `✂ ${src}→${dst}`,
    cutBoth: (a, b) => `✂ ${a}⇄${b}`,
    cutCount: (n) => `✂ ×${n}`,  // the links themselves are in the chip's tooltip
    older: (n) => [`1–${n}`, "…", ""],
    olderTitle: (n) => tn("{count} older entry collapsed", "{count} older entries collapsed", n, { count: num(n) }),
    cellTitle: (id, i, p, g, above, hwm) => (above
      ? t("{node}[{index}] = {payload}, generation {generation} — above {node}'s high-water mark {hwm}: not visible to clients",
          { node: id, index: i, payload: p, generation: g, hwm })
      : t("{node}[{index}] = {payload}, generation {generation} — committed", { node: id, index: i, payload: p, generation: g })),
    doomedTitle: (id, i) => t("{node}[{index}] conflicts with the leader: truncated", { node: id, index: i }),
    hwmTag: (h) => t("HWM {hwm}", { hwm: h }),
    hwmTitle: (id, h) => t("{node}'s high-water mark: {hwm}", { node: id, hwm: h }),
    above: t("above HWM: not visible"),
    matchMark: (m) => `▲m ${m}`, nextMark: (n) => `▲n ${n}`,
    matchTitle: (leader, id, m) => t("{leader}: {node}'s match index {index}", { leader, node: id, index: m }),
    nextTitle: (leader, id, n) => t("{leader}: {node}'s next index {index}", { leader, node: id, index: n }),
    truncating: (from, gen, reason) => (reason === "conflict"
      ? t("✗ conflicts with generation {generation}: truncating from {index}", { generation: gen, index: from })
      : t("✗ truncating from {index} ({reason})", { index: from, reason })),
    truncatingShort: (from) => t("✗ truncating from {index}", { index: from }),
    leaderLine: (id, h) => t("leader {node}: high-water mark {hwm}", { node: id, hwm: h }),
    cutLink: (src, dst, both) => (both ? t("{src} ↔ {dst} cut", { src, dst }) : t("{src} → {dst} cut", { src, dst })),
    slowLink: (src, dst, ms) => t("{src} → {dst}: {ms} ms a message", { src, dst, ms }),
    slowMark: t("slow"),
    timerTitle: (id, e, total, held) => (held
      ? t("{node}'s election clock: {elapsed} of {timeout} ticks (clocks held)", { node: id, elapsed: Math.round(e), timeout: total })
      : t("{node}'s election clock: {elapsed} of {timeout} ticks", { node: id, elapsed: Math.round(e), timeout: total })),
    leadsTitle: (id) => t("{node} leads: it sends heartbeats instead of waiting for them", { node: id }),

    // legend and banners
    legendGeneration: t("generation:"),
    legendAbove: t("above that node's high-water mark: not visible to clients"),
    legendMarks: t("▲m match · ▲n next index (the leader's view)"),
    legendTimer: t("ring: election timer"),
    slowBanner: (ms) => (ms >= 1000
      ? t("slow motion: each message takes {seconds} s", { seconds: num(ms / 1000) })
      : t("slow motion: each message takes {ms} ms", { ms })),
    heldBanner: t("❄ clocks held: no elections, heartbeats or time-outs (T releases)"),

    // messages in flight
    seqReplay: (n, total) => t("up to event {position} of {total}", { position: n, total }),
    seqLive: (s) => t("the last {seconds} s", { seconds: num(s) }),
    seqWhole: t("the whole run, as far as the dashboard keeps it"),
    historyReplay: t("the whole run: each client's operations from request to answer, stale reads in red"),
    msg: {
      append: (a, b) => (a === b ? t("append {index}", { index: a }) : t("append {first}–{last}", { first: a, last: b })),
      heartbeat: (h) => t("♥ HWM {hwm}", { hwm: h }),
      ack: (m) => t("ack {index}", { index: m }),
      heartbeatAck: t("♥ ok"),
      refuse: (i) => t("✗ differs at {index}", { index: i }),
      vote: (g) => t("vote? g{generation}", { generation: g }),
      voteYes: t("vote ✓"), voteNo: t("vote ✗"),
      prevote: (g) => t("could I win g{generation}?", { generation: g }),
      prevoteYes: t("pre-vote ✓"), prevoteNo: t("pre-vote ✗"),
      epochQuery: (g) => t("end of g{generation}?", { generation: g }),
      epochAnswer: (i) => t("ends at {index}", { index: i }),
    },
    dropTitle: (src, dst, label) => t("{src} → {dst}: {label} — click to drop it", { src, dst, label }),
    dropped: (src, dst, label) => t("Dropped {src} → {dst} “{label}”: the link {src} → {dst} is cut until it would have landed", { src, dst, label }),
    lost: t("✂ lost"),

    // guide and replay captions
    guideCaption: (name, done, total, text) => t("{name} · step {done} of {total}: {text}", { name: name.toUpperCase(), done, total, text }),
    guideAbout: (name, text) => `${name.toUpperCase()} · ${text}`,
    guideStarting: (name) => t("{name} · starting a fresh cluster…", { name: name.toUpperCase() }),
    guideRunning: (done, total) => t("Running step {done} of {total}…", { done, total }),
    guideGoingBack: (target, total) => t("Going back to step {target} of {total}…", { target, total }),
    guideStartingLabel: t("Starting a fresh cluster…"),
    guideStep: (done, total) => t("Step {done} of {total}", { done, total }),
    guideTitle: (title, truncation) => (truncation ? t("{title} (truncation: {truncation})", { title, truncation }) : title),
    guideIntro: t("A guided scenario starts a fresh cluster and runs the scenario one narrated step at a time: press Next to run a step, Back to return to the one before."),
    guideFirst: t("Press Next to run the first step."),
    guideNextStep: (k, total) => t("Next: step {k} of {total}", { k, total }),
    guideDone: (passed) => (passed ? t("Done: every expectation held.") : t("Done.")),
    replayCaption: (k, n, text) => t("step {k} of {n}: {text}", { k, n, text }),
    replayStep: (k, n) => t("step {k} of {n}", { k: num(k), n: num(n) }),
    replayInfo: (dir, run, source, events, seconds, warnings) => {
      const said = tn("{dir}: {run} ({source}), {events} event over {seconds} s at 1×",
                      "{dir}: {run} ({source}), {events} events over {seconds} s at 1×", events,
                      { dir, run, source, events: num(events), seconds: fixed(seconds, 1) });
      return warnings ? said + " · " + tn("{count} warning", "{count} warnings", warnings, { count: num(warnings) })
        : said;
    },
    scrubLabel: (pos, total, play, duration, stepped) => (stepped
      ? t("event {position} of {total} · {play} s of {duration} s (one tick a moment)",
          { position: num(pos), total: num(total), play: fixed(play, 1), duration: fixed(duration, 1) })
      : t("event {position} of {total} · {play} s of {duration} s",
          { position: num(pos), total: num(total), play: fixed(play, 1), duration: fixed(duration, 1) })),
    feedTime: (seconds) => t("{seconds} s", { seconds: fixed(seconds, 2) }),
    stepMarker: (k, text) => t("step {k}: {text}", { k, text }),
    play: t("▶ Play"), pause: t("❚❚ Pause"),

    // feed
    feedOpen: t("Events ▾"), feedClosed: t("Events ▸"),
    feedSkipped: (n, top) => tn("+ {count} routine event summarised ({top})", "+ {count} routine events summarised ({top})",
                                n, { count: num(n), top }),
    feedSkippedShort: (n) => tn("+ {count} routine event summarised", "+ {count} routine events summarised", n,
                                { count: num(n) }),
    feedTop: (byType) => listOf(Object.entries(byType).filter(([k]) => k in KIND_NAMES)
      .sort((a, b) => b[1] - a[1]).slice(0, 3)
      .map(([k, v]) => t("{kind}: {count}", { kind: KIND_NAMES[k], count: num(v) }))),

    // answers and toasts
    wrote: (p, i, g, n) => t("Wrote “{payload}” at index {index} (generation {generation}) via {node}: acknowledged, the high-water mark covers it.",
                             { payload: p, index: i, generation: g, node: n }),
    notAcked: (p, e) => t("Write “{payload}” not acknowledged: {error}", { payload: p, error: e }),
    served: (n, i, p, g, h) => t("{node} serves index {index}: “{payload}” (generation {generation}); its high-water mark is {hwm}.",
                                 { node: n, index: i, payload: p, generation: g, hwm: h }),
    servedByLeader: (n, i, p, g, h) => t("The leader {node}, once a majority confirmed it still leads, serves index {index}: “{payload}” (generation {generation}); its high-water mark is {hwm}.",
                                         { node: n, index: i, payload: p, generation: g, hwm: h }),
    refused: (n, i, e) => t("{node} refuses index {index}: {error}", { node: n, index: i, error: e }),
    needNode: (key) => t("{key} needs a selected node: press 1–7 or click a lane first", { key }),
    noChange: t("No change"), applied: t("Settings applied"),
    started: (n) => t("Started a {n}-node cluster", { n }),
    clocksHeld: t("Clocks held: the timers stop until you press T again"),
    clocksReleased: t("Clocks running"),
    refusedControl: t("refused"),
    viewerOnly: t("Watching only: controls need the instructor token"),
    toLeader: t("to the leader"), to: (id) => t("to {node}", { node: id }), from: (id) => t("from {node}", { node: id }),
    attached: t("Attached to a cluster this dashboard did not start: start others with `hwm-lab up`."),
    linkTitle: (s, d, cut) => (cut ? t("{src} → {dst}: cut (click to heal)", { src: s, dst: d })
                                   : t("{src} → {dst}: connected (click to cut)", { src: s, dst: d })),
    langTitle: t("Language of this page"),

    // the question put to the room
    qAnswers: (n) => t("answers: {count}", { count: num(n) }),
    qAsk: (prompt) => t("Ask the room: {question}", { question: prompt }),
    qAskStep: (k, prompt) => t("Before step {k}, ask the room: {question}", { k, question: prompt }),
    qChoose: t("Choose your answer: you can change it until the question closes."),
    qChange: t("Your answer is in: you can change it until the question closes."),
    qMine: t("your answer"),
    qClosed: t("Answers are closed: the step plays…"),
    qRight: t("✓ right"),
    qClose: t("Close and play the step ▶"),
    qCloseRead: t("Close and make the read ▶"),
    qDismiss: t("Take the question away"),
    langRoomTitle: t("Language of this page and of the room: the watching pages follow it"),

    // the explorer (explore.js)
    exploreAt: (at, total) => t("The state after step {at} of {total}", { at, total }),
    ruleHolds: t("✓ holds"), ruleBroken: t("✗ broken"), ruleNotChecked: t("– not checked in this run"),
    exploreNoChoice: t("No choice here: a rule is broken, the run ends at this step. Go back a step to take another."),
    exploreSaved: (path) => t("Saved: {path}. Replay it with: hwm-lab simulate --script {path}", { path }),

    // a replay in one file (onefile.js)
    oneFileRun: (run, shown, total) => (shown < total
      ? tn("{run}: {shown} of {total} event shown, the rest summarised by type",
           "{run}: {shown} of {total} events shown, the rest summarised by type", total,
           { run, shown: num(shown), total: num(total) })
      : tn("{run}: {total} event", "{run}: {total} events", total, { run, total: num(total) })),
    oneFileOnly: t("This page is a replay in one file: it has no cluster to control"),
  };
})();
