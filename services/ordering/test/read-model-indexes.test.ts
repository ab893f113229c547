import { readModelIndexSuite } from "@cheese/service-testing/read-model-indexes";
import { ordersCollection } from "../src/projections/orders.ts";

await readModelIndexSuite("ordering", [ordersCollection]);
