/**
 * What a cluster's nats-servers carried over a measured window, read from their own counters on
 * the monitoring port: `/varz` (messages into each server), `/routez` (the part of them
 * that crossed to another server), `/connz` (each client connection's, summed by its name: the
 * service, both replicas together) and `/jsz` (each stream's last sequence: what was stored).
 * Divided by the window's answers, orders or deliveries, it says how many messages each costs
 * and whose they are: the servers' CPU follows the messages they handle.
 */

export interface NatsTraffic {
  /** Messages into every server together; `routesIn`: those of them that came over a route. */
  servers: { in: number; routesIn: number };
  /** Per client connection name: messages it sent (the servers' in) and received (their out). */
  clients: Record<string, { sent: number; received: number }>;
  /** Per stream: its last sequence, the highest any server reports. */
  streams: Record<string, number>;
}

interface Varz {
  in_msgs: number;
}
interface Routez {
  routes?: { in_msgs: number }[];
}
interface Connz {
  connections?: { name?: string; in_msgs: number; out_msgs: number }[];
}
interface Jsz {
  account_details?: { stream_detail?: { name: string; state: { last_seq: number } }[] }[];
}

/**
 * Reads every server's counters. A connection that closed during the window takes its counts
 * with it, so clients connected throughout are what this counts (the services' connections are).
 * A server's endpoints are read one after another, not at one instant: under traffic a message
 * may be counted over a route and not yet into its server, a few messages against a window's
 * thousands.
 */
export async function readNatsTraffic(monitors: readonly string[]): Promise<NatsTraffic> {
  const traffic: NatsTraffic = { servers: { in: 0, routesIn: 0 }, clients: {}, streams: {} };
  await Promise.all(
    monitors.map(async (monitor) => {
      const get = async <T>(path: string): Promise<T> => {
        const response = await fetch(`${monitor}${path}`, { signal: AbortSignal.timeout(5_000) });
        if (!response.ok) throw new Error(`${monitor}${path}: ${response.status}`);
        return (await response.json()) as T;
      };
      const [varz, routez, connz, jsz] = await Promise.all([
        get<Varz>("/varz"),
        get<Routez>("/routez"),
        get<Connz>("/connz?limit=4096"),
        get<Jsz>("/jsz?accounts=true&streams=true"),
      ]);
      traffic.servers.in += varz.in_msgs;
      for (const route of routez.routes ?? []) traffic.servers.routesIn += route.in_msgs;
      for (const connection of connz.connections ?? []) {
        const name = connection.name || "(unnamed)";
        const client = traffic.clients[name] ?? { sent: 0, received: 0 };
        client.sent += connection.in_msgs;
        client.received += connection.out_msgs;
        traffic.clients[name] = client;
      }
      for (const account of jsz.account_details ?? [])
        for (const stream of account.stream_detail ?? [])
          traffic.streams[stream.name] = Math.max(traffic.streams[stream.name] ?? 0, stream.state.last_seq);
    }),
  );
  return traffic;
}

/**
 * The traffic between two readings per unit (an answer, an order), in words: the servers' messages
 * in (of them over the routes), each client's sent / received, each stream's stored; clients and
 * streams under 0.01 per unit left out.
 */
export function trafficPerUnit(before: NatsTraffic, after: NatsTraffic, units: number): string {
  const per = (n: number) => (units > 0 ? n / units : Number.NaN);
  const fixed = (n: number) => n.toFixed(2);
  const clients = Object.entries(after.clients)
    .map(([name, c]) => {
      const b = before.clients[name] ?? { sent: 0, received: 0 };
      return [name, per(c.sent - b.sent), per(c.received - b.received)] as const;
    })
    .filter(([, sent, received]) => sent + received >= 0.01)
    .sort((a, b) => b[1] + b[2] - (a[1] + a[2]));
  const streams = Object.entries(after.streams)
    .map(([name, seq]) => [name, per(seq - (before.streams[name] ?? 0))] as const)
    .filter(([, stored]) => stored >= 0.01)
    .sort((a, b) => b[1] - a[1]);
  const serversIn = per(after.servers.in - before.servers.in);
  const routesIn = per(after.servers.routesIn - before.servers.routesIn);
  return [
    `servers in ${fixed(serversIn)} (routes ${fixed(routesIn)})`,
    `clients sent / received: ${clients.map(([name, s, r]) => `${name} ${fixed(s)} / ${fixed(r)}`).join(", ")}`,
    `stored: ${streams.map(([name, n]) => `${name} ${fixed(n)}`).join(", ") || "none"}`,
  ].join("; ");
}
