import {
  type Category,
  type Cheese,
  type CheeseReply,
  type CheeseStatus,
  MAX_PHOTO_URLS,
  type Precondition,
} from "@cheese/contracts";
import {
  badRequest,
  conflict,
  type Decider,
  type DomainEvent,
  notFound,
  preconditionFailed,
  type UniqueValue,
} from "@cheese/service-kit";
import type { z } from "zod";

/** Everything about a cheese a client can write, with category and tag ids already resolved. */
export interface CheeseDetails {
  name: string;
  category?: z.infer<typeof Category>;
  photoUrls: string[];
  tags: { id: number; name: string }[];
  status: CheeseStatus;
  origin: string | null;
  pricePerKg?: number;
  ageMonths?: number;
  organic: boolean;
}

/** An image as recorded: where its bytes live in the blob store, and what clients see. */
export interface StoredImage {
  key: string;
  thumbnailKey: string;
  imageUrl: string;
  thumbnailUrl: string;
  size: number;
  contentType: string;
  width: number;
  height: number;
  caption: string | null;
  isPrimary: boolean;
  createdAt: string;
}

/**
 * Every event carries the cheese as it is afterwards, so a read model or a consumer (webhooks on
 * status moves) never has to fold history to know the current state.
 */
export type CheeseEvent =
  | DomainEvent<"CheeseAdded", { cheese: Cheese }>
  | DomainEvent<"CheeseUpdated", { cheese: Cheese }>
  | DomainEvent<"CheeseStatusChanged", { cheese: Cheese; from: CheeseStatus; to: CheeseStatus }>
  | DomainEvent<"CheeseImageAttached", { cheese: Cheese; image: StoredImage }>
  | DomainEvent<
      "CheeseDeleted",
      {
        cheeseId: number;
        name: string;
        categoryId: number | null;
        status: CheeseStatus;
        /** Blob keys of its images, so they can be removed too. */
        imageKeys: string[];
      }
    >;

export type CheeseCommand =
  | { type: "AddCheese"; cheese: Cheese }
  | { type: "ReplaceCheese"; details: CheeseDetails; at: string; ifMatch?: Precondition }
  | { type: "UpdateCheese"; changes: CheeseChangeSet; at: string; ifMatch?: Precondition }
  | { type: "ChangeCheeseStatus"; status: CheeseStatus; at: string; ifMatch?: Precondition }
  | { type: "AttachImage"; image: StoredImage; at: string }
  | { type: "DeleteCheese"; confirmed: boolean; activeOrders: number };

/** A partial update with ids resolved; `category: null` removes the category. */
export type CheeseChangeSet = Partial<Omit<CheeseDetails, "category">> & {
  category?: CheeseDetails["category"] | null;
};

/** `revision` is the stream revision of the last event folded (-1: none): the ETag. */
export type CheeseState =
  | { phase: "absent"; revision: number }
  | { phase: "present"; revision: number; cheese: Cheese; images: StoredImage[] }
  | { phase: "deleted"; revision: number };

export const cheeseStream = (id: number) => `cheese-${id}`;

/**
 * The one name normaliser: cheese, category and tag names compare, sort, filter and are unique
 * case-insensitively and without surrounding blanks.
 */
export const normaliseName = (name: string) => name.trim().toLowerCase();

/**
 * The stream reserving a cheese name within its category (see the service kit's
 * `reserveUnique`); cheeses without a category form their own group, keyed `none`.
 */
export const cheeseNameStream = (cheese: { name: string; category?: { id: number } | undefined }) =>
  `cheesename-${cheese.category?.id ?? "none"}:${normaliseName(cheese.name)}`;

export const NAME_TAKEN = "a cheese with this name already exists in the category";

/** The cheese aggregate. Ids, category and tag ids are resolved before a command is decided. */
export const cheeseDecider: Decider<CheeseState, CheeseCommand, CheeseEvent> = {
  initialState: () => ({ phase: "absent", revision: -1 }),
  evolve(state, event) {
    const revision = state.revision + 1;
    switch (event.type) {
      case "CheeseAdded":
        return { phase: "present", revision, cheese: event.data.cheese, images: [] };
      case "CheeseUpdated":
      case "CheeseStatusChanged":
        return state.phase === "present" ? { ...state, revision, cheese: event.data.cheese } : state;
      case "CheeseImageAttached":
        return state.phase === "present"
          ? {
              ...state,
              revision,
              cheese: event.data.cheese,
              images: withImage(state.images, event.data.image),
            }
          : state;
      case "CheeseDeleted":
        return { phase: "deleted", revision };
      default:
        return { ...state, revision };
    }
  },
  decide(command, state) {
    if (command.type === "AddCheese") {
      if (state.phase !== "absent") throw conflict("cheese already exists");
      return [{ type: "CheeseAdded", data: { cheese: command.cheese } }];
    }
    const present = requirePresent(state);
    switch (command.type) {
      case "ReplaceCheese":
        checkPrecondition(present, command.ifMatch);
        return revise(present, command.details, command.at);
      case "UpdateCheese":
        checkPrecondition(present, command.ifMatch);
        return revise(present, applyChanges(detailsOf(present.cheese), command.changes), command.at);
      case "ChangeCheeseStatus":
        checkPrecondition(present, command.ifMatch);
        return revise(present, { ...detailsOf(present.cheese), status: command.status }, command.at);
      case "AttachImage":
        return attachImage(present, command.image, command.at);
      case "DeleteCheese":
        return deleteCheese(present, command);
    }
  },
};

type Present = Extract<CheeseState, { phase: "present" }>;

function requirePresent(state: CheeseState): Present {
  if (state.phase !== "present") throw notFound("cheese not found");
  return state;
}

/** The cheese and its revision (the ETag), as every write answers. */
export function replyOf(state: CheeseState): CheeseReply {
  return { cheese: requirePresent(state).cheese, revision: state.revision };
}

/**
 * The answer to a repeat of a create (the same Idempotency-Key): the cheese as its `CheeseAdded`
 * recorded it, with that event's revision (the first answer's body and ETag), marked replayed.
 */
export function replayOf(added: { data: unknown; revision: number }): CheeseReply & { replayed: true } {
  const { cheese } = added.data as Extract<CheeseEvent, { type: "CheeseAdded" }>["data"];
  return { cheese, revision: added.revision, replayed: true };
}

/** If-Match: 412 unless the cheese is still at one of the revisions the client saw. */
function checkPrecondition(state: Present, ifMatch: Precondition | undefined): void {
  if (ifMatch === undefined || ifMatch === "*") return;
  if (!ifMatch.includes(state.revision)) {
    throw preconditionFailed(`the cheese has changed: its ETag is now "${state.revision}"`);
  }
}

/** The new state's events: CheeseUpdated when anything but status changed, CheeseStatusChanged when status did. */
function revise(state: Present, next: CheeseDetails, at: string): CheeseEvent[] {
  const before = detailsOf(state.cheese);
  const fieldsChanged = comparable({ ...next, status: before.status }) !== comparable(before);
  const statusChanged = next.status !== before.status;
  if (!fieldsChanged && !statusChanged) return [];
  const cheese = cheeseOf(state.cheese.id, next, state.cheese.createdAt!, at);
  const events: CheeseEvent[] = [];
  if (fieldsChanged) events.push({ type: "CheeseUpdated", data: { cheese } });
  if (statusChanged) {
    events.push({ type: "CheeseStatusChanged", data: { cheese, from: before.status, to: next.status } });
  }
  return events;
}

/**
 * The image URL joins photoUrls: first when it is the primary image, else last. A cheese already
 * holding MAX_PHOTO_URLS is refused (409): a write body may not hold more either, so the cheese
 * as read back can always be written back with PUT.
 */
function attachImage(state: Present, image: StoredImage, at: string): CheeseEvent[] {
  const details = detailsOf(state.cheese);
  const others = details.photoUrls.filter((url) => url !== image.imageUrl);
  if (others.length >= MAX_PHOTO_URLS) {
    throw conflict(
      `the cheese already has ${MAX_PHOTO_URLS} photoUrls, the most it may hold; remove one first`,
    );
  }
  const photoUrls = image.isPrimary ? [image.imageUrl, ...others] : [...others, image.imageUrl];
  const cheese = cheeseOf(state.cheese.id, { ...details, photoUrls }, state.cheese.createdAt!, at);
  return [{ type: "CheeseImageAttached", data: { cheese, image } }];
}

function deleteCheese(state: Present, command: Extract<CheeseCommand, { type: "DeleteCheese" }>) {
  if (!command.confirmed) {
    throw badRequest("deleting a cheese needs the header X-Confirm-Delete: true");
  }
  if (command.activeOrders > 0) {
    throw conflict(
      `the cheese has ${command.activeOrders} approved or shipped order(s) and cannot be deleted`,
    );
  }
  const { cheese } = state;
  return [
    {
      type: "CheeseDeleted" as const,
      data: {
        cheeseId: cheese.id,
        name: cheese.name,
        categoryId: cheese.category?.id ?? null,
        status: cheese.status,
        imageKeys: state.images.flatMap((image) => [image.key, image.thumbnailKey]),
      },
    },
  ];
}

function withImage(images: StoredImage[], image: StoredImage): StoredImage[] {
  const kept = image.isPrimary ? images.map((other) => ({ ...other, isPrimary: false })) : images;
  return [...kept, image];
}

export function applyChanges(details: CheeseDetails, changes: CheeseChangeSet): CheeseDetails {
  const { category, ...rest } = changes;
  const next: CheeseDetails = { ...details };
  for (const [key, value] of Object.entries(rest)) {
    if (value !== undefined) (next as unknown as Record<string, unknown>)[key] = value;
  }
  if (category === null) delete next.category;
  else if (category !== undefined) next.category = category;
  return next;
}

export function detailsOf(cheese: Cheese): CheeseDetails {
  return {
    name: cheese.name,
    ...(cheese.category ? { category: cheese.category } : {}),
    photoUrls: cheese.photoUrls ?? [],
    tags: cheese.tags ?? [],
    status: cheese.status,
    origin: cheese.origin ?? null,
    ...(cheese.pricePerKg !== undefined ? { pricePerKg: cheese.pricePerKg } : {}),
    ...(cheese.ageMonths !== undefined ? { ageMonths: cheese.ageMonths } : {}),
    organic: cheese.organic ?? false,
  };
}

/** A cheese in the field order of the API's Cheese schema. */
export function cheeseOf(id: number, details: CheeseDetails, createdAt: string, updatedAt: string): Cheese {
  return {
    id,
    name: details.name,
    ...(details.category ? { category: { id: details.category.id, name: details.category.name } } : {}),
    photoUrls: details.photoUrls,
    tags: details.tags.map((tag) => ({ id: tag.id, name: tag.name })),
    status: details.status,
    origin: details.origin,
    ...(details.pricePerKg !== undefined ? { pricePerKg: details.pricePerKg } : {}),
    ...(details.ageMonths !== undefined ? { ageMonths: details.ageMonths } : {}),
    organic: details.organic,
    createdAt,
    updatedAt,
  };
}

/** Field order fixed by cheeseOf, so equal details serialise equally. */
function comparable(details: CheeseDetails): string {
  const { id: _id, createdAt: _c, updatedAt: _u, ...rest } = cheeseOf(0, details, "", "");
  return JSON.stringify(rest);
}

/** A cheese's (category, name) as a unique value it holds (the service kit's `reserveUnique`). */
export function cheeseName(
  cheeseId: number,
  cheese: { name: string; category?: { id: number } | undefined },
): UniqueValue<CheeseState, CheeseEvent> {
  return {
    stream: cheeseNameStream(cheese),
    holder: cheeseId,
    whenTaken: NAME_TAKEN,
    heldBy: {
      stream: cheeseStream,
      decider: cheeseDecider,
      values: (state) => (state.phase === "present" ? [cheeseNameStream(state.cheese)] : []),
    },
  };
}
