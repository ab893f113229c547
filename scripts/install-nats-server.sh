#!/usr/bin/env bash
# Puts a nats-server of the line the deployment runs (deploy/nats/line) on PATH, in /usr/local/bin
# (or the directory given as $1), unless the one on PATH already is of that line.
#
# The deployment pins the official image of that line (deploy/docker-compose.yml, the dev overlay:
# nats:<line>-alpine), and the suites, `pnpm start` and `pnpm cluster` run a nats-server from PATH:
# so the tests run the servers' line that production runs. Debian stable's own nats-server (2.9 in
# bookworm) behaves otherwise where it matters here (consumer updates, replicated consumers).
#
# The binary comes from Debian testing's (forky) nats-server package, downloaded by apt from a source list
# of its own (signatures checked against Debian's archive keyring as for any apt download; the
# machine's apt sources, lists and installed packages are left as they are), and only the binary is
# taken out of it (the package itself wants testing's systemd and libc). Needs root, apt-get and
# dpkg-deb: a Debian or Ubuntu machine. Elsewhere, put an official nats-server release of the line
# on PATH.
set -euo pipefail

# The nats-server release line the deployment pins; `pnpm check:deploy` holds the images to it.
NATS_LINE=$(cat "$(dirname "$0")/../deploy/nats/line")
into=${1:-/usr/local/bin}

line_of() { # "nats-server: v2.15.1" → 2.15
  "$1" --version 2>/dev/null | sed -nE 's/^nats-server: v([0-9]+\.[0-9]+)\..*/\1/p'
}

if current=$(command -v nats-server) && [[ "$(line_of "$current")" == "$NATS_LINE" ]]; then
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/deb"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian forky main" \
  >"$work/sources.list"
apt_options=(
  -o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o Dir::State::Status=/dev/null
  -o APT::Sandbox::User=root
)
apt-get "${apt_options[@]}" -qq update
version=$(apt-cache "${apt_options[@]}" policy nats-server | sed -nE 's/^ *Candidate: (.*)$/\1/p')
if [[ "$version" != "$NATS_LINE".* ]]; then
  echo "install-nats-server: Debian testing has nats-server ${version:-none}, not of the $NATS_LINE line." >&2
  echo "Run the suites on the line it has, then move deploy/nats/line and the deployment's images to it." >&2
  exit 1
fi
(cd "$work/deb" && apt-get "${apt_options[@]}" -qq download "nats-server=$version")
dpkg-deb -x "$work"/deb/nats-server_*.deb "$work/root"
mkdir -p "$into"
install -m 0755 "$work/root/usr/sbin/nats-server" "$into/nats-server"
echo "install-nats-server: $("$into/nats-server" --version) in $into (Debian testing's $version)"
if [[ "$(command -v nats-server)" != "$into/nats-server" ]]; then
  echo "install-nats-server: $(command -v nats-server) comes first on PATH; put $into before it." >&2
  exit 1
fi
