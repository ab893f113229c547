import { REVOCATION_TTL_MS, REVOCATIONS_BUCKET, revocationCodec, revocationKeys } from "@cheese/contracts";
import { createInProcessBroker, KvRecords } from "@cheese/messaging";
import { createLogger } from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { expect, it } from "vitest";
import { KnownRevocations } from "../src/known-revocations.ts";

it("a gateway up before the customer service made the revocation bucket says so quietly and watches it once it exists", async () => {
  const broker = createInProcessBroker();
  const lines: { level: number; msg: string }[] = [];
  const logger = createLogger("gateway", "info", {
    write: (line: string) => void lines.push(JSON.parse(line)),
  });
  const clock = new ManualClock();
  const known = new KnownRevocations(broker.connect("gateway"), logger, 1_000, clock);

  known.start();
  await expect.poll(() => lines.map((line) => line.msg)).toContain("revocation bucket not made yet");
  expect(lines.filter((line) => line.level >= 50)).toEqual([]);

  const owner = new KvRecords(broker.connect("customer"), REVOCATIONS_BUCKET, revocationCodec, {
    ttlMs: REVOCATION_TTL_MS,
  });
  await owner.put(revocationKeys.customer(1), { until: clock.now().getTime() + 60_000 });
  await clock.advance(1_000);
  await owner.put(revocationKeys.customer(7), { until: clock.now().getTime() + 60_000 });

  // The watch, opened again by the clock, brings a later revocation without a request asking for it.
  await expect.poll(() => known.whenCustomerRevoked(7, 0)).toBe(true);
  expect(lines.filter((line) => line.level >= 50)).toEqual([]);
});
