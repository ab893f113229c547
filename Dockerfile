# syntax=docker/dockerfile:1
# One image for every service; SERVICE (gateway, catalogue, ordering, customer, notification)
# picks which one a container runs. Build: docker build -t cheese-store .
# It runs the built JavaScript with plain node: no TypeScript, no loader, no dev dependency.
ARG NODE_MAJOR=22

# What `pnpm install` reads, and nothing else: the dependency layers below (native modules
# compile for minutes) are reused until a package.json or the lockfile changes.
FROM node:${NODE_MAJOR}-bookworm-slim AS manifests
WORKDIR /src
COPY . .
# /prod leaves out the projects only tests, integrators and the cluster harness use (their
# dependencies, testcontainers among them, stay out of the image); @cheese/client stays, the
# console (apps/console, beside each gateway) calls the API through it.
RUN mkdir -p /all /prod \
 && cp --parents package.json pnpm-lock.yaml pnpm-workspace.yaml .npmrc scripts/build-argon2.mjs \
      patches/*.patch */*/package.json /all/ \
 && cp -a /all/. /prod/ \
 && rm -rf /prod/packages/testing /prod/packages/service-testing /prod/apps/cluster

FROM node:${NODE_MAJOR}-bookworm-slim AS deps
# argon2 and better-sqlite3 are compiled from source (see scripts/build-argon2.mjs).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
RUN npm install -g pnpm@10.34.9
WORKDIR /app
COPY --from=manifests /all/ ./
RUN pnpm install --frozen-lockfile

# Production dependencies only, installed apart from the build's, from the same store and without
# install scripts: the native modules compiled above are not compiled again, their binaries copied.
FROM deps AS prod-deps
COPY --from=manifests /prod/ /prod/
WORKDIR /prod
RUN pnpm install --prod --frozen-lockfile --offline --ignore-scripts \
 && cd node_modules/.pnpm \
 && for gyp in */node_modules/*/binding.gyp */node_modules/@*/*/binding.gyp; do \
      [ -e "$gyp" ] || continue; \
      module="${gyp%/binding.gyp}"; \
      mkdir -p "$module/build/Release"; \
      cp "/app/node_modules/.pnpm/$module/build/Release/"*.node "$module/build/Release/"; \
    done

FROM deps AS build
COPY . .
RUN node scripts/build.mjs --force
COPY --from=prod-deps /prod/ /runtime/
# The runtime tree: production node_modules, each project's package.json and dist/, no source.
RUN for project in /runtime/apps/* /runtime/packages/* /runtime/services/*; do \
      cp -a "/app/${project#/runtime/}/dist" "$project/"; \
    done \
 && rm -rf /runtime/scripts

FROM node:${NODE_MAJOR}-bookworm-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    GATEWAY_HOST=0.0.0.0 \
    GATEWAY_PORT=8080 \
    HEALTH_PORT=9000 \
    HEALTH_HOST=0.0.0.0 \
    DATA_DIR=/data
WORKDIR /app
# Owned by root, read-only to the service; only /data is the service's to write.
COPY --from=build /runtime/ /app/
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8080 9000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.HEALTH_PORT}/healthz`).then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# tini forwards SIGTERM so each service drains (stops taking work, finishes, closes) within 10 s.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "apps/launcher/dist/service.js"]
