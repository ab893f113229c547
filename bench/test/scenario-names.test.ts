import { describe, expect, it } from "vitest";
import type { BenchOptions, Scenario } from "../harness/scenario.ts";
import { selection } from "../harness/select.ts";
import { scenarios } from "../scenarios/index.ts";

const options = (quick: boolean, system: BenchOptions["system"] = "single"): BenchOptions => ({
  system,
  quick,
  connections: 32,
  warmupSeconds: 1,
  seconds: 2,
  rounds: 1,
  replicas: 1,
  oneRegistrationRate: quick ? 30 : 300,
  root: "/nowhere", // named only: these tests run no scenario
  keep: false,
});

const namesOf = (all: Scenario[]) =>
  all.flatMap((s) => (s.kind === "http" ? [s.name, s.fixture.name] : [s.name]));

/** What `pnpm bench` prints as a scenario's or a fixture's name is what it measured. */
describe("bench scenario names", () => {
  const list = "GET /v2/cheeses?status=available&sort=-createdAt&limit=20";

  it("name the data a full run measures", () => {
    const all = scenarios(options(false));
    const large = all.find((s) => s.kind === "http" && s.name === `${list} among 100,000`);
    expect(large?.kind === "http" && large.fixture.name).toBe("100,000 cheeses and orders");
    const small = all.find((s) => s.kind === "http" && s.name === list);
    expect(small?.kind === "http" && small.fixture.name).toBe("200 cheeses");
  });

  it("name the smaller data of --quick, and the full run's after it", () => {
    const names = namesOf(scenarios(options(true)));
    expect(names).toContain(`${list} among 2,000 (--quick; 100,000 in a full run)`);
    expect(names).toContain("2,000 cheeses and orders (--quick; 100,000 in a full run)");
    expect(names).toContain("40 cheeses (--quick; 200 in a full run)");
    expect(names.filter((name) => /among 100,000$|^100,000 cheeses|^200 cheeses/.test(name))).toEqual([]);
  });

  it("name the one-registration measurement for the rate it runs (--rate)", () => {
    const names = (rate: number, quick = false) =>
      namesOf(scenarios({ ...options(quick), oneRegistrationRate: rate })).filter((name) =>
        name.startsWith("one registration"),
      );
    expect(names(300)).toEqual(["one registration at 300 orders/s"]);
    expect(names(75)).toEqual(["one registration at 75 orders/s"]);
    expect(names(50, true)).toEqual(["one registration at 50 orders/s (--quick; 300 in a full run)"]);
    // `--only=one registration` selects it whatever its rate.
    const all = scenarios({ ...options(false), oneRegistrationRate: 75 });
    const wanted = selection("one registration", namesOf(all));
    expect(all.filter((s) => s.kind === "measurement" && wanted(s.name)).map((s) => s.name)).toEqual([
      "one registration at 75 orders/s",
    ]);
  });

  it.each([false, true])("--only=100,000 selects the list among the large fixture (quick: %s)", (quick) => {
    const all = scenarios(options(quick));
    const wanted = selection("100,000", namesOf(all));
    const selected = all.filter((s) => (s.kind === "http" ? wanted(s.name, s.fixture.name) : wanted(s.name)));
    expect(selected.map((s) => s.name)).toEqual([
      quick ? `${list} among 2,000 (--quick; 100,000 in a full run)` : `${list} among 100,000`,
    ]);
    // A whole name selects that scenario alone, not the one whose name it starts.
    const page = selection(list, namesOf(all));
    expect(all.filter((s) => s.kind === "http" && page(s.name, s.fixture.name)).map((s) => s.name)).toEqual([
      list,
    ]);
  });
});

/** `pnpm bench --cluster` runs the same scenarios, judged by the cluster's targets. */
describe("bench scenarios on the cluster", () => {
  it("are the catalogue's requests on 200 cheeses and the webhook measurements, not the single host's stores", () => {
    expect(scenarios(options(false, "cluster")).map((s) => s.name)).toEqual([
      "GET /v2/cheeses/{id}",
      "GET /v2/cheeses?status=available&sort=-createdAt&limit=20",
      "POST /v2/cheeses",
      "POST /v2/cheeses/{id} (partial update)",
      "order placed → order.placed webhook",
      "one registration at 300 orders/s",
      "webhook deliveries per second",
    ]);
  });

  it("hold get, list page and create to CPU per answer across every process", () => {
    const targets = Object.fromEntries(
      scenarios(options(false, "cluster")).flatMap((s) => (s.kind === "http" ? [[s.name, s.targets]] : [])),
    );
    expect(targets["GET /v2/cheeses/{id}"]).toEqual({ cpuMs: 0.15 });
    expect(targets["GET /v2/cheeses?status=available&sort=-createdAt&limit=20"]).toEqual({ cpuMs: 0.18 });
    expect(targets["POST /v2/cheeses"]).toEqual({ cpuMs: 0.8 });
  });

  it.each([false, true])(
    "--only=deliveries selects the deliveries measurement alone (quick: %s)",
    (quick) => {
      const all = scenarios(options(quick));
      const wanted = selection("deliveries", namesOf(all));
      expect(
        all
          .filter((s) => (s.kind === "http" ? wanted(s.name, s.fixture.name) : wanted(s.name)))
          .map((s) => s.name),
      ).toEqual(["webhook deliveries per second"]);
    },
  );
});
