import { containerImageUnavailableReason, KURRENTDB_IMAGE, startKurrentDbContainer } from "@cheese/testing";
import { GenericContainer, type StartedTestContainer, Wait } from "testcontainers";

export interface ProductionStack {
  /** The variables that point every service at the containers that started. */
  env: Record<string, string>;
  /** One line per production store that did not start, saying why (the embedded one serves). */
  skipped: string[];
  stop(): Promise<void>;
}

const host = (c: StartedTestContainer, port: number) => `${c.getHost()}:${c.getMappedPort(port)}`;

/** The production stores: each one's image, how to start it and the variables that reach it. */
export const productionStores = [
  {
    name: "KurrentDB",
    image: KURRENTDB_IMAGE,
    async start() {
      const { container, connectionString } = await startKurrentDbContainer();
      return { container, env: { EVENTSTORE_URL: connectionString } };
    },
  },
  {
    name: "MongoDB",
    image: "mongo:7",
    async start() {
      const container = await new GenericContainer(this.image)
        .withCommand(["mongod", "--replSet", "rs0", "--bind_ip_all"])
        .withExposedPorts(27017)
        .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
        .start();
      await container.exec([
        "mongosh",
        "--quiet",
        "--eval",
        "rs.initiate({_id: 'rs0', members: [{_id: 0, host: '127.0.0.1:27017'}]})",
      ]);
      const url = `mongodb://${host(container, 27017)}/?replicaSet=rs0&directConnection=true`;
      return { container, env: { MONGO_URL: url } };
    },
  },
  {
    name: "MinIO",
    image: "minio/minio:RELEASE.2025-04-22T22-12-26Z",
    async start() {
      const container = await new GenericContainer(this.image)
        .withCommand(["server", "/data"])
        .withEnvironment({ MINIO_ROOT_USER: "cheese", MINIO_ROOT_PASSWORD: "cheese-secret" })
        .withExposedPorts(9000)
        .withWaitStrategy(Wait.forHttp("/minio/health/ready", 9000))
        .start();
      const env = {
        S3_ENDPOINT: `http://${host(container, 9000)}`,
        S3_ACCESS_KEY: "cheese",
        S3_SECRET_KEY: "cheese-secret",
      };
      return { container, env };
    },
  },
];

/**
 * KurrentDB, MongoDB (a replica set of one) and MinIO in containers, the production
 * adapters' real counterparts: each one whose image can be had here. A store whose image cannot
 * (no Docker engine, or no registry to pull it from) is listed in `skipped` with the reason, and
 * the services keep the embedded adapter for it.
 */
export async function startProductionStack(): Promise<ProductionStack> {
  const started: StartedTestContainer[] = [];
  const env: Record<string, string> = {};
  const skipped: string[] = [];
  try {
    for (const store of productionStores) {
      const reason = await containerImageUnavailableReason(store.image);
      if (reason) {
        skipped.push(`${store.name} container skipped: ${reason}`);
        continue;
      }
      const { container, env: storeEnv } = await store.start();
      started.push(container);
      Object.assign(env, storeEnv);
    }
  } catch (error) {
    await Promise.all(started.map((c) => c.stop().catch(() => {})));
    throw error;
  }
  return {
    env,
    skipped,
    stop: async () => {
      await Promise.all(started.map((c) => c.stop()));
    },
  };
}
