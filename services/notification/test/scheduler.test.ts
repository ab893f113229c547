import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { createFileBlobStore } from "@cheese/blob-store";
import { createSqliteEventStore, type EventStore, type RecordedEvent } from "@cheese/event-store";
import { createInProcessBroker, type InProcessBroker } from "@cheese/messaging";
import { SharedBuckets } from "@cheese/rate-limits";
import { createLogger, foldEvents, handleCommand, isoNow } from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { tempDir } from "@cheese/testing";
import { envelopeOf, Receiver } from "@cheese/testing/receiver";
import {
  verifyAsymmetricSignature,
  verifyStandardSignature,
  verifyWebhook,
  verifyWebhookWithKeys,
} from "@cheese/webhook-signature";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DeliveryScheduler, type SchedulerOptions } from "../src/delivery/scheduler.ts";
import { blobSnapshotStore, type SnapshotStore } from "../src/delivery/snapshot.ts";
import { WEBHOOK_THROTTLE } from "../src/delivery/throttle-gate.ts";
import { type DeliveryState, deliveryDecider, deliveryStream } from "../src/domain/delivery.ts";
import { envelopeBody } from "../src/domain/event-mapping.ts";
import { type LiveWebhook, type WebhookState, webhookDecider, webhookStream } from "../src/domain/webhook.ts";
import { sealAuth } from "../src/security/receiver-auth.ts";
import { generateWebhookSecret, SecretBox } from "../src/security/secrets.ts";
import { WebhookSigningKeys } from "../src/security/signing-keys.ts";
import { registerWebhook } from "./support.ts";

const DAY = 24 * 3_600_000;
const t0 = Date.parse("2026-03-01T10:00:00.000Z");

/**
 * The scheduler on its own, over a real SQLite event store and a real receiver, with an injected
 * clock: days pass by advancing it, never by waiting.
 */
describe("delivery scheduler with an injected clock", () => {
  let data: ReturnType<typeof tempDir>;
  let store: EventStore;
  let receiver: Receiver;
  let clock: ManualClock;
  /** The NATS the replicas share, in process: the throttle's slots live in its key-value store. */
  let broker: InProcessBroker;
  const secrets = new SecretBox(randomBytes(32));
  const schedulers: DeliveryScheduler[] = [];

  beforeEach(async () => {
    data = tempDir("scheduler");
    store = createSqliteEventStore({ file: join(data.path, "events.sqlite") });
    receiver = await Receiver.start();
    clock = new ManualClock(new Date(t0));
    broker = createInProcessBroker();
  });
  afterEach(async () => {
    for (const scheduler of schedulers.splice(0)) await scheduler.close();
    await store.close();
    await receiver.close();
    data.remove();
  });

  const startScheduler = async (options: Partial<SchedulerOptions> = {}) => {
    const scheduler = new DeliveryScheduler({
      store,
      secrets,
      signingKeys: new WebhookSigningKeys(store, secrets, clock),
      delays: [0, DAY, DAY, DAY, DAY, DAY, DAY, DAY],
      timeoutMs: 1000,
      leaseMs: 6000,
      allowPrivate: true,
      maxInFlightPerWebhook: 5,
      maxInFlight: 50,
      disableAfterMs: 5 * DAY,
      retryAfterMaxMs: 3_600_000,
      throttle: new SharedBuckets(
        broker.connect(),
        createLogger("notification", "silent"),
        clock,
        WEBHOOK_THROTTLE,
      ),
      clock,
      logger: createLogger("notification", "silent"),
      ...options,
    });
    scheduler.start();
    schedulers.push(scheduler);
    await scheduler.ready;
    return scheduler;
  };

  const register = async (webhookId: number, path: string, secret = generateWebhookSecret()) => {
    await registerWebhook(store, secrets, {
      webhookId,
      url: receiver.url(path),
      events: ["webhook.test"],
      secret,
      createdAt: isoNow(clock),
    });
    return secret;
  };
  const webhook = async (webhookId: number) =>
    foldEvents(webhookDecider, await store.readStream(webhookStream(webhookId))) as WebhookState;
  const webhookCommand = (command: Parameters<typeof webhookDecider.decide>[0] & { webhookId: number }) =>
    handleCommand(store, webhookStream(command.webhookId), webhookDecider, command);

  let nextDelivery = 1;
  const deliver = async (webhookId: number, delays: number[] = [0, DAY, DAY, DAY, DAY, DAY, DAY, DAY]) => {
    const deliveryId = nextDelivery++;
    const eventId = `evt_${deliveryId.toString(16).padStart(32, "0")}`;
    const createdAt = isoNow(clock);
    await handleCommand(store, deliveryStream(deliveryId), deliveryDecider, {
      type: "Create",
      facts: {
        deliveryId,
        webhookId,
        eventId,
        eventType: "webhook.test",
        body: envelopeBody(eventId, "webhook.test", createdAt, {
          webhook_id: String(webhookId),
          message: "hi",
        }),
        createdAt,
      },
      delays,
    });
    return deliveryId;
  };
  const delivery = async (deliveryId: number) =>
    foldEvents(deliveryDecider, await store.readStream(deliveryStream(deliveryId))) as DeliveryState & {
      attempt: number;
    };

  /** Lets the scheduler finish what it does, advances the clock, and lets it act on what became due. */
  const advance = async (scheduler: DeliveryScheduler, ms: number) => {
    // What is in flight is recorded at the current time first, so its next due time counts from it.
    await scheduler.settle();
    await clock.advance(ms);
    await scheduler.settle();
  };

  it("disables a registration whose attempts all failed for 5 days, keeps its delivery, and resumes it", async () => {
    const notices: RecordedEvent[] = [];
    const scheduler = await startScheduler({ onWebhookDisabled: async (event) => void notices.push(event) });
    receiver.behave("/down", { status: 503 });
    await register(1, "/down");
    const deliveryId = await deliver(1);

    await expect.poll(() => receiver.requests("/down").length).toBe(1);
    for (let day = 1; day <= 4; day++) await advance(scheduler, DAY);
    expect(receiver.requests("/down")).toHaveLength(5);
    expect((await webhook(1)).status).toBe("active");

    await advance(scheduler, DAY); // the 6th failure, 5 days after the first
    await expect.poll(async () => (await webhook(1)).status).toBe("disabled");
    const disabled = (await webhook(1)) as LiveWebhook;
    expect(disabled.failingSince).toBe(new Date(t0).toISOString());
    expect(disabled.statusSince).toBe(new Date(t0 + 5 * DAY).toISOString());
    await expect.poll(() => notices.length).toBe(1);
    expect(notices[0]!.type).toBe("WebhookDisabled");

    // Disabled: the waiting delivery is kept and not attempted, however long it waits.
    await advance(scheduler, 3 * DAY);
    expect(receiver.requests("/down")).toHaveLength(6);
    expect(await delivery(deliveryId)).toMatchObject({ status: "retry_scheduled", attempt: 6 });

    receiver.behave("/down", { status: 200 });
    await webhookCommand({ type: "Resume", webhookId: 1, now: isoNow(clock) });
    await expect.poll(async () => (await delivery(deliveryId)).status).toBe("delivered");
    expect(receiver.requests("/down")).toHaveLength(7);
    expect(notices).toHaveLength(1);
  });

  it("waits as long as a receiver's Retry-After asks, beyond the retry table's delay", async () => {
    const scheduler = await startScheduler({ delays: [0, 1000, 1000] });
    receiver.behave("/busy", (_request, count) =>
      count === 1 ? { status: 503, headers: { "retry-after": "60" } } : { status: 204 },
    );
    await register(1, "/busy");
    const deliveryId = await deliver(1);
    await expect.poll(() => receiver.requests("/busy").length).toBe(1);
    await advance(scheduler, 59_999);
    expect(receiver.requests("/busy")).toHaveLength(1);
    await advance(scheduler, 1);
    await expect.poll(async () => (await delivery(deliveryId)).status).toBe("delivered");
    expect(receiver.requests("/busy")).toHaveLength(2);
  });

  it("disables a registration at once when its receiver answers 410 Gone", async () => {
    const notices: RecordedEvent[] = [];
    await startScheduler({ onWebhookDisabled: async (event) => void notices.push(event) });
    receiver.behave("/gone", { status: 410 });
    await register(1, "/gone");
    await deliver(1);
    await expect.poll(async () => (await webhook(1)).status).toBe("disabled");
    expect((await webhook(1)) as LiveWebhook).toMatchObject({
      statusReason: `the receiver answered 410 Gone at ${new Date(t0).toISOString()}`,
      failingSince: new Date(t0).toISOString(),
    });
    await expect.poll(() => notices.length).toBe(1);
  });

  it("disables a registration that asked before its next attempt can start, though that attempt is due at once", async () => {
    const scheduler = await startScheduler();
    receiver.behave("/unwanted", { status: 400, headers: { "webhook-delivery": "disable" } });
    await register(1, "/unwanted");
    const deliveryId = await deliver(1, [0, 0, 0]);
    await expect.poll(async () => (await webhook(1)).status).toBe("disabled");
    await scheduler.settle();
    expect(receiver.requests("/unwanted")).toHaveLength(1);
    // It waits for a resume with its next attempt due, as every delivery of a disabled registration does.
    expect(await delivery(deliveryId)).toMatchObject({ status: "retry_scheduled", attempt: 1 });
    // However slow the store or the scheduler: the next attempt is claimed only after the failure
    // is recorded, and the registration was disabled before that, so every claim finds it disabled.
    const positionOf = async (stream: string, type: string) =>
      (await store.readStream(stream)).find((event) => event.type === type)!.position;
    expect(await positionOf(webhookStream(1), "WebhookDisabled")).toBeLessThan(
      await positionOf(deliveryStream(deliveryId), "AttemptFailed"),
    );
  });

  it("does not disable a registration that succeeded within the period", async () => {
    const scheduler = await startScheduler();
    let calls = 0;
    // Fails except on the 3rd request: the failing run restarts after it.
    receiver.behave("/flaky", () => ({ status: ++calls === 3 ? 200 : 500 }));
    await register(1, "/flaky");
    await deliver(1);
    await expect.poll(() => receiver.requests("/flaky").length).toBe(1);
    await advance(scheduler, DAY);
    await deliver(1); // attempt 1 of a second delivery: the success
    await advance(scheduler, 0);
    await expect.poll(() => receiver.requests("/flaky").length).toBe(3);
    for (let day = 2; day <= 5; day++) await advance(scheduler, DAY);
    expect((await webhook(1)).status).toBe("active");
  });

  it("holds a paused registration's deliveries, then sends them oldest first when resumed", async () => {
    const scheduler = await startScheduler({ maxInFlightPerWebhook: 1 });
    await register(1, "/paused");
    await webhookCommand({ type: "Pause", webhookId: 1, now: isoNow(clock) });
    const ids = [];
    for (let i = 0; i < 4; i++) {
      ids.push(await deliver(1));
      await clock.advance(1);
    }
    await advance(scheduler, DAY);
    expect(receiver.requests("/paused")).toHaveLength(0);
    for (const id of ids) expect(await delivery(id)).toMatchObject({ status: "pending", attempt: 0 });

    await webhookCommand({ type: "Resume", webhookId: 1, now: isoNow(clock) });
    const received = await receiver.waitFor("/paused", 4);
    expect(received.map((r) => envelopeOf(r).id)).toEqual(
      ids.map((id) => `evt_${id.toString(16).padStart(32, "0")}`),
    );
  });

  it("gives a receiver's slot to its next delivery once it has answered, before the result is recorded", async () => {
    await register(1, "/one-slot");
    // The first attempt's result is held back from the store until the second request arrived.
    const append = store.append.bind(store);
    let secondArrived: () => void = () => {};
    const arrived = new Promise<void>((resolve) => {
      secondArrived = resolve;
    });
    let held = 0;
    store.append = async (stream, events, options) => {
      if (events[0]?.type === "AttemptSucceeded" && held++ === 0) await arrived;
      return append(stream, events, options);
    };
    const scheduler = await startScheduler({ maxInFlightPerWebhook: 1 });
    const first = await deliver(1);
    await clock.advance(1);
    const second = await deliver(1);
    scheduler.wake();
    try {
      await receiver.waitFor("/one-slot", 2, 5000);
      expect((await delivery(first)).status).toBe("attempting");
    } finally {
      secondArrived();
    }
    await scheduler.settle();
    expect(await delivery(first)).toMatchObject({ status: "delivered", attempt: 1 });
    expect(await delivery(second)).toMatchObject({ status: "delivered", attempt: 1 });
    expect(receiver.requests("/one-slot").map((r) => envelopeOf(r).id)).toEqual(
      [first, second].map((id) => `evt_${id.toString(16).padStart(32, "0")}`),
    );
  });

  it("gives back unsent an attempt claimed just as the registration was paused", async () => {
    await register(1, "/racing");
    // The pause lands right after the claim, before the request would go out.
    const append = store.append.bind(store);
    let paused = false;
    store.append = async (stream, events, options) => {
      const result = await append(stream, events, options);
      if (!paused && events[0]?.type === "AttemptStarted") {
        paused = true;
        await webhookCommand({ type: "Pause", webhookId: 1, now: isoNow(clock) });
      }
      return result;
    };
    const scheduler = await startScheduler();
    const deliveryId = await deliver(1);
    await expect.poll(async () => (await delivery(deliveryId)).status).toBe("pending");
    await advance(scheduler, DAY);
    expect(receiver.requests("/racing")).toHaveLength(0);
    const types = (await store.readStream(deliveryStream(deliveryId))).map((event) => event.type);
    expect(types).toEqual(["DeliveryCreated", "AttemptStarted", "AttemptWithdrawn"]);

    await webhookCommand({ type: "Resume", webhookId: 1, now: isoNow(clock) });
    await expect.poll(async () => (await delivery(deliveryId)).status).toBe("delivered");
    expect(receiver.requests("/racing")).toHaveLength(1);
    expect(await delivery(deliveryId)).toMatchObject({ attempt: 1 });
  });

  it("signs with both secrets during a rotation's overlap, and only the new one after it", async () => {
    const scheduler = await startScheduler();
    const old = await register(1, "/rotating");
    const fresh = generateWebhookSecret();
    await webhookCommand({
      type: "RotateSecret",
      webhookId: 1,
      secret: secrets.seal(fresh),
      overlapMs: DAY,
      now: isoNow(clock),
    });
    await deliver(1);
    const [during] = await receiver.waitFor("/rotating", 1);
    const options = { now: () => clock.now().getTime() };
    expect(String(during!.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    expect(verifyWebhook(fresh, during!.rawBody, during!.headers, options).type).toBe("webhook.test");
    expect(() => verifyStandardSignature(old, during!.rawBody, during!.headers, options)).not.toThrow();

    await advance(scheduler, DAY);
    await deliver(1);
    await advance(scheduler, 0);
    const [, after] = await receiver.waitFor("/rotating", 2);
    expect(String(after!.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    expect(verifyWebhook(fresh, after!.rawBody, after!.headers, options).type).toBe("webhook.test");
    expect(() => verifyStandardSignature(old, after!.rawBody, after!.headers, options)).toThrow();
  });

  it("signs v1a with the system key, and with both keys during the key rotation's overlap", async () => {
    const keys = new WebhookSigningKeys(store, secrets, clock);
    await keys.ensure();
    const scheduler = await startScheduler({ signingKeys: keys });
    await registerWebhook(store, secrets, {
      webhookId: 1,
      url: receiver.url("/signed"),
      events: ["webhook.test"],
      signatureAlgorithms: ["ed25519"],
      createdAt: isoNow(clock),
    });
    const options = { now: () => clock.now().getTime() };
    const before = await keys.keySet();
    expect(before.keys).toHaveLength(1);
    await deliver(1);
    const [first] = await receiver.waitFor("/signed", 1);
    // Only v1a was asked for: no v1 HMAC in webhook-signature (X-Cheese-Signature stays).
    expect(String(first!.headers["webhook-signature"])).toMatch(/^v1a,[A-Za-z0-9+/=]+$/);
    expect(first!.headers["x-cheese-signature"]).toMatch(/^sha256=/);
    expect(verifyWebhookWithKeys(before, first!.rawBody, first!.headers, options).type).toBe("webhook.test");

    const rotated = await keys.rotate(DAY);
    expect(rotated.previousKid).toBe(before.keys[0]!.kid);
    const during = await keys.keySet();
    expect(during.keys.map((key) => key.kid)).toEqual([rotated.kid, rotated.previousKid]);
    await deliver(1);
    await advance(scheduler, 0);
    const [, second] = await receiver.waitFor("/signed", 2);
    expect(String(second!.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    // A receiver holding the set from before the rotation, or only the new key, accepts it.
    expect(() => verifyAsymmetricSignature(before, second!.rawBody, second!.headers, options)).not.toThrow();
    const newOnly = { keys: during.keys.filter((key) => key.kid === rotated.kid) };
    expect(() => verifyAsymmetricSignature(newOnly, second!.rawBody, second!.headers, options)).not.toThrow();

    await advance(scheduler, DAY);
    expect((await keys.keySet()).keys.map((key) => key.kid)).toEqual([rotated.kid]);
    await deliver(1);
    await advance(scheduler, 0);
    const [, , third] = await receiver.waitFor("/signed", 3);
    expect(String(third!.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    expect(() => verifyAsymmetricSignature(newOnly, third!.rawBody, third!.headers, options)).not.toThrow();
    expect(() => verifyAsymmetricSignature(before, third!.rawBody, third!.headers, options)).toThrow();
  });

  it("restores its schedule from a snapshot and reads only the events after it", async () => {
    const snapshots = blobSnapshotStore(createFileBlobStore({ dir: join(data.path, "blobs") }));
    const loads: number[] = [];
    const counting: SnapshotStore = {
      load: async () => {
        const snapshot = await snapshots.load();
        loads.push(snapshot?.position ?? -1);
        return snapshot;
      },
      save: (snapshot) => snapshots.save(snapshot),
    };
    receiver.behave("/later", { status: 500 });
    await register(1, "/later");
    const first = await startScheduler({ snapshots: counting });
    const waiting = await deliver(1);
    await expect.poll(() => receiver.requests("/later").length).toBe(1);
    await expect.poll(async () => (await delivery(waiting)).status).toBe("retry_scheduled");
    // The store shows the result as soon as its writer thread has committed it, a moment before
    // the scheduler is woken to follow it: stopped in between, its snapshot is one event behind
    // (that event read again at the next start, nothing lost). Stopped once it has followed it.
    const head = await store.headPosition();
    await expect.poll(() => first.snapshot().position).toBe(head);
    await first.close();
    schedulers.splice(schedulers.indexOf(first), 1);

    const saved = await snapshots.load();
    expect(saved?.position).toBe(head);
    expect(saved?.deliveries).toEqual([
      expect.objectContaining({ deliveryId: waiting, status: "retry_scheduled", attempt: 1 }),
    ]);

    // What the restarted scheduler must learn from events after the snapshot: a pause and a resume.
    await webhookCommand({ type: "Pause", webhookId: 1, now: isoNow(clock) });
    receiver.behave("/later", { status: 200 });
    const second = await startScheduler({ snapshots: counting });
    expect(loads).toEqual([-1, saved!.position]);
    await advance(second, DAY);
    expect(receiver.requests("/later")).toHaveLength(1);
    await webhookCommand({ type: "Resume", webhookId: 1, now: isoNow(clock) });
    await expect.poll(async () => (await delivery(waiting)).status).toBe("delivered");
  });

  it("reads every event when the snapshot cannot be read", async () => {
    const broken: SnapshotStore = {
      load: async () => {
        throw new Error("truncated");
      },
      save: async () => {},
    };
    await register(1, "/fallback");
    const waiting = await deliver(1, [DAY]);
    const scheduler = await startScheduler({ snapshots: broken });
    await advance(scheduler, DAY);
    await expect.poll(async () => (await delivery(waiting)).status).toBe("delivered");
  });
  describe("throttle and receiver auth", () => {
    /** Everything the schedulers log, at debug, as written. */
    const logged: string[] = [];
    const logger = () =>
      createLogger("notification", "debug", { write: (line: string) => void logged.push(line) });
    const advanceAll = async (all: DeliveryScheduler[], ms: number) => {
      for (const scheduler of all) await scheduler.settle();
      await clock.advance(ms);
      for (const scheduler of all) await scheduler.settle();
    };

    it("spaces a throttled registration's attempts over two replicas, retries included, and drops none", async () => {
      const delays = [0, 0, DAY];
      const replicas = [await startScheduler({ delays }), await startScheduler({ delays })];
      let calls = 0;
      // The 2nd request fails: its retry (due at once) waits for a slot like the rest.
      receiver.behave("/slow", () => ({ status: ++calls === 2 ? 500 : 204 }));
      await registerWebhook(store, secrets, {
        webhookId: 1,
        url: receiver.url("/slow"),
        events: ["webhook.test"],
        secret: generateWebhookSecret(),
        createdAt: isoNow(clock),
        rateLimit: { perSecond: 2 },
      });
      const ids = [];
      for (let i = 0; i < 4; i++) ids.push(await deliver(1, delays));

      await expect.poll(() => receiver.requests("/slow").length).toBe(1);
      for (let n = 2; n <= 5; n++) {
        await advanceAll(replicas, 499);
        expect(receiver.requests("/slow")).toHaveLength(n - 1);
        await advanceAll(replicas, 1);
        await expect.poll(() => receiver.requests("/slow").length).toBe(n);
      }
      for (const id of ids) await expect.poll(async () => (await delivery(id)).status).toBe("delivered");
      await advanceAll(replicas, 5000);
      expect(receiver.requests("/slow")).toHaveLength(5);
    });

    it("has two replicas with a backlog each claim their own deliveries first, so no claim of one is refused", async () => {
      // Every append either replica refused (a claim the other made first).
      let refused = 0;
      const counted = new Proxy(store, {
        get(target, name, receiver) {
          const value = Reflect.get(target, name, receiver);
          if (name !== "append" && name !== "appendStreams") return value;
          return (...args: unknown[]) =>
            (value as (...a: unknown[]) => Promise<unknown>).apply(target, args).catch((error: unknown) => {
              refused++;
              throw error;
            });
        },
      });
      const options = { store: counted, maxInFlightPerWebhook: 2 };
      const replicas = [await startScheduler(options), await startScheduler(options)];
      let open: () => void = () => {};
      const barrier = new Promise<void>((resolve) => {
        open = resolve;
      });
      receiver.behave("/backlog", { status: 204, until: barrier });
      await register(1, "/backlog");
      // A backlog: four deliveries wait while the registration is paused; each replica created two.
      await webhookCommand({ type: "Pause", webhookId: 1, now: isoNow(clock) });
      const ids = [];
      for (let i = 0; i < 4; i++) ids.push(await deliver(1));
      replicas[0]!.wake([ids[0]!, ids[2]!]);
      replicas[1]!.wake([ids[1]!, ids[3]!]);
      await webhookCommand({ type: "Resume", webhookId: 1, now: isoNow(clock) });

      // Both replicas' slots fill at once, with the four oldest, none of them twice.
      await expect.poll(() => receiver.requests("/backlog").length).toBe(4);
      open();
      for (const id of ids) await expect.poll(async () => (await delivery(id)).status).toBe("delivered");
      for (const replica of replicas) await replica.settle();
      expect(receiver.requests("/backlog")).toHaveLength(4);
      expect(refused).toBe(0);
    });

    it("sends static headers, records their values redacted, and logs none", async () => {
      logged.length = 0;
      await startScheduler({ logger: logger() });
      await registerWebhook(store, secrets, {
        webhookId: 1,
        url: receiver.url("/keyed"),
        events: ["webhook.test"],
        secret: generateWebhookSecret(),
        createdAt: isoNow(clock),
        auth: sealAuth(secrets, { type: "headers", headers: { "X-Api-Key": "k_live_static_42" } }),
      });
      const deliveryId = await deliver(1);
      const [request] = await receiver.waitFor("/keyed", 1);
      expect(request!.headers["x-api-key"]).toBe("k_live_static_42");
      await expect.poll(async () => (await delivery(deliveryId)).status).toBe("delivered");
      const events = JSON.stringify(await store.readStream(deliveryStream(deliveryId)));
      expect(events).toContain('"X-Api-Key":"[redacted]"');
      expect(events).not.toContain("k_live_static_42");
      expect(logged.join("")).toContain("webhook delivered");
      expect(logged.join("")).not.toContain("k_live_static_42");
    });

    it("gets an OAuth2 token once, reuses it, gets a new one on a 401 and when it expires, and logs neither", async () => {
      logged.length = 0;
      await startScheduler({ logger: logger() });
      let issued = 0;
      receiver.behave("/token", () => ({
        status: 200,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          access_token: `tok-${++issued}-secret`,
          token_type: "Bearer",
          expires_in: 3600,
        }),
      }));
      let accepted = "Bearer tok-1-secret";
      receiver.behave("/api", (request) => ({
        status: request.headers.authorization === accepted ? 204 : 401,
      }));
      await registerWebhook(store, secrets, {
        webhookId: 1,
        url: receiver.url("/api"),
        events: ["webhook.test"],
        secret: generateWebhookSecret(),
        createdAt: isoNow(clock),
        auth: sealAuth(secrets, {
          type: "oauth2_client_credentials",
          tokenUrl: receiver.url("/token"),
          clientId: "cheese hooks",
          clientSecret: "s3cret:value",
          scope: "hooks:write",
        }),
      });
      const delivered = async (deliveryId: number) =>
        expect.poll(async () => (await delivery(deliveryId)).status).toBe("delivered");

      await delivered(await deliver(1));
      await delivered(await deliver(1));
      const [tokenRequest] = receiver.requests("/token");
      expect(receiver.requests("/token")).toHaveLength(1);
      expect(tokenRequest!.headers.authorization).toBe(
        `Basic ${Buffer.from("cheese+hooks:s3cret%3Avalue").toString("base64")}`,
      );
      expect(Object.fromEntries(new URLSearchParams(tokenRequest!.body))).toEqual({
        grant_type: "client_credentials",
        scope: "hooks:write",
      });

      // The receiver stops taking the token: one 401, a new token, the same attempt delivered.
      accepted = "Bearer tok-2-secret";
      const third = await deliver(1);
      await delivered(third);
      expect(receiver.requests("/token")).toHaveLength(2);
      expect(receiver.requests("/api").map((r) => r.headers.authorization)).toEqual([
        "Bearer tok-1-secret",
        "Bearer tok-1-secret",
        "Bearer tok-1-secret",
        "Bearer tok-2-secret",
      ]);
      expect((await delivery(third)).attempt).toBe(1);

      // An hour on, the token has expired: a new one before the attempt, no 401 needed.
      accepted = "Bearer tok-3-secret";
      await clock.advance(3_600_000);
      await delivered(await deliver(1));
      expect(receiver.requests("/token")).toHaveLength(3);
      expect(receiver.requests("/api")).toHaveLength(5);

      const log = logged.join("");
      for (const secret of ["tok-1-secret", "tok-2-secret", "tok-3-secret", "s3cret"])
        expect(log).not.toContain(secret);
      const recorded = [];
      for await (const event of store.readAll()) recorded.push(event);
      expect(JSON.stringify(recorded)).not.toMatch(/tok-\d-secret|s3cret/);
    });

    it("does not fetch a token from an address the guard refuses; the attempt fails saying so", async () => {
      await startScheduler({ allowPrivate: false });
      receiver.behave("/token", { status: 200 });
      await registerWebhook(store, secrets, {
        webhookId: 1,
        url: "https://hooks.example.com/",
        events: ["webhook.test"],
        secret: generateWebhookSecret(),
        createdAt: isoNow(clock),
        auth: sealAuth(secrets, {
          type: "oauth2_client_credentials",
          tokenUrl: receiver.url("/token").replace("http:", "https:"),
          clientId: "c",
          clientSecret: "s",
        }),
      });
      const deliveryId = await deliver(1);
      await expect.poll(async () => (await delivery(deliveryId)).status).toBe("retry_scheduled");
      const events = await store.readStream(deliveryStream(deliveryId));
      expect(events.find((e) => e.type === "AttemptFailed")?.data).toMatchObject({
        error: "no OAuth2 token: token endpoint: refused: loopback address 127.0.0.1",
      });
      expect(receiver.requests("/token")).toHaveLength(0);
    });
  });
});
