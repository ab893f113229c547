import { createInProcessBroker, silentLogger } from "../src/index.ts";
import { messageBusContract } from "./contract.ts";

messageBusContract("in-process", async () => {
  const broker = createInProcessBroker({ logger: silentLogger });
  return { connect: async () => broker.connect(), cleanup: async () => {} };
});
