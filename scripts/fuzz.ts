/**
 * `pnpm fuzz [--seed N] [--runs N] [--concurrency N]`: the fuzz suite's run (e2e/fuzz.test.ts) at
 * any length, against a system started as `pnpm start` runs it. Prints the seed first, so a
 * failure replays with the same `--seed` and `--runs`; exits 1 when anything broke the rules.
 */
import { parseArgs } from "node:util";
import { deadlineMs, describeReport, fuzz, startFuzzTarget } from "../e2e/support/fuzz.ts";

const { values } = parseArgs({
  options: {
    seed: { type: "string" },
    runs: { type: "string", default: "20000" },
    concurrency: { type: "string", default: "6" },
  },
});
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const runs = Number(values.runs);
const concurrency = Number(values.concurrency);
if (
  !Number.isInteger(seed) ||
  !Number.isInteger(runs) ||
  runs < 1 ||
  !Number.isInteger(concurrency) ||
  concurrency < 1
) {
  console.error("usage: pnpm fuzz [--seed <integer>] [--runs <count>] [--concurrency <count>]");
  process.exit(2);
}
console.log(`fuzz seed ${seed}, ${runs} requests (replay: pnpm fuzz --seed ${seed} --runs ${runs})`);
const { system, document, fixtures } = await startFuzzTarget();
let report: Awaited<ReturnType<typeof fuzz>>;
try {
  const step = Math.max(1, Math.floor(runs / 10));
  report = await fuzz({
    system,
    document,
    fixtures,
    seed,
    runs,
    deadlineMs,
    concurrency,
    onProgress: (sent) => {
      if (sent % step === 0) console.log(`  ${sent}/${runs}`);
    },
  });
} finally {
  await system.stop();
}
console.log(describeReport(report));
process.exit(report.findings.length === 0 ? 0 : 1);
