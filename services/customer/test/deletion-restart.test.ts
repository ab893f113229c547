import { existsSync } from "node:fs";
import { join } from "node:path";
import { customerRpc } from "@cheese/contracts";
import { createSqliteEventStore } from "@cheese/event-store";
import { callRpc, createInProcessBroker } from "@cheese/messaging";
import { createLogger, type RunningService } from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { tempDir } from "@cheese/testing";
import { afterEach, describe, expect, it } from "vitest";
import { start } from "../src/main.ts";

/**
 * A customer service that dies right after appending CustomerDeleted, before giving the username
 * and email back and destroying the key: whoever starts next completes the deletion.
 */
describe("a deletion cut short by a crash", () => {
  const dataDir = tempDir("customer-crash");
  const broker = createInProcessBroker({ logger: createLogger("bus", "silent") });
  const caller = broker.connect("gateway");
  // Never advanced: a reservation left behind must not be taken over as stale (a minute) here.
  const clock = new ManualClock();
  let running: RunningService | undefined;

  afterEach(async () => {
    await running?.stop();
    dataDir.remove();
  });

  const startService = async () => {
    running = await start({
      env: { DATA_DIR: dataDir.path, LOG_LEVEL: "silent" },
      bus: broker.connect("customer"),
      logger: createLogger("customer-test", "silent"),
      clock,
    });
  };
  const register = (username: string, email: string) =>
    callRpc(
      caller,
      customerRpc.register,
      { fields: { username, email, password: "correct horse battery", phone: null } },
      { timeoutMs: 10_000 },
    );

  it("gives the username and email back and destroys the key when the service starts again", async () => {
    await startService();
    const { customer } = await register("crashy", "crashy@example.com");
    await running!.stop();
    running = undefined;

    // The process "dies" just after the append: CustomerDeleted is written, nothing after it.
    const store = createSqliteEventStore({ file: join(dataDir.path, "customer", "events.sqlite") });
    const stream = `customer-${customer.id}`;
    const events = await store.readStream(stream);
    await store.append(
      stream,
      [
        {
          type: "CustomerDeleted",
          data: {
            customerId: customer.id,
            username: "crashy",
            apiKeyIds: [],
            deletedAt: clock.now().toISOString(),
          },
        },
      ],
      { expectedRevision: events.at(-1)!.revision },
    );
    await store.close();
    const keyFile = join(dataDir.path, "customer", "keys", `customer-${customer.id}.key`);
    expect(existsSync(keyFile)).toBe(true);

    await startService();
    expect(existsSync(keyFile)).toBe(false);
    const again = await register("Crashy", "CRASHY@example.com");
    expect(again.customer.id).not.toBe(customer.id);
  });
});
