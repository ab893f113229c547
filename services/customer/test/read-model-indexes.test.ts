import { readModelIndexSuite } from "@cheese/service-testing/read-model-indexes";
import { apiKeysCollection } from "../src/projections/api-keys.ts";

await readModelIndexSuite("customer", [apiKeysCollection]);
