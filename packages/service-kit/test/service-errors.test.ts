import { BlobStoreUnavailableError } from "@cheese/blob-store";
import { EventStoreUnavailableError } from "@cheese/event-store";
import { callRpc, createInProcessBus, defineRpc, RemoteError } from "@cheese/messaging";
import { ReadModelsUnavailableError } from "@cheese/read-models";
import { tempDir } from "@cheese/testing";
import { expect, it } from "vitest";
import { z } from "zod";
import { baseConfigSchema } from "../src/config.ts";
import { createLogger } from "../src/logger.ts";
import { startService } from "../src/service.ts";

const readImage = defineRpc({ subject: "images.image.get", request: z.object({}), response: z.object({}) });

it.each([
  ["blob storage", () => new BlobStoreUnavailableError("no answer from MinIO within 10000 ms")],
  ["the event store", () => new EventStoreUnavailableError("EventStoreDB unavailable: connection refused")],
  [
    "the read models",
    () => new ReadModelsUnavailableError("MongoDB unavailable: server selection timed out"),
  ],
])("a handler that meets unavailable %s answers 503 service_unavailable, not 500", async (_, failure) => {
  const dir = tempDir("service-errors");
  const bus = createInProcessBus();
  const service = await startService(
    {
      name: "images",
      configSchema: baseConfigSchema,
      needs: {},
      async start(ctx) {
        ctx.serve(readImage, async () => {
          throw failure();
        });
      },
    },
    { bus, env: { DATA_DIR: dir.path }, logger: createLogger("images", "silent") },
  );
  try {
    const error = await callRpc(bus, readImage, {}, { timeoutMs: 2_000 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RemoteError);
    expect((error as RemoteError).body).toMatchObject({ status: 503, type: "service_unavailable" });
  } finally {
    await service.stop();
    await bus.close();
    dir.remove();
  }
});
