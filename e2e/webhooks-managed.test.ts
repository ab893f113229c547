import { envelopeOf, Receiver } from "@cheese/testing/receiver";
import { verifyCheeseSignature, verifyStandardSignature, verifyWebhook } from "@cheese/webhook-signature";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";
import { webhookCalls } from "./support/webhooks.ts";

interface Attempt {
  attempt: number;
  round: number;
  startedAt: string;
  outcome: string;
}
interface Delivery {
  id: number;
  eventId: string;
  status: string;
  nextAttemptAt: string | null;
  attempts: Attempt[];
}

/**
 * Registrations managed in place (PATCH, pause/resume, secret rotation, windowed replay, disabling)
 * on the system as `pnpm start` runs it with two processes of every service, two notification
 * replicas among them, racing each change against retries in flight.
 */
function managedWebhooks(env: Record<string, string>) {
  const context = {} as {
    system: RunningSystem;
    receiver: Receiver;
    auth: Awaited<ReturnType<typeof operatorHeaders>>;
  };
  beforeAll(async () => {
    context.receiver = await Receiver.start();
    context.system = await startSystem({
      // The default receiver time-out (10 s): nothing here waits for one, and a short one would
      // turn a receiver answering late on a loaded machine into an extra attempt.
      env: { REPLICAS: "2", WEBHOOK_ALLOW_PRIVATE_URLS: "true", ...env },
    });
    context.auth = await operatorHeaders(context.system);
  });
  afterAll(async () => {
    await context.system?.stop();
    await context.receiver?.close();
  });

  const { api, register } = webhookCalls(() => ({
    system: context.system,
    receiver: context.receiver,
    headers: context.auth.apiKey,
  }));
  const sendTest = async (webhookId: number) => {
    const response = await api("POST", `/webhooks/${webhookId}/test`);
    expect(response.status).toBe(202);
    return (await json(response)).deliveryId as number;
  };
  const deliveries = async (webhookId: number): Promise<Delivery[]> =>
    (await json(await api("GET", `/webhooks/${webhookId}/deliveries?limit=100`))).items;
  const webhook = async (webhookId: number) => json(await api("GET", `/webhooks/${webhookId}`));
  /** Requests that arrived for one event, on any path. */
  const requestsFor = (eventId: string, path?: string) =>
    context.receiver.requests(path).filter((request) => request.headers["webhook-id"] === eventId);
  /** Each recorded attempt reached the receiver exactly once, and nothing else did. */
  const expectOneRequestPerAttempt = (list: Delivery[], path?: string) => {
    for (const delivery of list) {
      expect(requestsFor(delivery.eventId, path), `delivery ${delivery.id}`).toHaveLength(
        delivery.attempts.length,
      );
      expect(delivery.attempts.every((a) => a.outcome === "succeeded" || a.outcome === "failed")).toBe(true);
    }
  };

  /** Waits until each of the registration's `count` deliveries has had an attempt fail. */
  const everyOneFailedOnce = (webhookId: number, count: number) =>
    expect
      .poll(
        async () =>
          (await deliveries(webhookId)).filter((d) => d.attempts.some((a) => a.outcome === "failed")).length,
        { timeout: 15_000 },
      )
      .toBe(count);

  return {
    context,
    api,
    register,
    sendTest,
    deliveries,
    webhook,
    requestsFor,
    expectOneRequestPerAttempt,
    everyOneFailedOnce,
  };
}

describe("webhooks managed in place, with two notification replicas", () => {
  const {
    context,
    api,
    register,
    sendTest,
    deliveries,
    webhook,
    requestsFor,
    expectOneRequestPerAttempt,
    everyOneFailedOnce,
  } = managedWebhooks({
    WEBHOOK_RETRY_DELAYS: `0${",150ms".repeat(19)}`,
    WEBHOOK_REPLAY_MAX: "5",
  });

  it("runs two notification processes", () => {
    expect(context.system.pids().notification).toHaveLength(2);
  });

  it("sends a waiting delivery to the URL a PATCH gave, once per attempt", async () => {
    const { receiver } = context;
    receiver.behave("/before", { status: 500 });
    const hook = await register("/before");
    const deliveryId = await sendTest(hook.id);
    await receiver.waitFor("/before", 1);

    const patched = await api("PATCH", `/webhooks/${hook.id}`, {
      url: receiver.url("/after"),
      events: ["webhook.test", "order.placed"],
      description: "moved",
    });
    expect(patched.status).toBe(200);
    expect(await json(patched)).toMatchObject({
      url: receiver.url("/after"),
      events: ["webhook.test", "order.placed"],
      description: "moved",
    });

    await expect
      .poll(async () => (await deliveries(hook.id)).find((d) => d.id === deliveryId)?.status, {
        timeout: 15_000,
      })
      .toBe("delivered");
    const [delivered] = await deliveries(hook.id);
    const [arrived] = requestsFor(delivered!.eventId, "/after");
    expect(verifyWebhook(hook.secret, arrived!.rawBody, arrived!.headers).id).toBe(delivered!.eventId);
    // Once an attempt went to the new URL, none went to the old one; /after answers 200, so the
    // first attempt there is the last one.
    const paths = requestsFor(delivered!.eventId).map((request) => request.path);
    expect(paths.slice(paths.indexOf("/after"))).toEqual(["/after"]);
    expect(delivered!.attempts.at(-1)!.outcome).toBe("succeeded");
    expectOneRequestPerAttempt([delivered!]);
  });

  it("holds deliveries while paused, even retries already due, and sends them once resumed", async () => {
    const { receiver } = context;
    receiver.behave("/paused", { status: 503 });
    const hook = await register("/paused");
    for (let i = 0; i < 4; i++) await sendTest(hook.id);
    // Each one has failed once (so each waits for a retry), and retries are going out.
    await everyOneFailedOnce(hook.id, 4);
    await receiver.waitFor("/paused", 6);

    const paused = await api("POST", `/webhooks/${hook.id}/pause`);
    const pausedAnswered = Date.now();
    expect(paused.status).toBe(200);
    expect(await json(paused)).toMatchObject({ status: "paused", statusReason: "paused by an operator" });

    // Every delivery waits with its next attempt well overdue, none in flight: the schedulers of
    // both replicas have passed over them many times. An attempt claimed before the pause was
    // recorded completes (and fails: the receiver still answers 503) before this holds.
    // (A scheduler that read the registration just before the pause may still claim an attempt
    // and give it back unsent: the list checked is the one that showed none in flight.)
    let waiting: Delivery[] = [];
    await expect
      .poll(
        async () => {
          waiting = await deliveries(hook.id);
          return waiting.every(
            (d) =>
              d.status !== "attempting" &&
              d.nextAttemptAt !== null &&
              Date.parse(d.nextAttemptAt) < Date.now() - 1000,
          );
        },
        { timeout: 15_000 },
      )
      .toBe(true);
    expect(waiting.map((d) => d.status).sort()).toEqual(Array(4).fill("retry_scheduled"));
    expectOneRequestPerAttempt(waiting);
    // From now on the receiver accepts: only an attempt made while paused could succeed before
    // the resume, and none may be made.
    receiver.behave("/paused", { status: 200 });

    const resumeSent = Date.now();
    const resumed = await api("POST", `/webhooks/${hook.id}/resume`);
    expect(await json(resumed)).toMatchObject({ status: "active", statusReason: null });
    await expect
      .poll(async () => (await deliveries(hook.id)).map((d) => d.status), { timeout: 15_000 })
      .toEqual(Array(4).fill("delivered"));

    const done = await deliveries(hook.id);
    expectOneRequestPerAttempt(done);
    for (const delivery of done) {
      for (const attempt of delivery.attempts) {
        const started = Date.parse(attempt.startedAt);
        expect(started < pausedAnswered || started >= resumeSent, `${delivery.id} ${attempt.startedAt}`).toBe(
          true,
        );
      }
      expect(delivery.attempts.at(-1)!.outcome).toBe("succeeded");
      expect(Date.parse(delivery.attempts.at(-1)!.startedAt)).toBeGreaterThanOrEqual(resumeSent);
    }
  });

  it("signs with both secrets once rotated, the new one in X-Cheese-Signature, without a double attempt", async () => {
    const { receiver } = context;
    // Only a delivery signed twice (the overlap) is accepted, so each one ends after the rotation.
    receiver.behave("/rotating", (request) => ({
      status: String(request.headers["webhook-signature"]).includes(" ") ? 200 : 503,
    }));
    const hook = await register("/rotating");
    for (let i = 0; i < 3; i++) await sendTest(hook.id);
    // Each one has been sent (and refused) before the rotation, signed with the first secret only.
    await everyOneFailedOnce(hook.id, 3);
    await receiver.waitFor("/rotating", 4);

    const rotated = await api("POST", `/webhooks/${hook.id}/rotate-secret`, { overlapSeconds: 3600 });
    expect(rotated.status).toBe(200);
    const { secret: fresh, previousSecretExpiresAt } = await json(rotated);
    expect(fresh).not.toBe(hook.secret);
    expect((await webhook(hook.id)).previousSecretExpiresAt).toBe(previousSecretExpiresAt);

    await expect
      .poll(async () => (await deliveries(hook.id)).map((d) => d.status), { timeout: 15_000 })
      .toEqual(Array(3).fill("delivered"));
    const done = await deliveries(hook.id);
    expectOneRequestPerAttempt(done);
    for (const delivery of done) {
      const last = requestsFor(delivery.eventId).at(-1)!;
      expect(String(last.headers["webhook-signature"]).split(" ")).toHaveLength(2);
      expect(verifyWebhook(fresh, last.rawBody, last.headers).id).toBe(delivery.eventId);
      expect(() => verifyStandardSignature(hook.secret, last.rawBody, last.headers)).not.toThrow();
      expect(() =>
        verifyCheeseSignature(hook.secret, last.rawBody, String(last.headers["x-cheese-signature"])),
      ).toThrow();
    }
    // Before the rotation, one signature with the first secret.
    for (const delivery of done) {
      const first = requestsFor(delivery.eventId)[0]!;
      expect(String(first.headers["webhook-signature"]).split(" ")).toHaveLength(1);
      expect(verifyWebhook(hook.secret, first.rawBody, first.headers).id).toBe(delivery.eventId);
    }
  });

  it("replays a window of deliveries once each, with the original event ids, bounded per call", async () => {
    const { receiver } = context;
    const hook = await register("/replayed");
    const since = new Date().toISOString();
    for (let i = 0; i < 4; i++) await sendTest(hook.id);
    await expect
      .poll(async () => (await deliveries(hook.id)).map((d) => d.status), { timeout: 15_000 })
      .toEqual(Array(4).fill("delivered"));
    const until = new Date(Date.now() + 1).toISOString();

    // Nothing is dead-lettered: the default replay finds nothing.
    expect(await json(await api("POST", `/webhooks/${hook.id}/replay`))).toEqual({ replayed: 0 });
    // Two replays of the same window at once (they reach either replica). The receiver holds its
    // answers until both calls have answered, so no new round can end before the second call has
    // looked: it finds each delivery on its way (waiting or in flight) and leaves it alone. Each
    // delivery starts once.
    let openBarrier = () => {};
    const bothAnswered = new Promise<void>((resolve) => {
      openBarrier = resolve;
    });
    receiver.behave("/replayed", { until: bothAnswered });
    const window = { since, until, status: ["delivered"] };
    const answers = await Promise.all([
      api("POST", `/webhooks/${hook.id}/replay`, window),
      api("POST", `/webhooks/${hook.id}/replay`, window),
    ]);
    openBarrier();
    const counts = await Promise.all(answers.map(async (answer) => (await json(answer)).replayed as number));
    expect(answers.map((answer) => answer.status)).toEqual([202, 202]);
    expect(counts[0]! + counts[1]!).toBe(4);

    await expect
      .poll(
        async () =>
          (await deliveries(hook.id)).filter(
            (d) => d.status === "delivered" && d.attempts.some((a) => a.round === 1),
          ),
        { timeout: 15_000 },
      )
      .toHaveLength(4);
    const done = await deliveries(hook.id);
    expectOneRequestPerAttempt(done);
    for (const delivery of done) {
      // One new round each, from attempt 1, delivered; and no third one.
      expect(delivery.attempts.map((a) => [a.round, a.attempt])).toEqual([
        [0, 1],
        [1, 1],
      ]);
      const [original, replayed, ...more] = requestsFor(delivery.eventId, "/replayed");
      expect(more).toEqual([]);
      expect(replayed!.body).toBe(original!.body);
      expect(envelopeOf(replayed!).id).toBe(delivery.eventId);
    }

    // Six deliveries in a window, five allowed per call: 422 saying so, and nothing replayed.
    for (let i = 0; i < 2; i++) await sendTest(hook.id);
    await expect
      .poll(async () => (await deliveries(hook.id)).filter((d) => d.status === "delivered").length, {
        timeout: 15_000,
      })
      .toBe(6);
    const before = receiver.requests("/replayed").length;
    const refused = await api("POST", `/webhooks/${hook.id}/replay`, { since, status: ["delivered"] });
    expect(refused.status).toBe(422);
    const body = await json(refused);
    expect(body.type).toBe("validation_error");
    expect(body.errors[0].message).toMatch(/6 deliveries match.*at most 5/);
    expect((await deliveries(hook.id)).every((d) => d.status === "delivered")).toBe(true);
    expect(receiver.requests("/replayed")).toHaveLength(before);
  });
});

describe("a failing endpoint disabled, with two notification replicas", () => {
  const { context, api, register, sendTest, deliveries, webhook, requestsFor, expectOneRequestPerAttempt } =
    managedWebhooks({
      WEBHOOK_RETRY_DELAYS: `0${",250ms".repeat(19)}`,
      WEBHOOK_DISABLE_AFTER: "1s",
    });

  it("disables it after the failing period, tells the others once, keeps its deliveries, and resumes it", async () => {
    const { receiver } = context;
    const watcher = await register("/watch", ["webhook.disabled"]);
    receiver.behave("/down", { status: 500 });
    const failing = await register("/down");
    const deliveryId = await sendTest(failing.id);

    await expect.poll(async () => (await webhook(failing.id)).status, { timeout: 15_000 }).toBe("disabled");
    const disabled = await webhook(failing.id);
    expect(disabled.statusReason).toMatch(/^every delivery attempt failed from /);
    expect(Date.parse(disabled.statusSince) - Date.parse(disabled.failingSince)).toBeGreaterThanOrEqual(1000);

    const [notice] = await receiver.waitFor("/watch", 1);
    const envelope = verifyWebhook(watcher.secret, notice!.rawBody, notice!.headers);
    expect(envelope).toMatchObject({
      type: "webhook.disabled",
      data: {
        webhook_id: String(failing.id),
        description: null,
        reason: disabled.statusReason,
        failing_since: disabled.failingSince,
        disabled_at: disabled.statusSince,
      },
    });
    // Once, though both replicas saw the registration disabled: one event, one delivery, and every
    // request to the watcher is an attempt of it.
    const noticeOnce = async () => {
      const [told, ...more] = await deliveries(watcher.id);
      expect(more).toEqual([]);
      expect(told!.eventId).toBe(envelope.id);
      expect(requestsFor(envelope.id, "/watch")).toHaveLength(receiver.requests("/watch").length);
      expectOneRequestPerAttempt([told!], "/watch");
    };
    await expect
      .poll(async () => (await deliveries(watcher.id)).map((d) => d.status), { timeout: 15_000 })
      .toEqual(["delivered"]);
    await noticeOnce();

    // Kept, waiting, not attempted: its next attempt is long overdue.
    let kept: Delivery | undefined;
    await expect
      .poll(
        async () => {
          [kept] = await deliveries(failing.id);
          return kept!.status === "retry_scheduled" && Date.parse(kept!.nextAttemptAt!) < Date.now() - 1000;
        },
        { timeout: 15_000 },
      )
      .toBe(true);
    expect(kept!.id).toBe(deliveryId);
    expectOneRequestPerAttempt([kept!]);

    receiver.behave("/down", { status: 200 });
    expect(await json(await api("POST", `/webhooks/${failing.id}/resume`))).toMatchObject({
      status: "active",
      statusReason: null,
      failingSince: null,
    });
    await expect
      .poll(async () => (await deliveries(failing.id))[0]!.status, { timeout: 15_000 })
      .toBe("delivered");
    const [delivered] = await deliveries(failing.id);
    expectOneRequestPerAttempt([delivered!]);
    await noticeOnce();
  });
});
