/**
 * Reading Prometheus text exposition (what `/metrics` answers) in tests: the value of a sample by
 * name and labels, summed over the samples whose labels include the given ones.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const match = SAMPLE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? "").matchAll(LABEL))
      labels[key!] = value!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of the samples named `name` whose labels include `labels`; 0 when there are none. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  return parseMetrics(text)
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** Whether `text` has at least one sample named `name` with these labels. */
export function hasMetric(text: string, name: string, labels: Record<string, string> = {}): boolean {
  return parseMetrics(text).some(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
}

/** GET `<url>/metrics` (a health port), as text; throws unless it answers 200. */
export async function scrape(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/metrics`);
  if (response.status !== 200) throw new Error(`GET ${baseUrl}/metrics answered ${response.status}`);
  return response.text();
}
