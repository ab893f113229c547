/** What a started system is and how to start one: shared by the launcher and container stacks. */
export interface RunningSystem {
  /** `launcher`: `pnpm start` on this machine; `containers`: the image, one container per process. */
  mode: "launcher" | "containers";
  baseUrl: string;
  rootUrl: string;
  dataDir: string;
  /** Everything the launcher (or the containers) printed so far. */
  output(): string;
  /** Current process ids per service (DATA_DIR/run/processes.json, or each container's node). */
  pids(): Record<string, number[]>;
  /** The NATS server the launcher started (multi-process mode), to attach extra processes. */
  natsUrl(): string;
  /**
   * The NATS_CREDENTIALS directory of the system's identities (`<identity>.nk`), which its NATS
   * asks of every client; undefined where its NATS lets anyone in (the container stack).
   */
  natsCredentials(): string | undefined;
  stop(): Promise<void>;
}

export interface SystemOptions {
  /** Variables over the tests' defaults; `undefined` unsets one (its default applies). */
  env?: Record<string, string | undefined>;
  /** Keep the data directory across stop/start (pass the previous one). */
  dataDir?: string;
  readyTimeoutMs?: number;
  /** The gateway's port (a restart keeps its address, and so its PUBLIC_URL); a free one by default. */
  port?: number;
}
