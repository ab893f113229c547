import { readFileSync } from "node:fs";

/**
 * The hadolint rules that matter for our image, checked without hadolint (no binary can be
 * installed here): DL3006/DL3007 base images pinned (a tag, never `latest`), DL3002 the last USER
 * is not root, DL3020 COPY rather than ADD, DL3025 JSON-form CMD/ENTRYPOINT, DL3009 apt lists
 * removed in the same RUN, DL3015 --no-install-recommends; plus our own: a multi-stage build,
 * a HEALTHCHECK, and an init (tini) so SIGTERM reaches the service.
 */
export function checkDockerfile(path: string): string[] {
  const text = readFileSync(path, "utf8").replace(/\\\n/g, " ");
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  const args = new Map<string, string>();
  const problems: string[] = [];
  const stages = lines.filter((l) => /^FROM\s/i.test(l));
  for (const line of lines) {
    const arg = /^ARG\s+(\w+)=(\S+)/i.exec(line);
    if (arg) args.set(arg[1]!, arg[2]!);
  }
  if (stages.length < 2) problems.push("not a multi-stage build");
  const stageNames = new Set<string>();
  for (const from of stages) {
    const [, source, as, name] = from.split(/\s+/);
    if (as?.toUpperCase() === "AS" && name) stageNames.add(name);
    // FROM an earlier stage: nothing to pin.
    if (stageNames.has(source!)) continue;
    const image = source!.replace(/\$\{(\w+)\}/g, (_, arg: string) => args.get(arg) ?? "");
    if (!image.includes(":") || image.endsWith(":latest"))
      problems.push(`DL3006/DL3007: ${image} is not pinned`);
  }
  const users = lines.filter((l) => /^USER\s/i.test(l));
  const lastUser = users.at(-1)?.split(/\s+/)[1];
  if (!lastUser || lastUser === "root" || lastUser === "0") problems.push("DL3002: the image runs as root");
  if (lines.some((l) => /^ADD\s/i.test(l))) problems.push("DL3020: use COPY instead of ADD");
  for (const l of lines.filter((line) => /^(CMD|ENTRYPOINT)\s/i.test(line))) {
    if (!/^\w+\s+\[/.test(l)) problems.push(`DL3025: use JSON form: ${l}`);
  }
  for (const l of lines.filter((line) => /apt-get install/.test(line))) {
    if (!l.includes("--no-install-recommends"))
      problems.push("DL3015: apt-get install without --no-install-recommends");
    if (!l.includes("rm -rf /var/lib/apt/lists"))
      problems.push("DL3009: apt lists not removed in the same RUN");
  }
  if (!lines.some((l) => /^HEALTHCHECK\s/i.test(l))) problems.push("no HEALTHCHECK");
  if (!lines.some((l) => /^ENTRYPOINT\s.*tini/i.test(l)))
    problems.push("no init process (tini) to forward SIGTERM");
  return problems;
}
