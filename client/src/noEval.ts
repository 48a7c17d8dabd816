import { z } from 'zod';

// zod compiles fast parsers with `new Function` when it may, deciding as each schema is built; the
// Content-Security-Policy forbids eval, so it is told not to try (the probe alone is a reported violation).
// Imported first by main.tsx, before any module that builds a schema.
z.config({ jitless: true });
