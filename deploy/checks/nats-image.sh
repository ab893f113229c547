#!/usr/bin/env bash
# Prints the NATS image the container checks run (deploy/checks/container.sh, the containers
# end-to-end suites), of the line the deployment pins (deploy/nats/line):
# - where docker-here made nats-server:local (no registry; its nats-server is Debian stable's),
#   `cheese-nats:<version>`, built once on it with the nats-server on PATH in its place, which
#   must be of that line (scripts/install-nats-server.sh puts one there);
# - elsewhere the official image, `nats:<line>-alpine`, as the deployment runs it.
# Needs the Docker variables in the environment (deploy/checks/docker-env.sh).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
line=$(cat "$repo/deploy/nats/line")

if ! docker image inspect nats-server:local >/dev/null 2>&1; then
  echo "nats:$line-alpine"
  exit 0
fi
binary=$(command -v nats-server) || {
  echo "nats-image: no nats-server on PATH to build a NATS image from (scripts/install-nats-server.sh)" >&2
  exit 1
}
version=$("$binary" --version | sed -nE 's/^nats-server: v([0-9.]+).*/\1/p')
if [[ "$version" != "$line".* ]]; then
  echo "nats-image: $binary is nats-server $version, not of the $line line (scripts/install-nats-server.sh)" >&2
  exit 1
fi
image="cheese-nats:$version"
if ! docker image inspect "$image" >/dev/null 2>&1; then
  context=$(mktemp -d)
  trap 'rm -rf "$context"' EXIT
  cp "$binary" "$context/nats-server"
  printf 'FROM nats-server:local\nCOPY nats-server /usr/sbin/nats-server\n' >"$context/Dockerfile"
  docker build -q --network host -t "$image" "$context" >/dev/null 2>"$context/build.log" || {
    cat "$context/build.log" >&2
    exit 1
  }
fi
echo "$image"
