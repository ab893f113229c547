import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import type { BlobStore } from "@cheese/blob-store";
import { z } from "zod";

/**
 * The scheduler's state at a global event-store position: the unfinished deliveries (without
 * their bodies) and, per registration, its status and since when its attempts have all failed.
 * A process restores it and reads only the events after `position`, so its start-up costs
 * what is waiting, not the whole history of finished deliveries.
 */
/** A delivery's W3C trace context, as its creating event's metadata carried it. */
const TraceCarrier = z.object({ traceparent: z.string(), tracestate: z.string().optional() });
export type TraceCarrier = z.infer<typeof TraceCarrier>;

export const ScheduleSnapshot = z.object({
  version: z.literal(1),
  position: z.number().int(),
  takenAt: z.string(),
  deliveries: z.array(
    z.object({
      deliveryId: z.number().int(),
      webhookId: z.number().int(),
      eventId: z.string(),
      eventType: z.string(),
      createdAt: z.string(),
      status: z.enum(["pending", "attempting", "retry_scheduled"]),
      round: z.number().int(),
      attempt: z.number().int(),
      dueAt: z.string().nullable(),
      startedAt: z.string().nullable(),
      revision: z.number().int(),
      lane: z.string().optional(),
      trace: TraceCarrier.optional(),
    }),
  ),
  webhooks: z.array(
    z.object({
      webhookId: z.number().int(),
      status: z.enum(["active", "paused", "disabled", "deleted"]),
      failingSince: z.string().nullable(),
    }),
  ),
});
export type ScheduleSnapshot = z.infer<typeof ScheduleSnapshot>;

export interface SnapshotStore {
  /** The newest snapshot, or undefined when there is none or it cannot be read. */
  load(): Promise<ScheduleSnapshot | undefined>;
  save(snapshot: ScheduleSnapshot): Promise<void>;
}

export const SNAPSHOT_KEY = "notification/schedule-snapshot.json";

/**
 * Snapshots in the blob store (files under DATA_DIR, or MinIO/S3): shared by the replicas, and
 * replaced whole by each save, so a reader gets one complete snapshot or the previous one. Any
 * replica's snapshot is a valid starting point for every replica: each is the exact state at its
 * position, and whoever loads it reads everything after that position.
 */
export function blobSnapshotStore(blobs: BlobStore, key = SNAPSHOT_KEY): SnapshotStore {
  return {
    async load() {
      const found = await blobs.get(key);
      if (!found) return undefined;
      const parsed = ScheduleSnapshot.safeParse(JSON.parse(await text(found.body)));
      return parsed.success ? parsed.data : undefined;
    },
    async save(snapshot) {
      const bytes = Buffer.from(JSON.stringify(snapshot), "utf8");
      await blobs.put(key, Readable.from([bytes]), bytes.length, { contentType: "application/json" });
    },
  };
}
