export { type ConsoleOptions, createConsoleApp } from "./app.tsx";
