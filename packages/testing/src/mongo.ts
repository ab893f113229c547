import { GenericContainer, Wait } from "testcontainers";

export const MONGO_IMAGE = "mongo:7";

/** A throw-away MongoDB (a single node, no auth); check containerImageUnavailableReason(MONGO_IMAGE) first. */
export async function startMongoContainer(): Promise<{ url: string; stop(): Promise<void> }> {
  const container = await new GenericContainer(MONGO_IMAGE)
    .withExposedPorts(27017)
    .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
    .start();
  return {
    url: `mongodb://${container.getHost()}:${container.getMappedPort(27017)}/?directConnection=true`,
    stop: async () => {
      await container.stop();
    },
  };
}
