import { Client } from "minio";

/** Deletes a bucket and what it holds, behind the store's back (for the missing-bucket case). */
export async function removeBucket(
  endPoint: string,
  credentials: { accessKey: string; secretKey: string },
  bucket: string,
): Promise<void> {
  const url = new URL(endPoint);
  const admin = new Client({
    endPoint: url.hostname,
    port: Number(url.port),
    useSSL: url.protocol === "https:",
    ...credentials,
    pathStyle: true,
  });
  const names: string[] = [];
  for await (const item of admin.listObjectsV2(bucket, "", true)) if (item.name) names.push(item.name);
  if (names.length > 0) await admin.removeObjects(bucket, names);
  await admin.removeBucket(bucket);
}
