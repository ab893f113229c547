import { readModelIndexSuite } from "@cheese/testing/read-model-indexes";
import { deliveriesCollection } from "../src/projections/deliveries.ts";
import { webhooksCollection } from "../src/projections/webhooks.ts";

await readModelIndexSuite("notification", [webhooksCollection, deliveriesCollection]);
