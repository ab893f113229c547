import { Cheese } from "@cheese/contracts";
import { checkedJson } from "@cheese/messaging";
import type { DeepReadonly } from "@cheese/read-models";
import type { CheeseDocument } from "../projections/cheeses.ts";

/**
 * A cheese's API JSON, checked against the `Cheese` schema once per version and kept, so that a
 * page joins kept texts instead of checking and encoding every cheese on every read
 * (docs/architecture.md, "The reply envelope"), and a version just written is checked once for
 * its reply and its integration event (the relay's `cheese.added`, `cheese.updated`, ...), in
 * whichever order they come. Keyed by cheese id and stream revision: the cheese an event of that
 * revision carries, which the read model's document of that revision holds; a document of
 * another revision never gets a kept text, so a new version is never answered with the old one.
 * At most `capacity` texts are kept; beyond, the oldest made goes.
 */
export class CheckedCheeses {
  private readonly texts = new Map<number, { revision: number; text: string }>();

  constructor(private readonly capacity = 10_000) {}

  textOf(document: DeepReadonly<CheeseDocument>): string {
    return this.text(document.cheese as Cheese, document._revision as number);
  }

  /** The checked JSON of `cheese` as its stream's revision `revision` holds it. */
  text(cheese: DeepReadonly<Cheese>, revision: number): string {
    const kept = this.texts.get(cheese.id);
    if (kept?.revision === revision) return kept.text;
    // zod only reads the value: the read model's own document is checked and encoded, not copied.
    const text = checkedJson(Cheese, cheese as Cheese);
    if (kept) this.texts.delete(cheese.id);
    else if (this.texts.size >= this.capacity) {
      const oldest = this.texts.keys().next();
      if (!oldest.done) this.texts.delete(oldest.value);
    }
    this.texts.set(cheese.id, { revision, text });
    return text;
  }

  get size(): number {
    return this.texts.size;
  }
}
