import { readModelIndexSuite } from "@cheese/service-testing/read-model-indexes";
import { cheesesCollection } from "../src/projections/cheeses.ts";

await readModelIndexSuite("catalogue", [cheesesCollection]);
