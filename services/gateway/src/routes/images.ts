import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import * as contracts from "@cheese/contracts";
import { NoRespondersError } from "@cheese/messaging";
import { z } from "@hono/zod-openapi";
import { errorResponse as errorReply, refusal } from "../errors.ts";
import { readUploadForm, uploadGuard } from "../images/upload.ts";
import { callService, forward } from "../rpc.ts";
import { cheeseRoute, readWithApiKey, writeCheeses } from "./cheese-access.ts";
import { etagOf, notModified } from "./preconditions.ts";
import { errorResponse, json, jsonResponse, validationErrorResponse } from "./responses.ts";
import { type Route, route } from "./route.ts";

/** Blob keys are `images/<uuid>.<ext>` and `images/<uuid>.thumb.webp`; never overwritten. */
const imageFile =
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(\.thumb\.webp|\.jpg|\.png|\.webp)$/;
const binary = { schema: { type: "string" as const, format: "binary" } };
/** Keys are never reused, so a cache may keep an image forever. */
const IMMUTABLE = "public, max-age=31536000, immutable";

const uploadImage = cheeseRoute(
  {
    method: "post",
    path: "/cheeses/{cheeseId}/uploadImage",
    operationId: "uploadImage",
    access: writeCheeses,
    use: [...uploadGuard()],
    request: {
      params: contracts.CheeseIdParam,
      body: { required: true, content: { "multipart/form-data": { schema: contracts.ImageUploadForm } } },
    },
    responses: {
      200: {
        description: "image upload result",
        headers: contracts.etagHeader,
        content: json(contracts.ImageUploadResult),
      },
      404: errorResponse("cheese not found"),
      409: errorResponse("the cheese already has 50 photoUrls, the most it may hold"),
      413: errorResponse("file too large (or more than 50 megapixels)"),
      415: errorResponse("unsupported media type: not a JPEG, PNG or WebP that decodes"),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    const { cheeseId } = c.req.valid("param");
    const form = await readUploadForm(c);
    const format = contracts.detectImageFormat(new Uint8Array(await form.file.slice(0, 16).arrayBuffer()));
    if (!format) throw refusal(415, "the file is not a JPEG, PNG or WebP image");
    // 404 before anything is stored.
    await callService(deps, c, contracts.catalogueRpc.getCheese, { cheeseId });

    const id = randomUUID();
    const originalKey = `images/${id}.${contracts.imageExtensions[format]}`;
    const thumbnailKey = `images/${id}.thumb.webp`;
    const imageUrl = `${deps.publicUrl}/v2/${originalKey}`;
    const thumbnailUrl = `${deps.publicUrl}/v2/${thumbnailKey}`;
    await deps.blobs
      .put(originalKey, Readable.fromWeb(form.file.stream() as WebReadableStream), form.file.size, {
        contentType: contracts.imageMediaTypes[format],
        metadata: { "cheese-id": String(cheeseId) },
      })
      .catch((error: unknown) => {
        c.var.log().error({ err: error }, "could not store an uploaded image");
        throw refusal(503, "image storage is unavailable; try again");
      });
    try {
      const { image, revision } = await callService(deps, c, contracts.catalogueRpc.attachImage, {
        cheeseId,
        originalKey,
        thumbnailKey,
        format,
        size: form.file.size,
        imageUrl,
        thumbnailUrl,
        caption: form.caption,
        isPrimary: form.isPrimary,
      });
      c.header("ETag", etagOf(revision));
      return c.json({ imageUrl: image.imageUrl, thumbnailUrl: image.thumbnailUrl, size: image.size }, 200);
    } catch (error) {
      // The catalogue removes what it refuses. Past a time-out it may still be working on the
      // image, so the blob stays; only when no catalogue got the request is it surely unused.
      if (error instanceof NoRespondersError) await deps.blobs.delete(originalKey).catch(() => {});
      throw error;
    }
  },
);

const listImages = cheeseRoute(
  {
    method: "get",
    path: "/cheeses/{cheeseId}/images",
    operationId: "listCheeseImages",
    access: readWithApiKey,
    request: { params: contracts.CheeseIdParam },
    responses: {
      200: jsonResponse("oldest first", z.array(contracts.CheeseImage)),
      404: errorResponse("cheese not found"),
    },
  },
  forward(
    contracts.catalogueRpc.listImages,
    200,
    (c) => c.req.valid("param"),
    (reply) => reply.images,
  ),
);

const getImage = route(
  {
    method: "get",
    path: "/images/{file}",
    operationId: "getImage",
    tags: ["Cheeses"],
    access: { public: true },
    request: { params: contracts.ImageFileParam },
    responses: {
      200: {
        description: "the image",
        headers: {
          ETag: { schema: { type: "string" } },
          "Cache-Control": { schema: { type: "string" } },
        },
        content: Object.fromEntries(Object.values(contracts.imageMediaTypes).map((type) => [type, binary])),
      },
      304: { description: "If-None-Match named the current ETag" },
      404: errorResponse("no such image"),
      503: errorResponse("image storage unavailable; see Retry-After"),
    },
  },
  (deps) => async (c) => {
    const { file } = c.req.valid("param");
    const blob = imageFile.test(file)
      ? await deps.blobs.get(`images/${file}`).catch((error: unknown) => {
          c.var.log().error({ err: error }, "could not read an image");
          throw refusal(503, "image storage is unavailable; try again");
        })
      : undefined;
    if (!blob) return errorReply(c, 404, "no such image");
    const etag = `"${blob.info.etag}"`;
    c.header("ETag", etag);
    c.header("Cache-Control", IMMUTABLE);
    c.header("Last-Modified", blob.info.lastModified.toUTCString());
    if (notModified(c.req.header("if-none-match"), etag)) {
      blob.body.destroy();
      return c.body(null, 304);
    }
    c.header("Content-Type", blob.info.contentType);
    c.header("Content-Length", String(blob.info.size));
    return c.body(Readable.toWeb(blob.body) as ReadableStream, 200);
  },
);

export const imageRoutes: Route[] = [uploadImage, listImages, getImage];
