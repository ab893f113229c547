import { request as httpRequest } from "node:http";
import { getContainerRuntimeClient } from "testcontainers";

let cached: Promise<string | undefined> | undefined;

/**
 * Why container-backed suites cannot run here, or undefined when a Docker engine answers.
 * Suites use it to skip with a printed reason instead of silently.
 */
export function dockerUnavailableReason(): Promise<string | undefined> {
  cached ??= getContainerRuntimeClient().then(
    () => undefined,
    (error: unknown) => `no Docker engine reachable (${(error as Error).message.split("\n")[0]})`,
  );
  return cached;
}

const images = new Map<string, Promise<string | undefined>>();

/**
 * Why a suite that needs `image` cannot run here: no Docker engine, or an engine that has not got
 * the image and cannot pull it (no registry reachable). Undefined when the image is there.
 * The engine is asked directly too, so the reason names the image even where testcontainers
 * cannot use the engine.
 */
export function containerImageUnavailableReason(image: string): Promise<string | undefined> {
  let check = images.get(image);
  if (!check) {
    check = (async () => {
      const engine = await dockerEngine(`/images/${encodeURIComponent(image)}/json`);
      if (engine?.status === 200) return dockerUnavailableReason();
      if (!engine) return dockerUnavailableReason();
      const [name, tag = "latest"] = splitTag(image);
      const pull = await dockerEngine(
        `/images/create?fromImage=${encodeURIComponent(name)}&tag=${encodeURIComponent(tag)}`,
        "POST",
      );
      const failure = pull ? pullFailure(pull) : "no answer";
      if (!failure) return dockerUnavailableReason();
      const why = failure.slice(0, 200);
      return `a Docker engine answers, but it has no image ${image} and cannot pull it (${why})`;
    })();
    images.set(image, check);
  }
  return check;
}

/** The error of an image pull (one JSON message, or JSON lines of progress), undefined if none. */
function pullFailure(pull: { status: number; body: string }): string | undefined {
  for (const line of pull.body.split("\n")) {
    try {
      const message = JSON.parse(line) as { message?: string; error?: string };
      if (message.error || (pull.status !== 200 && message.message)) return message.error ?? message.message;
    } catch {
      // not JSON: ignored
    }
  }
  return pull.status === 200 ? undefined : `HTTP ${pull.status}`;
}

function splitTag(image: string): [string, string | undefined] {
  const colon = image.lastIndexOf(":");
  return colon > image.lastIndexOf("/")
    ? [image.slice(0, colon), image.slice(colon + 1)]
    : [image, undefined];
}

/** One request to the Docker engine's API (DOCKER_HOST's unix socket, else the default one). */
function dockerEngine(path: string, method = "GET"): Promise<{ status: number; body: string } | undefined> {
  const host = process.env.DOCKER_HOST;
  const socketPath = host?.startsWith("unix://") ? host.slice("unix://".length) : "/var/run/docker.sock";
  if (host && !host.startsWith("unix://")) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const request = httpRequest({ socketPath, path, method, timeout: 120_000 }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        body += chunk;
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on("error", () => resolve(undefined));
    request.on("timeout", () => request.destroy());
    request.end();
  });
}
