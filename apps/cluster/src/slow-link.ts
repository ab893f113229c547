import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, renameSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError } from "@cheese/service-kit/launch";

/**
 * A slow, lossy link for `pnpm cluster faults` (c): 200 ms of delay and 5 % loss on one host's
 * interface, by one of two mechanisms, whichever the kernel allows:
 *
 * - `tc netem` (a qdisc on the interface, CONFIG_NET_SCH_NETEM): what the host sends is delayed
 *   200 ms and 5 % of it lost, so a round trip takes 200 ms longer.
 * - Without netem (the machines this project is developed on), the NFQUEUE delayer
 *   (apps/cluster/delayer/nfq-delay.c, built here with gcc against Debian's libnetfilter-queue):
 *   the packet filter in the host's namespace queues every packet the host sends out of the
 *   interface, and the delayer, in that namespace, lets each through 200 ms later, in order, or
 *   drops it (5 %): what netem does, so a round trip takes 200 ms longer either way. The queue has
 *   no bypass: should the delayer die, the link stops rather than turn fast unnoticed, and the heal
 *   says it died.
 */

export const DELAY_MS = 200;
export const LOSS_PERCENT = 5;

export type SlowLinkMechanism = { kind: "netem" } | { kind: "nfqueue"; delayer: string };

export interface SlowLink {
  /** What was done, for the run's output. */
  what: string;
  /** Removes it; resolves with what it did (for the delayer, how many packets it held and dropped). */
  heal(): Promise<string>;
}

const source = fileURLToPath(new URL("../delayer/nfq-delay.c", import.meta.url));
/** Packets of the slowed host go to this NFQUEUE queue (queues are per network namespace). */
const QUEUE = "0";

function run(command: string, args: string[]): { ok: boolean; output: string } {
  const done = spawnSync(command, args, { encoding: "utf8" });
  return {
    ok: !done.error && done.status === 0,
    output: (done.error?.message ?? `${done.stderr}${done.stdout}`).trim(),
  };
}

/**
 * Which mechanism this machine has, checked before anything starts (root is needed: a network
 * namespace of its own, `unshare --net`, is where each is tried). Builds the delayer when netem is
 * missing. Throws a ConfigError saying what to install when neither works.
 */
export function slowLinkMechanism(): SlowLinkMechanism {
  if (run("unshare", ["--net", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]).ok)
    return { kind: "netem" };
  const delayer = buildDelayer();
  const bound = run("unshare", ["--net", delayer, "--check", QUEUE]);
  const queued = run("unshare", ["--net", "iptables", "-A", "OUTPUT", "-j", "NFQUEUE", "--queue-num", QUEUE]);
  if (!bound.ok || !queued.ok)
    throw new ConfigError(
      `this kernel has no netem (CONFIG_NET_SCH_NETEM) for the slow link, and no NFQUEUE either (CONFIG_NETFILTER_NETLINK_QUEUE, CONFIG_NETFILTER_XT_TARGET_NFQUEUE): ${bound.output || queued.output}`,
    );
  return { kind: "nfqueue", delayer };
}

/** Compiles the delayer once per version of its source (into the temporary directory). */
function buildDelayer(): string {
  const text = readFileSync(source);
  const binary = join(
    tmpdir(),
    `cheese-nfq-delay-${createHash("sha256").update(text).digest("hex").slice(0, 12)}`,
  );
  if (existsSync(binary)) return binary;
  const partial = `${binary}.${process.pid}`;
  const built = run("gcc", ["-O2", "-Wall", "-o", partial, source, "-lnetfilter_queue", "-lnfnetlink"]);
  if (!built.ok) {
    const missing = /libnetfilter_queue\.h|lnetfilter_queue|lnfnetlink/.test(built.output)
      ? "Debian's libnetfilter-queue-dev (apt-get install libnetfilter-queue-dev)"
      : /ENOENT/.test(built.output)
        ? "gcc (apt-get install gcc libc6-dev)"
        : "gcc and Debian's libnetfilter-queue-dev";
    throw new ConfigError(
      `this kernel has no netem (CONFIG_NET_SCH_NETEM), so the slow link is the NFQUEUE delayer (${source}), which needs ${missing}: ${built.output.split("\n")[0]}`,
    );
  }
  renameSync(partial, binary);
  return binary;
}

/** Makes `device` in the namespace `netns` slow and lossy; heal() puts it back. */
export async function slowLink(
  netns: string,
  device: string,
  mechanism: SlowLinkMechanism,
): Promise<SlowLink> {
  const inNs = (...command: string[]) => {
    const done = run("ip", ["netns", "exec", netns, ...command]);
    if (!done.ok) throw new Error(`${command.join(" ")} in ${netns}: ${done.output}`);
  };
  if (mechanism.kind === "netem") {
    const qdisc = (verb: string, ...args: string[]) =>
      inNs("tc", "qdisc", verb, "dev", device, "root", ...args);
    qdisc("add", "netem", "delay", `${DELAY_MS}ms`, "loss", `${LOSS_PERCENT}%`);
    return {
      what: `tc netem: ${DELAY_MS} ms delay and ${LOSS_PERCENT} % loss on what it sends`,
      heal: async () => {
        qdisc("del");
        return "netem removed";
      },
    };
  }
  const delayer = spawn(
    "ip",
    ["netns", "exec", netns, mechanism.delayer, QUEUE, String(DELAY_MS), String(LOSS_PERCENT)],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const output = collect(delayer);
  // Not left holding the link's packets should this process end before heal().
  const stopOnExit = () => delayer.kill("SIGKILL");
  process.once("exit", stopOnExit);
  await untilReady(delayer, output).catch((error: unknown) => {
    process.off("exit", stopOnExit);
    throw error;
  });
  const rules = (verb: "-I" | "-D") => {
    inNs("iptables", verb, "OUTPUT", "-o", device, "-j", "NFQUEUE", "--queue-num", QUEUE);
  };
  try {
    rules("-I");
  } catch (error) {
    process.off("exit", stopOnExit);
    delayer.kill("SIGKILL");
    throw error;
  }
  return {
    what: `NFQUEUE delayer (no netem in this kernel): each packet it sends held ${DELAY_MS} ms, ${LOSS_PERCENT} % dropped`,
    heal: async () => {
      rules("-D");
      process.off("exit", stopOnExit);
      const diedEarly = delayer.exitCode !== null || delayer.signalCode !== null;
      if (!diedEarly) delayer.kill("SIGTERM");
      const code = await new Promise<number | null>((resolve) =>
        delayer.exitCode !== null || delayer.signalCode !== null
          ? resolve(delayer.exitCode)
          : delayer.once("exit", (exitCode) => resolve(exitCode)),
      );
      if (diedEarly || code !== 0)
        throw new Error(
          `the delayer in ${netns} ${diedEarly ? "died during the fault" : `exited ${code}`}: ${output.text}`,
        );
      return `delayer ${output.text.split("\n").filter(Boolean).pop() ?? ""}`;
    },
  };
}

function collect(child: ChildProcess): { text: string } {
  const output = { text: "" };
  const add = (chunk: Buffer) => {
    output.text += chunk.toString();
  };
  child.stdout?.on("data", add);
  child.stderr?.on("data", add);
  return output;
}

/** Resolves once the delayer has bound its queue (it prints `ready`); rejects if it exits first. */
function untilReady(delayer: ChildProcess, output: { text: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      delayer.kill("SIGKILL");
      reject(new Error(`the delayer did not start within 5 s: ${output.text}`));
    }, 5_000);
    const onData = () => {
      if (!/^ready$/m.test(output.text)) return;
      clearTimeout(timer);
      delayer.stdout?.off("data", onData);
      delayer.off("exit", onExit);
      resolve();
    };
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`the delayer exited (${code}) before it was ready: ${output.text}`));
    };
    delayer.stdout?.on("data", onData);
    delayer.once("exit", onExit);
  });
}
