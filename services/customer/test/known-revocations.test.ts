import { REVOCATION_TTL_MS, REVOCATIONS_BUCKET, revocationCodec, revocationKeys } from "@cheese/contracts";
import { createInProcessBroker, type KeyValue, KvRecords, type MessageBus } from "@cheese/messaging";
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

/**
 * A bus whose key-value reads go unanswered while `stalled` (a bucket without a leader: the
 * request has no one to answer it), then are answered.
 */
function leaderElections(bus: MessageBus) {
  const waiting: (() => void)[] = [];
  const state = { stalled: false };
  const stallable = (kv: KeyValue): KeyValue =>
    Object.assign(Object.create(kv) as KeyValue, {
      get: async (key: string) => {
        if (state.stalled) await new Promise<void>((answer) => waiting.push(answer));
        return kv.get(key);
      },
    });
  const wrapped = new Proxy(bus, {
    get: (target, name) => {
      if (name === "kv")
        return async (...args: Parameters<MessageBus["kv"]>) => stallable(await target.kv(...args));
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    bus: wrapped,
    lose: () => {
      state.stalled = true;
    },
    elect: () => {
      state.stalled = false;
      for (const answer of waiting.splice(0)) answer();
    },
  };
}

it("stays able to check credentials while the bucket elects a leader, and says not 30 s after its last answer", async () => {
  const broker = createInProcessBroker();
  const owner = broker.connect("customer");
  await new KvRecords(owner, REVOCATIONS_BUCKET, revocationCodec, { ttlMs: REVOCATION_TTL_MS }).open();
  const clock = new ManualClock();
  const bucket = leaderElections(broker.connect("gateway"));
  const known = new KnownRevocations(bucket.bus, createLogger("gateway", "silent"), 1_000, clock);

  // Before the bucket's first answer it waits for one (`/readyz` counts a wait of 2 s as down).
  bucket.lose();
  let first: boolean | undefined;
  const asked = known.answers().then((ready) => {
    first = ready;
  });
  await clock.advance(60_000);
  expect(first).toBeUndefined();
  bucket.elect();
  await asked;
  expect(first).toBe(true);

  // The bucket's leader is lost: ready through an election that ends within 30 s.
  bucket.lose();
  expect(await known.answers()).toBe(true);
  await clock.advance(29_000);
  expect(await known.answers()).toBe(true);
  bucket.elect();
  // Read again every 5 s: a minute on, the bucket's answers keep it ready.
  await clock.advance(60_000);
  expect(await known.answers()).toBe(true);

  // Lost again, and no answer for 30 s: not ready, until the bucket answers again.
  bucket.lose();
  await clock.advance(30_000);
  expect(await known.answers()).toBe(false);
  bucket.elect();
  await expect.poll(() => known.answers()).toBe(true);
});
