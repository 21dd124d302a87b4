import { defineConfig } from "vitest/config";
import { svelte } from "@sveltejs/vite-plugin-svelte";

// The app is served by Tauri from ui/dist (frontendDist "../ui/dist") under a
// strict CSP (script-src 'self'): relative asset URLs, no inline scripts, no
// remote content. Vite's production output satisfies that as is.
export default defineConfig(({ mode }) => ({
  plugins: [svelte()],
  base: "./",
  clearScreen: false,
  server: { port: 1420, strictPort: true },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // Keep the module-preload polyfill out: it would be an inline script.
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1024,
  },
  // Component tests mount Svelte in jsdom, which needs its browser build.
  resolve: mode === "test" ? { conditions: ["browser"] } : undefined,
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
}));
