import { GenericContainer, type StartedTestContainer, Wait } from "testcontainers";

/**
 * The KurrentDB (formerly EventStoreDB) image the suites run, pinned: the same as compose and the
 * dev overlay run (`pnpm check:deploy` compares them).
 */
export const KURRENTDB_IMAGE = "docker.kurrent.io/kurrent-latest/kurrentdb:25.1.4";

/**
 * A throw-away single-node KurrentDB, in memory and without TLS, with compose's settings (no
 * projections: nothing here reads one); check containerImageUnavailableReason(KURRENTDB_IMAGE)
 * first. `connectionString` is a `kurrentdb://` one.
 */
export async function startKurrentDbContainer(): Promise<{
  container: StartedTestContainer;
  connectionString: string;
  stop(): Promise<void>;
}> {
  const container = await new GenericContainer(KURRENTDB_IMAGE)
    .withEnvironment({
      KURRENTDB_CLUSTER_SIZE: "1",
      KURRENTDB_RUN_PROJECTIONS: "None",
      KURRENTDB_INSECURE: "true",
      KURRENTDB_MEM_DB: "true",
    })
    .withExposedPorts(2113)
    .withWaitStrategy(Wait.forHttp("/health/live", 2113).forStatusCode(204))
    .withStartupTimeout(120_000)
    .start();
  return {
    container,
    connectionString: `kurrentdb://${container.getHost()}:${container.getMappedPort(2113)}?tls=false`,
    stop: async () => {
      await container.stop();
    },
  };
}
