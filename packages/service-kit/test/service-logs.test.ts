import { callRpc, createInProcessBus, defineRpc, RemoteError } from "@cheese/messaging";
import { tempDir } from "@cheese/testing";
import { expect, it } from "vitest";
import { z } from "zod";
import { baseConfigSchema } from "../src/config.ts";
import { conflict } from "../src/errors.ts";
import { createLogger } from "../src/logger.ts";
import { startService } from "../src/service.ts";

const makeWidget = defineRpc({
  subject: "widgets.widget.make",
  request: z.object({ name: z.string() }),
  response: z.object({ made: z.boolean() }),
});

it("a request's log lines name its request and correlation ids; a request that logs nothing writes no line", async () => {
  const dir = tempDir("service-logs");
  const bus = createInProcessBus();
  const lines: Record<string, unknown>[] = [];
  const destination = { write: (line: string) => void lines.push(JSON.parse(line)) };
  const service = await startService(
    {
      name: "widgets",
      configSchema: baseConfigSchema,
      needs: {},
      async start(ctx) {
        ctx.serve(makeWidget, async ({ name }, context) => {
          if (name === "taken") throw conflict("a widget with this name exists");
          if (name === "noted") context.logger.warn({ name }, "widget noted");
          return { made: true };
        });
      },
    },
    { bus, env: { DATA_DIR: dir.path }, logger: createLogger("widgets", "info", destination) },
  );
  const call = (name: string, requestId: string) =>
    callRpc(
      bus,
      makeWidget,
      { name },
      { timeoutMs: 2_000, headers: { "x-request-id": requestId, "x-correlation-id": `c-${requestId}` } },
    );
  try {
    const before = lines.length;
    await expect(call("quiet", "r-quiet")).resolves.toEqual({ made: true });
    expect(lines.slice(before)).toEqual([]);

    await expect(call("noted", "r-noted")).resolves.toEqual({ made: true });
    expect(lines.at(-1)).toMatchObject({
      msg: "widget noted",
      requestId: "r-noted",
      correlationId: "c-r-noted",
    });

    const refused = await call("taken", "r-taken").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RemoteError);
    expect(lines.at(-1)).toMatchObject({ msg: "refused", status: 409, requestId: "r-taken" });
  } finally {
    await service.stop();
    await bus.close();
    dir.remove();
  }
});
