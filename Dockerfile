# syntax=docker/dockerfile:1
# Build stage: `npm ci` installs the dev dependencies and its `prepare` script compiles TypeScript,
# so the sources it compiles are copied first.
FROM node:20-alpine AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bench ./bench
COPY scripts ./scripts
RUN npm ci --no-audit --no-fund && test -f dist/src/bin/flags-proxy.js

# Runtime stage: production dependencies and the compiled output only, as a non-root user.
FROM node:20-alpine
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would compile with tsc, a dev dependency that is not installed here;
# the compiled output comes from the build stage.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
COPY src/server/migrations ./src/server/migrations
COPY src/proxy/status/page ./src/proxy/status/page
COPY examples ./examples
# Unleash Edge's path of its program: Edge's Helm chart probes with `/app/unleash-edge health`.
COPY --chmod=755 docker/unleash-edge ./unleash-edge
USER node
# 3000 under the specification's names (FLAGS_*, UNLEASH_*), 3063 under Unleash Edge's (UPSTREAM_URL + TOKENS,
# offline mode); PORT sets either.
EXPOSE 3000 3063
# Ready (definitions held): /proxy/health on the specification's port, else Edge's /internal-backstage/ready.
HEALTHCHECK --interval=10s --timeout=3s CMD B="${PROXY_BASE_PATH:-$BASE_PATH}"; B="${B:+/${B#/}}"; \
  wget -qO- "http://127.0.0.1:${PORT:-3000}$B/proxy/health" || \
  wget -qO- "http://127.0.0.1:${PORT:-3063}$B/internal-backstage/ready" || exit 1
# The program is the entrypoint, so the container's arguments are its command, as in Unleash Edge's image:
# none (configuration from the environment: FLAGS_URL, FLAGS_API_TOKEN, FLAGS_PROXY_CLIENT_KEYS, … or Unleash
# Edge's UPSTREAM_URL, TOKENS, …), or Edge's `edge`, `offline`, `health`, `ready` with Edge's flags
# (Edge's Helm chart runs `args: [edge]`); see docs/unleash-edge.md.
ENTRYPOINT ["node", "/app/dist/src/bin/flags-proxy.js"]
