import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The Player's web app. Built into dist/client and served by the Express server; `npm run dev:client` serves
// it through Vite with the API proxied to the server on :3000.
export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  build: { outDir: '../dist/client', emptyOutDir: true, sourcemap: true },
  server: {
    port: 5173,
    proxy: { '/api': 'http://127.0.0.1:3000', '/oauth': 'http://127.0.0.1:3000' },
  },
});
