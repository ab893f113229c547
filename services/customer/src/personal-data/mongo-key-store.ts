import { randomBytes } from "node:crypto";
import { Binary, MongoClient, MongoServerError } from "mongodb";
import type { KeyStore } from "./key-store.ts";

const KEY_BYTES = 32;

interface KeyDocument {
  _id: string;
  key: Binary;
}

/**
 * The production key store: a collection of its own in MongoDB (chosen when MONGO_URL is set),
 * shared by every customer replica on every host. `destroy` deletes the document; MongoDB may
 * keep the bytes in its oplog and backups for their retention window, so that window bounds
 * how long an erased customer's data stays recoverable by an operator (docs/identity.md).
 */
export async function createMongoKeyStore(options: {
  url: string;
  database: string;
}): Promise<KeyStore & { close(): Promise<void> }> {
  const client = await MongoClient.connect(options.url);
  const keys = client.db(options.database).collection<KeyDocument>("personal_data_keys");
  const read = async (id: string) => {
    const document = await keys.findOne({ _id: id });
    return document ? Buffer.from(document.key.buffer) : undefined;
  };

  return {
    async create(customerId) {
      const key = randomBytes(KEY_BYTES);
      await keys.insertOne({ _id: `customer-${customerId}`, key: new Binary(key) });
      return key;
    },
    get: (customerId) => read(`customer-${customerId}`),
    async destroy(customerId) {
      await keys.deleteOne({ _id: `customer-${customerId}` });
    },
    async secret(name) {
      const id = `secret-${name}`;
      try {
        // Created once; a replica racing to create it loses on the unique _id and reads the winner's.
        await keys.insertOne({ _id: id, key: new Binary(randomBytes(KEY_BYTES)) });
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
      }
      return (await read(id))!;
    },
    close: () => client.close(),
  };
}
