# shellcheck shell=bash
# Sourced by CI scripts: makes a Docker engine reachable and exports what docker and
# testcontainers need to use it. docker-here (a local engine for machines without a registry)
# is looked for beside the clone (../shared/tools) and in /work/shared/tools; without it, any
# engine `docker info` reaches is used, so the same scripts run wherever Docker and a registry
# exist. Returns 1, saying why, when there is no engine at all.
docker_env() {
  local repo candidate docker_here=""
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  for candidate in "$repo/../shared/tools/docker-here" /work/shared/tools/docker-here; do
    if [[ -x $candidate ]]; then docker_here=$candidate; break; fi
  done
  if [[ -n $docker_here ]]; then
    echo "docker: from $docker_here"
    "$docker_here" up || return 1
    eval "$("$docker_here" env)"
    # docker-here's engine has no bridge network (containers use the host's) and no registry
    # to pull testcontainers' reaper from; every suite removes its own containers.
    export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 TESTCONTAINERS_RYUK_DISABLED=true
    return 0
  fi
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    echo "docker: docker-here not found ($repo/../shared/tools/docker-here, /work/shared/tools/docker-here); using the engine docker info reaches"
    return 0
  fi
  echo "docker: no engine: docker-here is not at $repo/../shared/tools/docker-here or /work/shared/tools/docker-here, and 'docker info' reaches no engine" >&2
  return 1
}
