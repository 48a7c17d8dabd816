import path from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The Player's web app (index.html → main.tsx) and the reading pages' own bundle (reader.tsx, hydrating the
// server's HTML: src/web/readerPages.ts finds its files in the manifest). Built into dist/client and served by the
// Express server; `npm run dev:client` serves the app through Vite with the API proxied to the server on :3000.
export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  build: {
    outDir: '../dist/client',
    emptyOutDir: true,
    sourcemap: true,
    manifest: true,
    // Vite's 500 kB warning holds for production. The test suites' build (NODE_ENV=test) bundles React's
    // development build — larger, and what reports a hydration mismatch in detail — so it is allowed more.
    chunkSizeWarningLimit: process.env.NODE_ENV === 'test' ? 1000 : 500,
    rollupOptions: {
      input: {
        app: path.resolve(import.meta.dirname, 'index.html'),
        reader: path.resolve(import.meta.dirname, 'src/reader.tsx'),
      },
    },
  },
  server: {
    port: 5173,
    proxy: { '/api': 'http://127.0.0.1:3000', '/oauth': 'http://127.0.0.1:3000' },
  },
});
