# syntax=docker/dockerfile:1
# One image for every service; SERVICE (gateway, catalogue, ordering, customer, notification)
# picks which one a container runs. Build: docker build -t cheese-store .
ARG NODE_MAJOR=22

FROM node:${NODE_MAJOR}-bookworm-slim AS build
# argon2 is compiled from source (see scripts/build-argon2.mjs).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
RUN npm install -g pnpm@10.34.9
WORKDIR /app
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json .npmrc ./
RUN pnpm fetch --prod
COPY . .
RUN pnpm install --offline --prod --frozen-lockfile \
 && rm -rf e2e bench deploy .ci docs

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
COPY --from=build --chown=node:node /app /app
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8080 9000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9000/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# tini forwards SIGTERM so each service drains (stops taking work, finishes, closes) within 10 s.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "--import", "tsx", "packages/launcher/src/service.ts"]
