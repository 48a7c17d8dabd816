import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The Player's web app. Built into dist/client and served by the Express server; `npm run dev:client` serves
// it through Vite with the API proxied to the server on :3000.
export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  // The app chunk carries React, the router, TanStack Query, Markdown and zod; charts load with their page.
  build: { outDir: '../dist/client', emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 1000 },
  server: {
    port: 5173,
    proxy: { '/api': 'http://127.0.0.1:3000', '/oauth': 'http://127.0.0.1:3000' },
  },
});
