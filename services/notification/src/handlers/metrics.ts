import type { Closable } from "@cheese/messaging";
import type { ReadModelStore } from "@cheese/read-models";
import { observedGauge } from "@cheese/service-kit";
import { DELIVERIES, type DeliveryDocument } from "../projections/deliveries.ts";

const deadLetters = observedGauge({
  name: "cheese_webhook_dead_letters",
  help: "Deliveries that failed every attempt and wait in the dead letters (until replayed)",
  labelNames: [],
});

/** Reports the dead letters' count at every scrape of /metrics, read from the deliveries read model. */
export function observeDeadLetters(readModels: ReadModelStore): Closable {
  const stop = deadLetters.observe({}, () =>
    readModels.collection<DeliveryDocument>(DELIVERIES).count({ status: "dead_lettered" }),
  );
  return { close: async () => void stop() };
}
