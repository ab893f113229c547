import { catalogueRpc } from "@cheese/contracts";
import {
  baseConfigSchema,
  IdAllocator,
  isEntryPoint,
  runAsProcess,
  type ServiceDefinition,
  type StartOptions,
  startProjection,
  startPublisher,
  startService,
} from "@cheese/service-kit";
import { addCheese } from "./handlers/cheese-commands.ts";
import { getCheese } from "./handlers/cheese-queries.ts";
import { toIntegrationEvent } from "./integration-events.ts";
import { projectCheese } from "./projections/cheeses.ts";

const configSchema = baseConfigSchema;
type CatalogueConfig = typeof configSchema._output;

export const catalogueService: ServiceDefinition<CatalogueConfig> = {
  name: "catalogue",
  configSchema,
  needs: { eventStore: true, readModels: true, blobs: true },
  async start(ctx) {
    const { eventStore: store, readModels, logger } = ctx;
    const projection = await startProjection({
      name: "cheeses",
      eventStore: store,
      readModels,
      categories: ["cheese"],
      apply: projectCheese,
      logger,
    });
    ctx.onStop(projection);
    await projection.ready;
    ctx.onStop(
      await startPublisher({
        service: "catalogue",
        eventStore: store,
        bus: ctx.bus,
        categories: ["cheese"],
        toIntegrationEvent,
        logger,
      }),
    );

    const writeSide = {
      store,
      cheeseIds: new IdAllocator(store, "cheese"),
      nameIds: new IdAllocator(store, "name"),
    };
    const readSide = { readModels, projection };
    ctx.serve(catalogueRpc.createCheese, ({ fields }, context) => addCheese(writeSide, fields, context));
    ctx.serve(catalogueRpc.getCheese, ({ cheeseId }) => getCheese(readSide, cheeseId));
  },
};

export const start = (options?: StartOptions) => startService(catalogueService, options);

if (isEntryPoint(import.meta.url)) void runAsProcess(start);
