import { type Cheese, catalogueEvents } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import { CheckedText, type IntegrationEvent } from "@cheese/messaging";
import type { z } from "zod";
import type { CheeseEvent } from "./domain/cheese.ts";
import type { CheckedCheeses } from "./handlers/checked-cheeses.ts";

type Published = Omit<IntegrationEvent, "id" | "headers">;

/** An event carrying a cheese: its subject, and its schema without the cheese (what checks the rest). */
function carryingCheese(definition: { subject: string; schema: z.ZodObject }) {
  // `cheese` is a field of each schema given (the catalogue's events carrying a cheese).
  const rest = definition.schema.omit({ cheese: true } as never) as z.ZodObject;
  // Nothing beside the cheese (`cheese.added`, `cheese.updated`): nothing more to check.
  return { subject: definition.subject, rest: Object.keys(rest.shape).length > 0 ? rest : undefined };
}

const added = carryingCheese(catalogueEvents.cheeseAdded);
const updated = carryingCheese(catalogueEvents.cheeseUpdated);
const statusChanged = carryingCheese(catalogueEvents.cheeseStatusChanged);

/**
 * Which of the catalogue's domain events others may see, as `catalogueEvents` defines them.
 * An image attached changes photoUrls, so others see it as an update. Payloads are checked
 * against the contract: a mismatch is a bug here, and the relay retries rather than publish it.
 * The cheese an event carries is checked as the contract's `Cheese` once per version
 * (`checkedCheeses`, shared with the create's reply and the reads, whichever comes first), the
 * rest of the payload by the contract's schema without it.
 */
export function integrationEvents(
  checkedCheeses: CheckedCheeses,
): (event: RecordedEvent) => Published | undefined {
  const withCheese = (
    carrying: ReturnType<typeof carryingCheese>,
    event: RecordedEvent,
    cheese: Cheese,
    rest: Record<string, unknown> = {},
  ): Published => {
    const others = carrying.rest ? JSON.stringify(carrying.rest.parse(rest)).slice(1, -1) : "";
    const text = checkedCheeses.text(cheese, event.revision);
    return {
      subject: carrying.subject,
      payload: new CheckedText(`{"cheese":${text}${others && `,${others}`}}`),
    };
  };
  return (event) => {
    const domainEvent = { type: event.type, data: event.data } as CheeseEvent;
    switch (domainEvent.type) {
      case "CheeseAdded":
        return withCheese(added, event, domainEvent.data.cheese);
      case "CheeseUpdated":
      case "CheeseImageAttached":
        return withCheese(updated, event, domainEvent.data.cheese);
      case "CheeseStatusChanged": {
        const { cheese, from, to } = domainEvent.data;
        return withCheese(statusChanged, event, cheese, { from, to });
      }
      case "CheeseDeleted": {
        const { cheeseId, name } = domainEvent.data;
        const { subject, schema } = catalogueEvents.cheeseDeleted;
        return { subject, payload: schema.parse({ cheeseId, name }) };
      }
      default:
        return undefined;
    }
  };
}
