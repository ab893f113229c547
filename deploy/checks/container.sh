#!/usr/bin/env bash
# The container check: builds the image from the Dockerfile, runs the five services from it
# (host network, one nats-server, the embedded stores on one shared volume), then asks the
# gateway for /readyz and creates and reads a cheese with an OAuth client's token. Checks that
# the image holds no TypeScript, loader or test tooling. Stops and removes everything it
# started, also when it fails.
#
# Docker comes from docker-here (a local engine for machines without a registry: ../shared/tools
# beside the clone, or /work/shared/tools), or else from whatever engine `docker info` reaches:
# the check runs unchanged wherever Docker and a registry exist (docker-env.sh).
#
#   deploy/checks/container.sh          IMAGE (default cheese-store:check), READY_TIMEOUT (s, 90)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
IMAGE=${IMAGE:-cheese-store:check}
READY_TIMEOUT=${READY_TIMEOUT:-90}
say() { echo "container check: $*"; }
fail() { say "FAILED: $*" >&2; exit 1; }

# --- a Docker engine ---------------------------------------------------------------------------
# shellcheck source=deploy/checks/docker-env.sh
source "$repo/deploy/checks/docker-env.sh"
docker_env || fail "no Docker engine (see above)"

# --- everything started below is removed on exit -----------------------------------------------
run_id="cheese-check-$$"
volume="$run_id-data"
containers=()
cleanup() {
  local status=$?
  if ((${#containers[@]})); then docker rm -f "${containers[@]}" >/dev/null 2>&1 || true; fi
  docker volume rm -f "$volume" >/dev/null 2>&1 || true
  ((status == 0)) || say "stopped and removed what it started" >&2
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- the image ---------------------------------------------------------------------------------
started=$SECONDS
say "building $IMAGE from the Dockerfile"
build_log=$(mktemp)
if ! docker build --network host -t "$IMAGE" . >"$build_log" 2>&1; then
  tail -n 40 "$build_log" >&2
  fail "docker build failed (last lines above)"
fi
rm -f "$build_log"
say "built in $((SECONDS - started)) s"

# --- NATS and the five services ----------------------------------------------------------------
free_port() {
  node -e 's=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
nats_image=$("$repo/deploy/checks/nats-image.sh") || fail "no NATS image (deploy/checks/nats-image.sh)"
say "NATS from $nats_image"
nats_port=$(free_port)
containers+=("$run_id-nats")
docker run -d --name "$run_id-nats" --network host "$nats_image" \
  nats-server -js -a 127.0.0.1 -p "$nats_port" >/dev/null

docker volume create "$volume" >/dev/null
docker run --rm -v "$volume:/data" --user root --entrypoint chown "$IMAGE" node:node /data

gateway_port=$(free_port)
client_id=check-client
client_secret=$(node -e 'console.log(require("crypto").randomBytes(16).toString("hex"))')
oauth_clients="[{\"id\":\"$client_id\",\"secret\":\"$client_secret\",\"scopes\":[\"read:cheeses\",\"write:cheeses\"],\"redirectUris\":[],\"plan\":\"enterprise\"}]"
services=(catalogue ordering customer notification gateway)
# Each service's V8 options, as `pnpm start` and the manifests give them: asked of the code.
declare -A node_options=()
listed=$("$repo/node_modules/.bin/tsx" deploy/checks/print-node-options.ts) ||
  fail "could not list each service's V8 options (deploy/checks/print-node-options.ts; pnpm install first)"
while read -r service options; do node_options[$service]=$options; done <<<"$listed"
for service in "${services[@]}"; do
  [[ -n "${node_options[$service]:-}" ]] || fail "no V8 options for $service in apps/launcher/src/node-options.ts"
  containers+=("$run_id-$service")
  docker run -d --name "$run_id-$service" --network host -v "$volume:/data" \
    -e SERVICE="$service" -e NODE_OPTIONS="${node_options[$service]}" \
    -e NATS_URL="nats://127.0.0.1:$nats_port" \
    -e HEALTH_HOST=127.0.0.1 -e HEALTH_PORT="$(free_port)" \
    -e GATEWAY_HOST=127.0.0.1 -e GATEWAY_PORT="$gateway_port" \
    -e PUBLIC_URL="http://127.0.0.1:$gateway_port" -e OAUTH_CLIENTS="$oauth_clients" \
    "$IMAGE" >/dev/null
done
say "started nats ($nats_image) and ${services[*]}; gateway on 127.0.0.1:$gateway_port"

show_logs() {
  for service in "${services[@]}"; do
    echo "----- $service (last 12 lines)" >&2
    docker logs --tail 12 "$run_id-$service" 2>&1 | sed 's/^/  /' >&2 || true
  done
}

# --- ready, then one create and one read -------------------------------------------------------
base="http://127.0.0.1:$gateway_port"
deadline=$((SECONDS + READY_TIMEOUT))
started=$SECONDS
until [[ $(curl -s -o /dev/null -w '%{http_code}' "$base/readyz") == 200 ]]; do
  for service in "${services[@]}"; do
    if [[ $(docker inspect -f '{{.State.Running}}' "$run_id-$service") != true ]]; then
      show_logs
      why=$(docker logs "$run_id-$service" 2>&1 | grep -m 1 -iE 'error|invalid' || docker logs --tail 1 "$run_id-$service" 2>&1)
      fail "the $service container exited: $why"
    fi
  done
  if ((SECONDS > deadline)); then
    show_logs
    fail "GET /readyz not 200 within $READY_TIMEOUT s: $(curl -s "$base/readyz")"
  fi
  sleep 0.5
done
say "GET /readyz 200 after $((SECONDS - started)) s"

json_field() { node -e 'let s="";process.stdin.on("data",c=>s+=c).on("end",()=>console.log(JSON.parse(s)[process.argv[1]]??""))' "$1"; }
token=$(curl -fsS -u "$client_id:$client_secret" -d grant_type=client_credentials "$base/oauth/token" |
  json_field access_token) || fail "no token from POST /oauth/token"
created=$(curl -sS -w '\n%{http_code}' -H "authorization: Bearer $token" -H 'content-type: application/json' \
  -d '{"name":"Container Comté","pricePerKg":24}' "$base/v2/cheeses")
[[ ${created##*$'\n'} == 201 ]] || { show_logs; fail "POST /v2/cheeses answered ${created##*$'\n'}: ${created%$'\n'*}"; }
id=$(json_field id <<<"${created%$'\n'*}")
read_back=$(curl -sS -w '\n%{http_code}' -H "authorization: Bearer $token" "$base/v2/cheeses/$id")
[[ ${read_back##*$'\n'} == 200 && ${read_back%$'\n'*} == *'"Container Comté"'* ]] ||
  { show_logs; fail "GET /v2/cheeses/$id answered ${read_back##*$'\n'}: ${read_back%$'\n'*}"; }
say "created cheese $id and read it back"

# --- what the image holds ----------------------------------------------------------------------
cmd=$(docker image inspect -f '{{json .Config.Entrypoint}} {{json .Config.Cmd}}' "$IMAGE")
[[ $cmd != *tsx* && $cmd != *.ts\"* ]] || fail "the image's command runs TypeScript: $cmd"
found=$(docker run --rm --network none --entrypoint sh "$IMAGE" -c '
  find /app -path "*/node_modules" -prune -o -name "*.ts" ! -name "*.d.ts" -print
  find /app/node_modules -maxdepth 3 -type d \( -name tsx -o -name "tsx@*" -o -name typescript \
    -o -name "typescript@*" -o -name testcontainers -o -name "testcontainers@*" \) -print')
[[ -z $found ]] || fail "the image holds TypeScript sources or dev tooling:"$'\n'"$found"
say "image runs $cmd; no .ts entry, no tsx, typescript or testcontainers inside"
say "passed"
