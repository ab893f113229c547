import { randomUUID } from "node:crypto";

/**
 * The load of a fault run: writers that create cheeses, register customers and place orders
 * through the cluster's balancer, recording every answer. What was acknowledged (a 2xx) is what
 * the checks read back afterwards; what was not (a 503, a closed connection) may or may not have
 * happened and is not checked. Any 5xx other than a 503 with Retry-After is a failure.
 */

export interface Acknowledged {
  cheeses: { id: number; name: string }[];
  customers: { id: number; username: string }[];
  orders: { id: number; customer: string }[];
}

export interface Answers {
  /** Requests answered, by status. */
  byStatus: Map<number, number>;
  /** The 503s by request and message, e.g. "POST /v2/store/order: ordering is unavailable; try again". */
  refusedFor: Map<string, number>;
  /** Answers that break the rule: a 5xx other than 503, or a 503 without Retry-After. */
  failures: string[];
  /** Requests that got no answer: the connection closed (a killed gateway) or it timed out. */
  unanswered: number;
}

export interface Credentials {
  operatorKey: string;
  client: { id: string; secret: string };
}

const PASSWORD = "correct horse battery staple";
/** Past this a request counts as unanswered. */
const REQUEST_TIMEOUT_MS = 15_000;
/** Orders placed by one customer before the next customer is used. */
const ORDERS_PER_CUSTOMER = 4;
/** How often a cheese's creation is sent (the same Idempotency-Key) while it gets no answer or a 503. */
const IDEMPOTENT_ATTEMPTS = 3;

export class Load {
  readonly acknowledged: Acknowledged = { cheeses: [], customers: [], orders: [] };
  readonly answers: Answers = { byStatus: new Map(), refusedFor: new Map(), failures: [], unanswered: 0 };
  /** Customers with a session token, waiting to place orders. */
  private readonly buyers: { username: string; bearer: string; placed: number }[] = [];
  private running = false;
  private readonly loops: Promise<void>[] = [];
  private token = "";
  /** Cheese creations started. */
  private sent = 0;

  constructor(
    private readonly url: string,
    private readonly credentials: Credentials,
  ) {}

  /** Sends one request; records its answer; resolves with it, or undefined when none came. */
  async call(
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: unknown,
  ): Promise<{ status: number; json: unknown } | undefined> {
    let response: Response;
    try {
      response = await fetch(`${this.url}${path}`, {
        method,
        headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
        ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch {
      this.answers.unanswered++;
      return undefined;
    }
    const text = await response.text().catch(() => "");
    const { status } = response;
    this.answers.byStatus.set(status, (this.answers.byStatus.get(status) ?? 0) + 1);
    const refusedProperly = status === 503 && response.headers.get("retry-after") !== null;
    if (status >= 500 && !refusedProperly) {
      this.answers.failures.push(`${method} ${path} answered ${status}: ${text.slice(0, 300)}`);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (status === 503) {
      const message = (json as { message?: unknown } | undefined)?.message;
      const why = `${method} ${path.split("?")[0]!.replace(/\/\d+/g, "/{id}")}: ${typeof message === "string" ? message : text.slice(0, 80)}`;
      this.answers.refusedFor.set(why, (this.answers.refusedFor.get(why) ?? 0) + 1);
    }
    return { status, json };
  }

  /** A client-credentials token of the run's OAuth client (every scope). */
  async operatorBearer(): Promise<Record<string, string>> {
    if (!this.token) {
      const { id, secret } = this.credentials.client;
      const response = await fetch(`${this.url}/oauth/token`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`,
        },
        body: "grant_type=client_credentials",
      });
      if (response.status !== 200) throw new Error(`no operator token: ${response.status}`);
      this.token = ((await response.json()) as { access_token: string }).access_token;
    }
    return { authorization: `Bearer ${this.token}` };
  }

  get operatorKey(): Record<string, string> {
    return { "x-api-key": this.credentials.operatorKey };
  }

  /** Starts the writers: two creating cheeses, one registering customers, two placing orders. */
  async start(): Promise<void> {
    const bearer = await this.operatorBearer();
    this.running = true;
    const loop = (step: () => Promise<void>, pauseMs: number) =>
      this.loops.push(
        (async () => {
          while (this.running) {
            await step();
            // Paced, not a wait before an assertion: keeps the load steady on a 2-core machine.
            await new Promise((next) => setTimeout(next, pauseMs));
          }
        })(),
      );
    for (let i = 0; i < 2; i++) loop(() => this.createCheese(bearer), 20);
    loop(() => this.registerCustomer(), 100);
    for (let i = 0; i < 2; i++) loop(() => this.placeOrder(), 20);
  }

  /** Stops the writers once their requests in flight are answered. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /**
   * Creates a cheese as a careful client does: with an Idempotency-Key, sent again (same key, same
   * body) while the answer is a 503 or none, a few times. Every tenth asks for a name already
   * acknowledged instead, which must be refused (409): a second cheese of one name means a
   * uniqueness reservation was won twice.
   */
  private async createCheese(bearer: Record<string, string>): Promise<void> {
    const taken = this.acknowledged.cheeses.at(-1);
    if (taken && ++this.sent % 10 === 0) {
      const again = await this.call("POST", "/v2/cheeses", bearer, { name: taken.name, pricePerKg: 1 });
      if (again && again.status < 300)
        this.answers.failures.push(`a second cheese named ${taken.name}: ${again.status}`);
      return;
    }
    const name = `Faults ${randomUUID()}`;
    const headers = { ...bearer, "idempotency-key": randomUUID() };
    for (let attempt = 0; attempt < IDEMPOTENT_ATTEMPTS; attempt++) {
      const answer = await this.call("POST", "/v2/cheeses", headers, { name, pricePerKg: 12.5 });
      if (answer?.status === 201) {
        const { id } = answer.json as { id: number };
        // A repeat answered with the first response: the same cheese, counted once.
        if (!this.acknowledged.cheeses.some((cheese) => cheese.id === id))
          this.acknowledged.cheeses.push({ id, name });
        return;
      }
      if (answer && answer.status !== 503) return;
      await new Promise((next) => setTimeout(next, 500));
    }
  }

  private async registerCustomer(): Promise<void> {
    const username = `faults_${randomUUID().slice(0, 12)}`;
    const created = await this.call(
      "POST",
      "/v2/customer",
      {},
      {
        username,
        email: `${username}@example.com`,
        password: PASSWORD,
      },
    );
    if (created?.status !== 201) return;
    this.acknowledged.customers.push({ id: (created.json as { id: number }).id, username });
    const login = await this.call("POST", "/v2/customer/login", {}, { username, password: PASSWORD });
    if (login?.status === 200) {
      this.buyers.push({ username, bearer: `Bearer ${(login.json as { token: string }).token}`, placed: 0 });
    }
  }

  private async placeOrder(): Promise<void> {
    const buyer = this.buyers[0];
    const cheese = this.acknowledged.cheeses.at(-1 - Math.floor(Math.random() * 20));
    if (!buyer || !cheese) return;
    if (++buyer.placed >= ORDERS_PER_CUSTOMER) this.buyers.shift();
    const answer = await this.call(
      "POST",
      "/v2/store/order",
      { authorization: buyer.bearer },
      {
        items: [{ cheeseId: cheese.id, quantity: 1 }],
        shippingAddress: { street: "1 Curd Lane", city: "Wells", zipCode: "BA5 2PB", country: "GB" },
      },
    );
    if (answer?.status === 201) {
      this.acknowledged.orders.push({ id: (answer.json as { id: number }).id, customer: buyer.username });
    }
  }
}
