import { GenericContainer, type StartedTestContainer, Wait } from "testcontainers";

export interface ProductionStack {
  /** The variables that point every service at the containers. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * NATS (JetStream), EventStoreDB, MongoDB (a replica set of one) and MinIO in containers, the
 * production adapters' real counterparts. Needs a Docker engine.
 */
export async function startProductionStack(): Promise<ProductionStack> {
  const started: StartedTestContainer[] = [];
  try {
    const nats = await new GenericContainer("nats:2.10-alpine")
      .withCommand(["-js"])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start();
    started.push(nats);
    const eventstore = await new GenericContainer("eventstore/eventstore:24.10")
      .withEnvironment({
        EVENTSTORE_INSECURE: "true",
        EVENTSTORE_MEM_DB: "true",
        EVENTSTORE_RUN_PROJECTIONS: "All",
      })
      .withExposedPorts(2113)
      .withWaitStrategy(Wait.forHttp("/health/live", 2113).forStatusCode(204))
      .start();
    started.push(eventstore);
    const mongo = await new GenericContainer("mongo:7")
      .withCommand(["mongod", "--replSet", "rs0", "--bind_ip_all"])
      .withExposedPorts(27017)
      .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
      .start();
    started.push(mongo);
    await mongo.exec([
      "mongosh",
      "--quiet",
      "--eval",
      "rs.initiate({_id: 'rs0', members: [{_id: 0, host: '127.0.0.1:27017'}]})",
    ]);
    const minio = await new GenericContainer("minio/minio:RELEASE.2025-04-22T22-12-26Z")
      .withCommand(["server", "/data"])
      .withEnvironment({ MINIO_ROOT_USER: "cheese", MINIO_ROOT_PASSWORD: "cheese-secret" })
      .withExposedPorts(9000)
      .withWaitStrategy(Wait.forHttp("/minio/health/ready", 9000))
      .start();
    started.push(minio);
    const host = (c: StartedTestContainer, port: number) => `${c.getHost()}:${c.getMappedPort(port)}`;
    return {
      env: {
        NATS_URL: `nats://${host(nats, 4222)}`,
        EVENTSTORE_URL: `esdb://${host(eventstore, 2113)}?tls=false`,
        MONGO_URL: `mongodb://${host(mongo, 27017)}/?replicaSet=rs0&directConnection=true`,
        S3_ENDPOINT: `http://${host(minio, 9000)}`,
        S3_ACCESS_KEY: "cheese",
        S3_SECRET_KEY: "cheese-secret",
      },
      stop: async () => {
        await Promise.all(started.map((c) => c.stop()));
      },
    };
  } catch (error) {
    await Promise.all(started.map((c) => c.stop().catch(() => {})));
    throw error;
  }
}
