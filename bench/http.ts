/**
 * Throughput and latency of the whole system over HTTP: the launcher starts every service as its
 * own process over NATS (as `pnpm start` does), then a fixed number of requests is sent with a
 * fixed concurrency. Numbers for comparing changes on the same machine, not pass/fail.
 */
import { operatorHeaders } from "../e2e/support/credentials.ts";
import { type RunningSystem, startSystem } from "../e2e/support/system.ts";

interface Result {
  name: string;
  requests: number;
  ms: number;
  latencies: number[];
  failures: number;
}

async function load(
  name: string,
  requests: number,
  concurrency: number,
  send: (i: number) => Promise<Response>,
): Promise<Result> {
  const latencies: number[] = [];
  let failures = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        const i = next++;
        const t = performance.now();
        const response = await send(i);
        await response.arrayBuffer();
        latencies.push(performance.now() - t);
        if (response.status >= 400) failures++;
      }
    }),
  );
  return { name, requests, ms: performance.now() - started, latencies, failures };
}

function report({ name, requests, ms, latencies, failures }: Result): void {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(1);
  console.log(
    `${name.padEnd(44)} ${String(requests).padStart(5)} req  ${((requests / ms) * 1000).toFixed(0).padStart(5)} req/s` +
      `  p50 ${at(0.5)} ms  p95 ${at(0.95)} ms  p99 ${at(0.99)} ms${failures ? `  FAILURES ${failures}` : ""}`,
  );
}

async function run(system: RunningSystem, replicas: string): Promise<void> {
  const auth = await operatorHeaders(system);
  const json = { "content-type": "application/json", ...auth.bearer };
  const ids: number[] = [];
  const created = await load(`[${replicas}] POST /cheeses`, 300, 10, async (i) => {
    const response = await fetch(`${system.baseUrl}/cheeses`, {
      method: "POST",
      headers: json,
      body: JSON.stringify({
        name: `Bench ${replicas} ${i}`,
        pricePerKg: 10 + (i % 30),
        tags: [{ name: `t${i % 5}` }],
      }),
    });
    // Ids are sparse with several replicas (abandoned blocks): read back the ones made.
    ids.push(((await response.clone().json()) as { id: number }).id);
    return response;
  });
  report(created);
  report(
    await load(`[${replicas}] GET /cheeses/{id}`, 2000, 20, (i) =>
      fetch(`${system.baseUrl}/cheeses/${ids[i % ids.length]}`, { headers: auth.apiKey }),
    ),
  );
  report(
    await load(`[${replicas}] GET /cheeses?limit=20&sort=-createdAt`, 1000, 20, () =>
      fetch(`${system.baseUrl}/cheeses?limit=20&sort=-createdAt`, { headers: auth.apiKey }),
    ),
  );
  report(
    await load(`[${replicas}] GET /store/inventory`, 1000, 20, () =>
      fetch(`${system.baseUrl}/store/inventory`, { headers: auth.apiKey }),
    ),
  );
}

for (const replicas of ["1", "2"]) {
  const system = await startSystem({ env: { REPLICAS: replicas, LOG_LEVEL: "warn" } });
  try {
    await run(system, `replicas=${replicas}`);
  } finally {
    await system.stop();
  }
}
