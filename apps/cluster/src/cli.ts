import { CONFIG_EXIT_CODE, ConfigError } from "@cheese/service-kit/launch";
import { clusterEnv, down, up } from "./cluster.ts";

/**
 * `pnpm cluster up [--json]`: three NATS nodes and two processes of every service, each on a host
 * of its own (a network namespace), behind the launcher's balancer on GATEWAY_PORT; returns once
 * `/readyz` is 200. `pnpm cluster down`: stops it and removes the hosts. `pnpm cluster faults
 * [--short]`: a cluster of its own under load while nodes and processes are killed, cut off and
 * slowed, then the checks (faults.ts). Root only: without root or `ip netns` it says so, exit 78.
 */
const [command, ...flags] = process.argv.slice(2);

async function main(): Promise<number> {
  switch (command) {
    case "up": {
      const cluster = await up(process.env);
      if (flags.includes("--json")) {
        console.log(JSON.stringify(cluster));
      } else {
        console.log(`cluster ready on ${cluster.url} (data in ${cluster.dataDir})`);
        for (const node of cluster.nats)
          console.log(`  ${node.name}  ${node.url}  netns ${node.netns}  pid ${node.pid}`);
        for (const service of cluster.services)
          console.log(`  ${service.name}#${service.replica}  netns ${service.netns}  pid ${service.pid}`);
        console.log("stop it with: pnpm cluster down");
      }
      return 0;
    }
    case "down":
      await down(clusterEnv(process.env).DATA_DIR as string);
      return 0;
    case "faults": {
      const { runFaults } = await import("./faults.ts");
      return (await runFaults({ short: flags.includes("--short"), env: process.env })) ? 0 : 1;
    }
    default:
      console.error("usage: pnpm cluster up [--json] | down | faults [--short]");
      return 64;
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`cluster: ${(error as Error).message}`);
    process.exit(error instanceof ConfigError ? CONFIG_EXIT_CODE : 1);
  },
);
