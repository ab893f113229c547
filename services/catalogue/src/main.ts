import { catalogueRpc, historyRpc } from "@cheese/contracts";
import {
  IdAllocator,
  type ServiceDefinition,
  type StartOptions,
  serveRebuildRequests,
  startProjection,
  startPublisher,
  startService,
} from "@cheese/service-kit";
import { noticeEverythingChanged, noticingChanges } from "./change-notices.ts";
import { type CatalogueConfig, catalogueConfigSchema } from "./config.ts";
import { addCheese } from "./handlers/add-cheese.ts";
import { attachImage } from "./handlers/attach-image.ts";
import { replaceCheese, updateCheese } from "./handlers/change-cheese.ts";
import { CheckedCheeses } from "./handlers/checked-cheeses.ts";
import { cheeseHistory } from "./handlers/cheese-history.ts";
import {
  findCheeses,
  getCheese,
  getCheeseAsOf,
  inventory,
  listCheeses,
  listImages,
} from "./handlers/cheese-queries.ts";
import { deleteCheese } from "./handlers/delete-cheese.ts";
import type { CatalogueDeps } from "./handlers/deps.ts";
import { integrationEvents } from "./integration-events.ts";
import { cheesesProjection } from "./projections/cheeses.ts";

export const catalogueService: ServiceDefinition<CatalogueConfig, CatalogueDeps> = {
  name: "catalogue",
  configSchema: catalogueConfigSchema,
  needs: { eventStore: true, readModels: true, blobs: true },
  // The wiring of the service, production's and the tests' alike (startService runs it; what
  // it returns is `RunningService.wired`): projections, consumers, handlers' deps, RPCs.
  async start(ctx) {
    const { eventStore: store, readModels, logger } = ctx;
    const projection = await startProjection({
      ...cheesesProjection,
      eventStore: store,
      readModels,
      logger,
      // Reads switched to a rebuilt read model: replies cached from the one before may differ.
      onSwitch: () => noticeEverythingChanged(ctx.bus),
    });
    ctx.onStop(projection);
    ctx.onStop(serveRebuildRequests(ctx.bus, "catalogue", { cheeses: projection }, logger));
    await projection.ready;
    const checkedCheeses = new CheckedCheeses();
    ctx.onStop(
      await startPublisher({
        service: "catalogue",
        eventStore: store,
        bus: ctx.bus,
        categories: ["cheese"],
        toIntegrationEvent: integrationEvents(checkedCheeses),
        logger,
        leaseMs: ctx.config.RELAY_LEASE,
        clock: ctx.clock,
      }),
    );

    // Every write to a cheese is told to whoever caches catalogue replies (change-notices.ts).
    const writes = noticingChanges(store, ctx.bus);
    const deps: CatalogueDeps = {
      store: writes,
      clock: ctx.clock,
      cheeseIds: new IdAllocator(writes, "cheese"),
      nameIds: new IdAllocator(writes, "name"),
      knownNames: new Map(),
      bus: ctx.bus,
      blobs: ctx.blobs,
      // Half the gateway's deadline: ordering's silence becomes our 503 before the gateway gives up.
      orderingTimeoutMs: Math.max(100, Math.floor(ctx.config.RPC_TIMEOUT / 2)),
      readModels,
      checkedCheeses,
      projection,
    };
    ctx.serve(catalogueRpc.createCheese, deps, addCheese);
    ctx.serve(catalogueRpc.replaceCheese, deps, replaceCheese);
    ctx.serve(catalogueRpc.updateCheese, deps, updateCheese);
    ctx.serve(catalogueRpc.deleteCheese, deps, deleteCheese);
    ctx.serve(catalogueRpc.attachImage, deps, attachImage);
    ctx.serve(catalogueRpc.getCheese, ({ cheeseId }) => getCheese(deps, cheeseId));
    ctx.serve(catalogueRpc.getCheeseAsOf, deps, getCheeseAsOf);
    ctx.serve(catalogueRpc.listCheeses, deps, listCheeses);
    ctx.serve(catalogueRpc.findCheeses, deps, findCheeses);
    ctx.serve(catalogueRpc.inventory, () => inventory(deps));
    ctx.serve(catalogueRpc.listImages, ({ cheeseId }) => listImages(deps, cheeseId));
    ctx.serve(historyRpc.cheese, (request) => cheeseHistory(deps.store, request));
    // Started (so maybe with a newer read model than what was cached), or back after a drop of
    // the connection (notices sent meanwhile may be lost): anything may have changed.
    noticeEverythingChanged(ctx.bus);
    ctx.onStop(ctx.bus.onConnectionChange((connected) => connected && noticeEverythingChanged(ctx.bus)));
    return deps;
  },
};

export const start = (options?: StartOptions) => startService(catalogueService, options);
