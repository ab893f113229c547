import { Cheese } from "@cheese/contracts";
import { checkedJson } from "@cheese/messaging";
import type { DeepReadonly } from "@cheese/read-models";
import type { CheeseDocument } from "../projections/cheeses.ts";

/**
 * A cheese's API JSON, checked against the `Cheese` schema once per version of its read-model
 * document and kept, so that a page joins kept texts instead of checking and encoding every
 * cheese on every read (docs/architecture.md, "The reply envelope"). Keyed by cheese id and
 * stream revision: a document of another revision never gets a kept text, so a new version is
 * never answered with the old one. At most `capacity` texts are kept; beyond, the oldest made goes.
 */
export class CheckedCheeses {
  private readonly texts = new Map<number, { revision: number; text: string }>();

  constructor(private readonly capacity = 10_000) {}

  textOf(document: DeepReadonly<CheeseDocument>): string {
    const revision = document._revision as number;
    const kept = this.texts.get(document._id);
    if (kept?.revision === revision) return kept.text;
    // zod only reads the value: the read model's own document is checked and encoded, not copied.
    const text = checkedJson(Cheese, document.cheese as Cheese);
    if (kept) this.texts.delete(document._id);
    else if (this.texts.size >= this.capacity) {
      const oldest = this.texts.keys().next();
      if (!oldest.done) this.texts.delete(oldest.value);
    }
    this.texts.set(document._id, { revision, text });
    return text;
  }

  get size(): number {
    return this.texts.size;
  }
}
