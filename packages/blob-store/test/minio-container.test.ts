import { randomBytes } from "node:crypto";
import { containerImageUnavailableReason } from "@cheese/testing";
import { GenericContainer, type StartedTestContainer, Wait } from "testcontainers";
import { afterAll, beforeAll, describe, it } from "vitest";
import { createMinioBlobStore } from "../src/minio.ts";
import { blobStoreContract } from "./contract.ts";
import { removeBucket } from "./minio-admin.ts";

// The blob-store contract against a real MinIO, the image compose runs, where Docker can have it.
const IMAGE = "minio/minio:RELEASE.2025-04-22T22-12-26Z";
const credentials = { accessKey: "cheese-test", secretKey: "cheese-test-secret" };

const reason = await containerImageUnavailableReason(IMAGE);
if (reason) console.warn(`MinIO contract suite skipped: ${reason}`);

describe.skipIf(reason !== undefined)(`MinIO blob store${reason ? ` (skipped: ${reason})` : ""}`, () => {
  if (reason) {
    it("needs MinIO in a container", () => {});
    return;
  }
  let container: StartedTestContainer;
  let endPoint: string;
  beforeAll(async () => {
    container = await new GenericContainer(IMAGE)
      .withCommand(["server", "/data"])
      .withEnvironment({ MINIO_ROOT_USER: credentials.accessKey, MINIO_ROOT_PASSWORD: credentials.secretKey })
      .withExposedPorts(9000)
      .withWaitStrategy(Wait.forHttp("/minio/health/ready", 9000))
      .start();
    endPoint = `http://${container.getHost()}:${container.getMappedPort(9000)}`;
  }, 180_000);
  afterAll(async () => {
    await container?.stop();
  });

  blobStoreContract("minio (a real MinIO)", async () => {
    const bucket = `blobs-${randomBytes(4).toString("hex")}`;
    const store = await createMinioBlobStore({ endPoint, ...credentials, bucket });
    return {
      store,
      cleanup: async () => {},
      removeBucket: () => removeBucket(endPoint, credentials, bucket),
    };
  });
});
