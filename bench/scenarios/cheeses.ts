/**
 * The catalogue's request paths: read one, list a filtered and sorted page, create, update.
 * Fixtures: 200 cheeses (40 with --quick) added through the API, in 4 categories, 3 statuses and
 * 5 tags; and 100,000 cheeses and 100,000 orders (2,000 of each with --quick) written into the
 * catalogue's and the ordering service's stores, then the system started once, left to settle
 * (the outbox relays publish the history) and stopped, so that its measured start is a restart
 * (from the read models' snapshots) and the list page is measured where a scan and sort per page
 * would show. The baseline holds the same cheeses exactly as the API returns them.
 */

import {
  historicCheese,
  writeCatalogueHistory,
  writeOrderingHistory,
} from "@cheese/service-testing/histories";
import { settle } from "../harness/compare.ts";
import type { BenchOptions, Doc, Fixture, FixtureData, HttpScenario, Targets } from "../harness/scenario.ts";
import { startSystem } from "../harness/system.ts";

const statuses = ["available", "pending", "sold"] as const;

/** The body of a new cheese; `n` makes its name unique. */
export function newCheese(n: number, prefix: string) {
  return {
    name: `${prefix} ${n}`,
    category: { name: `Category ${n % 4}` },
    tags: [{ name: `t${n % 5}` }, { name: `u${n % 3}` }],
    status: statuses[n % 3],
    origin: "FR",
    pricePerKg: 10 + (n % 30),
    ageMonths: n % 24,
    organic: n % 2 === 0,
  };
}

/** How many documents a fixture holds: in a full run, and with --quick. */
interface Size {
  full: number;
  quick: number;
}

const countOf = (size: Size, options: BenchOptions) => (options.quick ? size.quick : size.full);

/**
 * A name that says how many documents were measured: with --quick the smaller number, followed
 * by the full run's, so that a term naming the full run's (`--only=100,000`) still selects it.
 */
function sizedName(size: Size, options: BenchOptions, name: (count: string) => string): string {
  const number = (n: number) => n.toLocaleString("en-US");
  return options.quick
    ? `${name(number(size.quick))} (--quick; ${number(size.full)} in a full run)`
    : name(number(size.full));
}

const FEW: Size = { full: 200, quick: 40 };
const MANY: Size = { full: 100_000, quick: 2_000 };

const twoHundredCheeses = (options: BenchOptions): Fixture => ({
  name: sizedName(FEW, options, (n) => `${n} cheeses`),
  async seed(system, options) {
    const count = countOf(FEW, options);
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < count) {
          const n = next++;
          const response = await system.fetch("/v2/cheeses", { body: newCheese(n, "Seeded") });
          if (response.status !== 201)
            throw new Error(`seeding: ${response.status} ${await response.text()}`);
        }
      }),
    );
    // What the API answers, page by page, is what the baseline serves.
    const cheeses: Doc[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const response = await system.fetch(`/v2/cheeses?${query}`);
      const page = (await response.json()) as { items: Doc[]; nextCursor: string | null };
      cheeses.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    return { collections: { cheeses }, headers: system.headers };
  },
});

const manyCheeses = (options: BenchOptions): Fixture => ({
  name: sizedName(MANY, options, (n) => `${n} cheeses and orders`),
  /**
   * The histories, and a first start on them that is left to publish them (as a running system
   * would have) and then stopped cleanly: the measured start is a restart.
   */
  async prepare(dataDir, options) {
    const count = countOf(MANY, options);
    await writeCatalogueHistory(dataDir, count);
    await writeOrderingHistory(dataDir, count);
    const first = await startSystem({
      kind: options.system,
      dataDir,
      replicas: options.replicas,
      readyTimeoutMs: 900_000,
    });
    await settle(first, 900_000);
    await first.stop();
  },
  async seed(system, options) {
    const count = countOf(MANY, options);
    const start = Date.parse("2026-01-01T00:00:00.000Z");
    const cheeses: Doc[] = [];
    for (let n = 1; n <= count; n++)
      cheeses.push(historicCheese(n, new Date(start + n * 1000).toISOString()));
    // The baseline serves what the API would: checked on the first and the last cheese.
    for (const doc of [cheeses[0]!, cheeses.at(-1)!]) {
      const response = await system.fetch(`/v2/cheeses/${doc.id}`);
      const served = await response.text();
      if (served !== JSON.stringify(doc))
        throw new Error(`cheese ${doc.id} is served as ${served}, not as ${JSON.stringify(doc)}`);
    }
    // And the orders are there: the last one, approved.
    const order = await system.fetch(`/v2/store/order/${count}`);
    const served = (await order.json()) as { status?: string };
    if (order.status !== 200 || served.status !== "approved")
      throw new Error(`order ${count} is served as ${order.status} ${JSON.stringify(served)}`);
    return { collections: { cheeses }, headers: system.headers };
  },
});

const LIST_PAGE = "/v2/cheeses?status=available&sort=-createdAt&limit=20";

const cheeseAt = (data: FixtureData, i: number) =>
  data.collections.cheeses![i % data.collections.cheeses!.length]!;

/** Names unique across runs of the same system (the create scenario runs several windows). */
const runTag = Date.now().toString(36);

/**
 * The targets of the system `options` names: on a single host, ratios to the baseline and p99s;
 * in a cluster, CPU per answer across every process (the three nats-servers included).
 */
const targetsOn = (options: BenchOptions, single: Targets, cluster: Targets): Targets =>
  options.system === "cluster" ? cluster : single;

/**
 * The catalogue's scenarios, named for the data `options` gives them. A cluster runs those on
 * the 200 cheeses (the 100,000 fixture measures the read models' indexes, which a cluster does
 * not change).
 */
export function cheeseScenarios(options: BenchOptions): HttpScenario[] {
  const few = twoHundredCheeses(options);
  const many = manyCheeses(options);
  const scenarios: HttpScenario[] = [
    {
      kind: "http",
      name: "GET /v2/cheeses/{id}",
      fixture: few,
      request: (data, i) => ({
        method: "GET",
        path: `/v2/cheeses/${cheeseAt(data, i).id}`,
        headers: data.headers,
      }),
      targets: targetsOn(options, { ratio: 0.35, p99Ms: 20 }, { cpuMs: 0.15 }),
    },
    {
      kind: "http",
      name: `GET ${LIST_PAGE}`,
      fixture: few,
      request: (data) => ({ method: "GET", path: LIST_PAGE, headers: data.headers }),
      targets: targetsOn(options, { ratio: 0.25 }, { cpuMs: 0.18 }),
    },
    {
      kind: "http",
      name: "POST /v2/cheeses",
      fixture: few,
      request: (data, i) => ({
        method: "POST",
        path: "/v2/cheeses",
        body: JSON.stringify(newCheese(i, `Bench ${runTag}`)),
        headers: data.headers,
      }),
      targets: targetsOn(options, { ratio: 0.12, p99Ms: 80 }, { cpuMs: 0.8 }),
    },
    {
      kind: "http",
      name: "POST /v2/cheeses/{id} (partial update)",
      fixture: few,
      request: (data, i) => ({
        method: "POST",
        path: `/v2/cheeses/${cheeseAt(data, i).id}`,
        body: JSON.stringify({ pricePerKg: 10 + (i % 50) }),
        headers: data.headers,
      }),
    },
    {
      kind: "http",
      name: sizedName(MANY, options, (n) => `GET ${LIST_PAGE} among ${n}`),
      fixture: many,
      request: (data) => ({ method: "GET", path: LIST_PAGE, headers: data.headers }),
      targets: { ratio: 0.25, p99Ms: 30 },
    },
  ];
  return options.system === "cluster" ? scenarios.filter((s) => s.fixture === few) : scenarios;
}
