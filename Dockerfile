# Forge worker image (docker-compose.yml's forge-worker). Build stage compiles TypeScript; the runtime stage keeps
# production dependencies, the compiled code and the drizzle migrations that openDatabase applies at start-up.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The lock file is written where the registry serves only this platform's optional binaries, so npm ci may call it
# out of sync; npm install then installs the same locked versions (as .ci/run does). package.json's prepare builds
# only where scripts/build.js is, so it does nothing in this layer of dependencies; `npm run build` below does it.
RUN npm ci --no-audit --no-fund || npm install --no-audit --no-fund --no-save
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bench ./bench
COPY scripts ./scripts
RUN npm run build

FROM node:20-bookworm-slim
ENV NODE_ENV=production
# The sandbox's containment: every tool run and promotion stage gets a read-only filesystem view (bubblewrap) and a
# network namespace of its own with user-mode networking (slirp4netns, routes set with iproute2, allowlists with
# nftables). Without them Forge refuses to run tools (README, "What a tool can reach").
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap slirp4netns nftables iproute2 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN (npm ci --omit=dev --no-audit --no-fund || npm install --omit=dev --no-audit --no-fund --no-save) && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
# Plain-JS entries run from src/: the sandbox's harness (nothing in the child compiles TypeScript) and the thread
# that hosts embedded PGlite (src/db/pglite-thread.cjs).
COPY src ./src
COPY drizzle ./drizzle
# Sandbox processes run as this unprivileged user too.
RUN mkdir -p /var/lib/forge && chown node:node /var/lib/forge
USER node
ENV FORGE_HOME=/var/lib/forge
CMD ["node", "bin/forge.js", "worker"]
