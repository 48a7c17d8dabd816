# AgentsVille for production: `docker compose -f deploy/compose.yaml up` runs two instances behind Caddy on one
# PostgreSQL (README, "Production"). The image runs as an unprivileged user; nothing is kept on its disk that
# another instance needs (attachments and sandbox files are in PostgreSQL; a sandbox's working copy is a cache).
FROM node:22-bookworm-slim AS build
WORKDIR /app
# patches/ first: the install applies them (postinstall, ADR 0104).
COPY package.json package-lock.json ./
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build \
  # The link card draws with the .woff files of weights 400 and 700 only: the other weights and the .woff2
  # copies of the CJK fonts are over 100 MB the image need not carry.
  && find node_modules/@fontsource/noto-sans-sc node_modules/@fontsource/noto-sans-kr -name '*.woff*' \
     ! -name '*-400-normal.woff' ! -name '*-700-normal.woff' -delete

FROM node:22-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 DATA_DIR=/data
RUN groupadd --system agentsville && useradd --system --gid agentsville --home /app agentsville \
  && mkdir /data && chown agentsville:agentsville /data
WORKDIR /app
COPY --from=build --chown=agentsville:agentsville /app /app
USER agentsville
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
  CMD node -e "fetch('http://127.0.0.1:3000/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
# The client is built above: start the server alone (`npm start` would build it again). The flag is
# scripts/node-flags.mjs's on Node 22 (ADR 0079).
CMD ["node", "--experimental-async-context-frame", "--import", "tsx", "src/main.ts"]
