import { defineConfig } from 'vite';

// The web console (docs/console.md): built by `npm run build:console` (npm install runs it) into
// console/dist, which `waymark dev` and `waymark server` serve under /console/.
export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  // The TypeScript client from its sources (its "waymark-source" export), as the root tsconfig does.
  resolve: { conditions: ['waymark-source', 'browser', 'module', 'import', 'default'] },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // No inline scripts or styles: the server's CSP allows only files from its own origin.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  logLevel: 'warn',
});
