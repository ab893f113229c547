// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are walked as plain data
type Manifest = any;

/**
 * The environment a container of a rendered overlay starts with: its ConfigMaps' and Secrets'
 * keys (`envFrom`, by their rendered names, hash suffix included; a Secret's `data` decoded),
 * then its own `env` values over them.
 */
export function effectiveEnv(container: Manifest, objects: Manifest[]): Record<string, string> {
  const env: Record<string, string> = {};
  const named = (kind: string, name: unknown) =>
    objects.find((o) => o.kind === kind && o.metadata?.name === name);
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef) Object.assign(env, named("ConfigMap", source.configMapRef.name)?.data ?? {});
    if (source.secretRef) {
      const secret = named("Secret", source.secretRef.name);
      for (const [key, value] of Object.entries<string>(secret?.data ?? {}))
        env[key] = Buffer.from(value, "base64").toString("utf8");
      Object.assign(env, secret?.stringData ?? {});
    }
  }
  for (const variable of container.env ?? []) {
    if (variable.value !== undefined) env[variable.name] = String(variable.value);
  }
  return env;
}
