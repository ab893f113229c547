import { type FieldError, MAX_CAPTION_LENGTH, MAX_IMAGE_BYTES } from "@cheese/contracts";
import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { GatewayEnv } from "../env.ts";
import { errorResponse, refusal } from "../errors.ts";
import { refuseUnreadBody } from "../middleware/body-size.ts";

/** Room for the multipart boundaries, part headers and a caption around the file. */
const MULTIPART_OVERHEAD = 64 * 1024;

const TOO_LARGE = `the image must be at most ${MAX_IMAGE_BYTES} bytes (10 MB)`;

/**
 * Refuses an oversized upload before reading it: by its Content-Length when declared, else by
 * counting bytes as they arrive (chunked), stopping at the limit. Only multipart/form-data is
 * accepted (415 otherwise).
 */
export function uploadGuard(): MiddlewareHandler<GatewayEnv>[] {
  const multipartOnly = createMiddleware<GatewayEnv>(async (c, next) => {
    const type = c.req.header("content-type") ?? "";
    if (!/^multipart\/form-data\s*;/i.test(type)) {
      return errorResponse(c, 415, "upload the image as multipart/form-data with a file part");
    }
    await next();
  });
  return [
    multipartOnly,
    bodyLimit({
      maxSize: MAX_IMAGE_BYTES + MULTIPART_OVERHEAD,
      onError: (c) => refuseUnreadBody(c, TOO_LARGE),
    }),
  ];
}

export interface UploadForm {
  file: File;
  caption: string | null;
  isPrimary: boolean;
}

/** Reads and checks the form fields: 422 naming the field, 413 when the file itself is too big. */
export async function readUploadForm(c: Context<GatewayEnv>): Promise<UploadForm> {
  let form: FormData;
  try {
    form = await c.req.raw.formData();
  } catch {
    throw invalid([{ field: "(body)", message: "not a valid multipart/form-data body" }]);
  }
  const errors: FieldError[] = [];
  for (const name of new Set(form.keys())) {
    if (!["file", "caption", "isPrimary"].includes(name))
      errors.push({ field: name, message: "unknown field" });
    else if (form.getAll(name).length > 1) errors.push({ field: name, message: "given more than once" });
  }
  const file = form.get("file");
  if (file === null) errors.push({ field: "file", message: "required" });
  else if (typeof file === "string") errors.push({ field: "file", message: "must be a file" });
  const caption = form.get("caption");
  if (caption !== null && (typeof caption !== "string" || caption.length > MAX_CAPTION_LENGTH)) {
    errors.push({ field: "caption", message: `must be text of at most ${MAX_CAPTION_LENGTH} characters` });
  }
  const isPrimary = form.get("isPrimary");
  const primary = typeof isPrimary === "string" ? isPrimary.trim().toLowerCase() : isPrimary;
  if (primary !== null && primary !== "true" && primary !== "false") {
    errors.push({ field: "isPrimary", message: "must be true or false" });
  }
  if (errors.length > 0) throw invalid(errors);
  const upload = file as File;
  if (upload.size > MAX_IMAGE_BYTES) throw refusal(413, TOO_LARGE);
  return { file: upload, caption: (caption as string | null) || null, isPrimary: primary === "true" };
}

const invalid = (errors: FieldError[]) => refusal(422, "the upload failed validation", errors);
