import { readModelIndexSuite } from "@cheese/service-testing/read-model-indexes";
import { deliveriesCollection } from "../src/projections/deliveries.ts";
import { webhooksCollection } from "../src/projections/webhooks.ts";

await readModelIndexSuite("notification", [webhooksCollection, deliveriesCollection]);
