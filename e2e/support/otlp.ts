import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A span as an OTLP/HTTP JSON export carries it, with its service's name. */
export interface ExportedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's enum: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
}

interface ExportBody {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: { stringValue?: string } }[] };
    scopeSpans?: { spans?: Omit<ExportedSpan, "service">[] }[];
  }[];
}

/**
 * An OpenTelemetry collector as far as the tests need one: it takes OTLP/HTTP JSON exports on
 * 127.0.0.1 (`POST /v1/traces`, what @opentelemetry/exporter-trace-otlp-http sends) and keeps
 * their spans.
 */
export class OtlpReceiver {
  readonly spans: ExportedSpan[] = [];

  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        if (req.method === "POST" && req.url === "/v1/traces") {
          receiver!.take(JSON.parse(Buffer.concat(chunks).toString("utf8")) as ExportBody);
          res.writeHead(200, { "content-type": "application/json" }).end("{}");
        } else {
          res.writeHead(404).end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    receiver = new OtlpReceiver(server);
    return receiver;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The spans of one trace received so far. */
  trace(traceId: string): ExportedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private take(body: ExportBody): void {
    for (const { resource, scopeSpans } of body.resourceSpans ?? []) {
      const service =
        resource?.attributes?.find((attribute) => attribute.key === "service.name")?.value.stringValue ?? "";
      for (const { spans } of scopeSpans ?? []) {
        for (const span of spans ?? []) {
          const { traceId, spanId, parentSpanId = "", name, kind } = span;
          this.spans.push({ service, traceId, spanId, parentSpanId, name, kind });
        }
      }
    }
  }
}
