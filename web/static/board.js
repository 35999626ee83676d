/* The dashboard's stage (stage.js draws it from the state): a click on a lane selects its node, a lane's buttons
   act on it, and a click on a message in flight drops it (a one-way cut healed when it would have landed). */
import { $, T, toast } from "hwm/page";
import { redraw, S } from "hwm/state";
import { control } from "hwm/socket";
import { nodeAction } from "hwm/controls";
import { makeStage } from "hwm/stage";

export const stage = makeStage(S, {
  nodeAction: (id, action) => nodeAction(id, action),
  select: (id) => { S.selected = id; redraw(); },
  drop: (flight) => dropMessage(flight),
  // what else decides the lanes' height: the caption, the timeline, the feed (body classes are seen already)
  sizing: () => [$("#caption").textContent, $("#timeline").hidden, $("#question").offsetHeight,
                 $("#banners").childElementCount].join("|"),
});

function dropMessage(flight) {
  if (S.mode !== "live" || !S.canControl) { toast(T.viewerOnly, true); return; }
  const left = flight.t0 + flight.dur - performance.now();
  if (left <= 30) return;
  stage.dropFlight(flight);
  control("cut_in_flight", { src: flight.src, dst: flight.dst, ms: Math.round(left) }).then((a) => {
    if (a.ok) toast(T.dropped(flight.src, flight.dst, flight.label));
  });
}
