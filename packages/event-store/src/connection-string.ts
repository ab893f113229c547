/**
 * KurrentDB (formerly EventStoreDB) connection strings. KurrentDB's own clients and docs write
 * `kurrentdb://`; EventStoreDB's, and the `@eventstore/db-client` this adapter uses (same gRPC
 * protocol), only parse `esdb://`. Both are accepted, each with `+discover` (a cluster found by
 * gossip); the rest of the string (credentials, hosts, `?tls=…&tlsCAFile=…`) is the same in both.
 */
const SCHEMES: Record<string, string> = {
  kurrentdb: "esdb",
  "kurrentdb+discover": "esdb+discover",
  esdb: "esdb",
  "esdb+discover": "esdb+discover",
};

/** The schemes a connection string may start with, in words: "kurrentdb://, … or esdb+discover://". */
export const EVENT_STORE_SCHEMES = Object.keys(SCHEMES)
  .map((scheme) => `${scheme}://`)
  .join(", ")
  .replace(/, ([^,]*)$/, " or $1");

/**
 * The connection string as `@eventstore/db-client` parses it (`kurrentdb://` becomes `esdb://`),
 * or undefined when it starts with none of {@link EVENT_STORE_SCHEMES}.
 */
export function clientConnectionString(connectionString: string): string | undefined {
  const match = /^([a-z+]+):\/\//i.exec(connectionString.trim());
  const scheme = match && SCHEMES[match[1]!.toLowerCase()];
  if (!match || !scheme) return undefined;
  return `${scheme}://${connectionString.trim().slice(match[0].length)}`;
}
