import { spawnSync } from "node:child_process";
import { ConfigError } from "@cheese/service-kit/launch";
import { type Lock, lockHolder, takeLock } from "./data-dir.ts";

/**
 * Hosts on one machine, for `LAUNCH_HOSTS=netns` (`pnpm cluster`): each NATS node and each service
 * replica runs in a network namespace of its own, joined to the others by a veth pair on one
 * bridge in the launcher's namespace, with an address of a private test range. Traffic between
 * them crosses real interfaces, so a packet filter, `tc netem` or a packet delayer inside one
 * namespace cuts it off or slows it as a network would. Only addresses in that range are used;
 * nothing leaves the machine (no route out, no NAT).
 */

/** The bridge, in the launcher's namespace; it holds `.1` of the range. */
export const BRIDGE = "cheesebr0";
/** The test range: 10.213.0.0/24 (RFC 1918). Hosts get .10 upwards. */
const PREFIX = "10.213.0";
const FIRST_HOST = 10;
/** Namespaces this project makes are named so; `removeHosts` deletes every one of them. */
export const NAMESPACE_PREFIX = "cheese-";

export interface Host {
  /** The namespace, e.g. `cheese-nats-1`, `cheese-catalogue-2`. */
  netns: string;
  /** Its address on the bridge. */
  address: string;
  /** The command prefix that runs a program inside it. */
  exec: string[];
}

/** The bridge's own address, where processes in the namespaces reach the launcher's host. */
export const bridgeAddress = `${PREFIX}.1`;

/**
 * The machine has one test range, so one set of hosts at a time: the launcher that made them
 * holds this lock (data-dir.ts, the same mechanism as DATA_DIR's; it names its DATA_DIR), and no
 * other run makes or removes them while it lives. Removing them under a live launcher would send
 * its balancer's traffic for the range to the default route, off the machine.
 */
const OWNER_FILE = "/run/cheese-hosts.lock";
let ownLock: Lock | undefined;

export interface HostsOwner {
  pid: number;
  dataDir: string;
}

/** The live launcher whose hosts exist now, if any. */
export function hostsOwner(): HostsOwner | undefined {
  const holder = lockHolder(OWNER_FILE);
  return holder ? { pid: holder.pid, dataDir: String(holder.dataDir) } : undefined;
}

function run(command: string, args: string[], { tolerate = false } = {}): string {
  const done = spawnSync(command, args, { encoding: "utf8" });
  if (done.error) throw new Error(`${command} ${args.join(" ")}: ${done.error.message}`);
  if (done.status !== 0 && !tolerate) {
    throw new Error(`${command} ${args.join(" ")} failed: ${(done.stderr || done.stdout).trim()}`);
  }
  return done.stdout;
}

/**
 * Refuses, with a ConfigError (exit 78), where hosts cannot be made: not root, or no `ip netns`.
 * There is no fallback to one host: a cluster run on one network would test something else.
 */
export function assertHostsPossible(): void {
  if (process.getuid?.() !== 0) {
    throw new ConfigError(
      "LAUNCH_HOSTS=netns needs root: network namespaces, veth pairs and a bridge are made with `ip` (run as root)",
    );
  }
  const ip = spawnSync("ip", ["netns", "list"], { encoding: "utf8" });
  if (ip.error || ip.status !== 0) {
    throw new ConfigError(
      `LAUNCH_HOSTS=netns needs \`ip netns\` (iproute2): ${ip.error?.message ?? ip.stderr.trim()}`,
    );
  }
}

/** The namespaces of this project that exist now. */
export function existingNamespaces(): string[] {
  return run("ip", ["netns", "list"])
    .split("\n")
    .map((line) => line.split(" ")[0] ?? "")
    .filter((name) => name.startsWith(NAMESPACE_PREFIX));
}

/**
 * Makes the bridge and one namespace per name (`nats-1`, `gateway-2`, ...), each with its address,
 * loopback up and a route to the bridge. Whatever an earlier run left is removed first.
 */
export function makeHosts(names: readonly string[], dataDir: string): Map<string, Host> {
  if (!ownLock) {
    try {
      ownLock = takeLock(OWNER_FILE, "pnpm cluster up", { dataDir });
    } catch (error) {
      const holder = (error as { holder?: HostsOwner }).holder;
      if (!holder) throw error;
      throw new ConfigError(
        `the test hosts belong to a cluster running on DATA_DIR ${holder.dataDir} (launcher ${holder.pid}): one cluster at a time (pnpm cluster down)`,
      );
    }
  }
  clearHosts();
  run("ip", ["link", "add", BRIDGE, "type", "bridge"]);
  run("ip", ["addr", "add", `${bridgeAddress}/24`, "dev", BRIDGE]);
  run("ip", ["link", "set", BRIDGE, "up"]);
  // A FORWARD policy of DROP (Docker sets one) would drop bridged traffic when br_netfilter is
  // loaded: let the bridge's own traffic through, and only that.
  run("iptables", ["-I", "FORWARD", "-i", BRIDGE, "-o", BRIDGE, "-j", "ACCEPT"], { tolerate: true });
  const hosts = new Map<string, Host>();
  names.forEach((name, index) => {
    const netns = `${NAMESPACE_PREFIX}${name}`;
    const address = `${PREFIX}.${FIRST_HOST + index}`;
    const outside = `cheeseh${index}`;
    const inside = `cheesen${index}`;
    run("ip", ["netns", "add", netns]);
    run("ip", ["link", "add", outside, "type", "veth", "peer", "name", inside]);
    run("ip", ["link", "set", outside, "master", BRIDGE]);
    run("ip", ["link", "set", outside, "up"]);
    run("ip", ["link", "set", inside, "netns", netns]);
    const inNs = (...args: string[]) => run("ip", ["netns", "exec", netns, ...args]);
    inNs("ip", "link", "set", inside, "name", "eth0");
    inNs("ip", "addr", "add", `${address}/24`, "dev", "eth0");
    inNs("ip", "link", "set", "eth0", "up");
    inNs("ip", "link", "set", "lo", "up");
    hosts.set(name, { netns, address, exec: ["ip", "netns", "exec", netns] });
  });
  return hosts;
}

/**
 * Deletes every namespace of this project (their veth pairs go with them) and the bridge. Only
 * their launcher, or anyone once it is gone (see `OWNER_FILE`).
 */
export function removeHosts(): void {
  const owner = hostsOwner();
  if (owner && owner.pid !== process.pid) {
    throw new ConfigError(
      `the test hosts belong to a cluster running on DATA_DIR ${owner.dataDir} (launcher ${owner.pid}): stop that one`,
    );
  }
  clearHosts();
  ownLock?.release();
  ownLock = undefined;
}

/** Deletes the namespaces, the bridge and the bridge's packet filter rule, whoever made them. */
function clearHosts(): void {
  for (const netns of existingNamespaces()) run("ip", ["netns", "delete", netns], { tolerate: true });
  run("ip", ["link", "delete", BRIDGE], { tolerate: true });
  // Every copy of the rule, however many runs added it.
  while (spawnSync("iptables", ["-D", "FORWARD", "-i", BRIDGE, "-o", BRIDGE, "-j", "ACCEPT"]).status === 0);
}

/** Runs `command` inside a namespace (fault injection: a packet filter). */
export function inNamespace(netns: string, command: string[]): void {
  run("ip", ["netns", "exec", netns, ...command]);
}
