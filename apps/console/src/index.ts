export { type ConsoleOptions, createConsoleApp } from "./app.tsx";
export { type RunningConsole, startConsole } from "./server.ts";
