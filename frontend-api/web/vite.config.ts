import { defineConfig } from "vitest/config";

// The bundle is embedded into the Go binary by package webui
// (frontend-api/webui), which serves it under /static/ and answers every
// page route with index.html. `npm run dev` proxies the API to a running
// `tbhub serve` (TBHUB_DEV_SERVER, default http://127.0.0.1:6006).
const api = process.env.TBHUB_DEV_SERVER ?? "http://127.0.0.1:6006";

export default defineConfig({
  base: "/static/",
  build: {
    outDir: "../webui/dist",
    // dist/ also holds the committed placeholder; scripts/build-ui.sh
    // removes the previous bundle itself.
    emptyOutDir: false,
    target: "es2022",
    sourcemap: false,
    chunkSizeWarningLimit: 300,
  },
  server: {
    proxy: {
      "^/experiment/[^/]+/data/": api,
      "/api/": api,
    },
  },
  test: {
    include: ["src/**/*.test.ts"],
  },
});
