import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders, uniqueUsername } from "./support/credentials.ts";
import { type ExtraGateway, startExtraGateway } from "./support/second-gateway.ts";
import { type RunningSystem, startSystem } from "./support/system.ts";

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * Sends a request from a chosen loopback address, so each test is its own anonymous caller
 * (anonymous callers are counted per client IP; all of 127.0.0.0/8 reaches the gateway).
 */
function send(
  url: string,
  options: { from: string; method?: string; headers?: Record<string, string>; body?: string },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: options.method ?? "GET", headers: options.headers ?? {}, localAddress: options.from },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/**
 * Rate limits with the spec's plans (free: bursts of 10, 100 an hour) and anonymous callers on
 * the free plan, across two gateway processes sharing the buckets over NATS.
 */
describe("rate limits", () => {
  let system: RunningSystem;
  let second: ExtraGateway;
  let operator: Awaited<ReturnType<typeof operatorHeaders>>;

  beforeAll(async () => {
    // One gateway of the system's own (the launcher's balancer would hide the callers' addresses)
    // and one more process next to it.
    system = await startSystem({
      env: { ANON_PLAN: "free", RATE_LIMIT_PLANS: "", REPLICAS: "1", TRUSTED_PROXIES: "127.0.0.9" },
    });
    second = await startExtraGateway(system);
    operator = await operatorHeaders(system);
  });
  afterAll(async () => {
    await second?.stop();
    await system?.stop();
  });

  const gateways = () => [system.rootUrl, second.rootUrl];

  it("gives a free anonymous caller a burst of 10 in total across two gateways, not 20", async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < 20; i++) {
      answers.push(await send(`${gateways()[i % 2]}/.well-known/jwks.json`, { from: "127.0.0.2" }));
    }
    expect(answers.filter((a) => a.status === 200)).toHaveLength(10);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(10);
    // The first ten pass, counting down; the bucket is shared, so it does not matter which gateway.
    expect(answers.slice(0, 10).map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(answers.slice(0, 10).map((a) => a.headers["ratelimit-remaining"])).toEqual([
      "9",
      "8",
      "7",
      "6",
      "5",
      "4",
      "3",
      "2",
      "1",
      "0",
    ]);
    for (const answer of answers) {
      expect(answer.headers["ratelimit-limit"]).toBe("10");
      expect(answer.headers["x-rate-limit"]).toBe("100");
      expect(answer.headers["x-rate-limit-remaining"]).toBe(answer.headers["ratelimit-remaining"]);
      expect(Number(answer.headers["ratelimit-reset"])).toBeGreaterThan(0);
    }
  });

  it("counts callers behind a trusted proxy by X-Forwarded-For, and ignores the header from anyone else", async () => {
    const viaProxy = async (client: string) =>
      (
        await send(`${system.rootUrl}/.well-known/jwks.json`, {
          from: "127.0.0.9",
          headers: { "x-forwarded-for": client },
        })
      ).status;
    const first = await Promise.all(Array.from({ length: 10 }, () => viaProxy("198.51.100.1")));
    expect(first.every((status) => status === 200)).toBe(true);
    expect(await viaProxy("198.51.100.1")).toBe(429);
    expect(await viaProxy("198.51.100.2")).toBe(200);

    // Not a trusted proxy: the header cannot buy a fresh bucket per request.
    const spoofed: number[] = [];
    for (let i = 0; i < 12; i++) {
      const answer = await send(`${system.rootUrl}/.well-known/jwks.json`, {
        from: "127.0.0.10",
        headers: { "x-forwarded-for": `203.0.113.${i}` },
      });
      spoofed.push(answer.status);
    }
    expect(spoofed.filter((status) => status === 200)).toHaveLength(10);
  });

  it("answers 429 with Retry-After and the error body", async () => {
    let refused: Answer | undefined;
    for (let i = 0; i < 12 && !refused; i++) {
      const answer = await send(`${system.rootUrl}/v2/customer/nobody_here`, { from: "127.0.0.3" });
      if (answer.status === 429) refused = answer;
    }
    expect(refused).toBeDefined();
    // 100 an hour: the next token comes within 36 seconds.
    const retryAfter = Number(refused!.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(36);
    expect(JSON.parse(refused!.body)).toEqual({
      code: 429,
      type: "rate_limited",
      message: expect.any(String),
    });
    expect(refused!.headers["ratelimit-remaining"]).toBe("0");
  });

  it("counts a customer by its account, whichever gateway and address it calls from", async () => {
    const username = uniqueUsername("limited");
    const password = "correct horse battery";
    const created = await send(`${system.rootUrl}/v2/customer`, {
      from: "127.0.0.4",
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username, email: `${username}@example.com`, password }),
    });
    expect(created.status).toBe(201);
    const login = await send(`${second.rootUrl}/v2/customer/login`, {
      from: "127.0.0.4",
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username, password }),
    });
    expect(login.status).toBe(200);
    const bearer = { authorization: `Bearer ${JSON.parse(login.body).token}` };
    const statuses: number[] = [];
    for (let i = 0; i < 14; i++) {
      const answer = await send(`${gateways()[i % 2]}/v2/customer/${username}`, {
        from: i % 3 ? "127.0.0.5" : "127.0.0.6",
        headers: bearer,
      });
      statuses.push(answer.status);
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.slice(10)).toEqual([429, 429, 429, 429]);
  });

  it("does not hold an enterprise operator back: 300 requests in parallel pass, with a burst of 1000", async () => {
    const answers = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        send(`${gateways()[i % 2]}/v2/customer/nobody_here`, { from: "127.0.0.7", headers: operator.apiKey }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(300).fill(404));
    expect(answers[0]!.headers["ratelimit-limit"]).toBe("1000");
  });

  it("never throttles health probes, and leaves them without limit headers", async () => {
    for (let i = 0; i < 25; i++) {
      const health = await send(`${gateways()[i % 2]}/healthz`, { from: "127.0.0.8" });
      expect(health.status).toBe(200);
      expect(health.headers["ratelimit-limit"]).toBeUndefined();
    }
    expect((await send(`${system.rootUrl}/readyz`, { from: "127.0.0.8" })).status).toBe(200);
    // The probes spent nothing: this caller still has its whole burst.
    const first = await send(`${system.rootUrl}/.well-known/jwks.json`, { from: "127.0.0.8" });
    expect(first.headers["ratelimit-remaining"]).toBe("9");
  });
});
