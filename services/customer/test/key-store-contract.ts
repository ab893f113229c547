import { describe, expect, it } from "vitest";
import type { KeyStore } from "../src/personal-data/key-store.ts";

/** What every key store must do, whatever keeps the keys. */
export function keyStoreContract(
  name: string,
  open: () => Promise<{ store: KeyStore; cleanup(): Promise<void> }>,
) {
  describe(`key store contract: ${name}`, () => {
    const withStore = async (run: (store: KeyStore) => Promise<void>) => {
      const { store, cleanup } = await open();
      try {
        await run(store);
      } finally {
        await cleanup();
      }
    };

    it("creates a 256-bit key per customer and reads the same key back", () =>
      withStore(async (store) => {
        const key = await store.create(1);
        expect(key).toHaveLength(32);
        expect(await store.get(1)).toEqual(key);
        expect(await store.create(2)).not.toEqual(key);
      }));

    it("refuses to replace a customer's key", () =>
      withStore(async (store) => {
        const key = await store.create(3);
        await expect(store.create(3)).rejects.toThrow();
        expect(await store.get(3)).toEqual(key);
      }));

    it("forgets a destroyed key for good, and destroying twice is fine", () =>
      withStore(async (store) => {
        await store.create(4);
        await store.destroy(4);
        expect(await store.get(4)).toBeUndefined();
        await store.destroy(4);
        expect(await store.get(99)).toBeUndefined();
      }));

    it("creates a named secret once and gives everyone the same one", () =>
      withStore(async (store) => {
        const [a, b] = await Promise.all([store.secret("pepper"), store.secret("pepper")]);
        expect(a).toEqual(b);
        expect(await store.secret("pepper")).toEqual(a);
        expect(await store.secret("other")).not.toEqual(a);
      }));
  });
}
