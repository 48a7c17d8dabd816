import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';

/**
 * One wire contract (ADR 0034): every JSON answer of the server is written by `respond` (src/http/respond.ts,
 * which encodes through a src/wire/ schema) or, for an error, by `sendError` (src/http/errors.ts); the web app
 * reads every answer it uses through `fetchAs`, which decodes through the same schema.
 */

const ROOT = path.join(import.meta.dirname, '../..');

function files(dir: string, ext: RegExp): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && ext.test(e.name))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
}

/** The two writers of JSON answers. */
const WRITERS = new Set(['src/http/respond.ts', 'src/http/errors.ts']);

/**
 * Answers outside the app's contract, each with its reason, and how many `.json(` calls it makes. A new one needs
 * a line here (and a reason the web app never decodes it).
 */
const OUTSIDE: Record<string, { calls: number; why: string }> = {
  'src/auth/routes.ts': {
    calls: 2,
    why: "OAuth client metadata and JWKS: the OAuth spec's documents, made by @atproto/oauth-client, read by authorization servers",
  },
  'src/app.ts': { calls: 2, why: 'health and readiness probes, read by the load balancer' },
};

/** `x.json(…)` with an argument: a Response being written (not `sql.json(v)`, `express.json(opts)`, `await res.json()`). */
const JSON_WRITE = /(?<![\w$])(?!(?:sql|tx|express)\.)[\w$]+(?:\([^()]*\))?\s*\.json\((?!\s*\))/g;
const jsonWrites = (source: string) =>
  [...source.matchAll(JSON_WRITE)].filter((m) => !/^(sql|tx|express)\b/.test(m[0]));

it('every JSON answer of the server is written through the wire contract', () => {
  const found: Record<string, number> = {};
  for (const file of files('src', /\.ts$/)) {
    if (WRITERS.has(file)) continue;
    const n = jsonWrites(readFileSync(path.join(ROOT, file), 'utf8')).length;
    if (n) found[file] = n;
  }
  const expected = Object.fromEntries(Object.entries(OUTSIDE).map(([f, o]) => [f, o.calls]));
  expect(found, 'answer with respond(res, Schema, body), Schema from src/wire/').toEqual(expected);
});

it('the detector sees the ways a route writes JSON', () => {
  const seen = (s: string) => jsonWrites(s).length;
  expect(seen('res.json({ a: 1 });')).toBe(1);
  expect(seen('res.status(201).json({ a: 1 });')).toBe(1);
  expect(seen("res.set('Cache-Control', 'x').json({ thread });")).toBe(1);
  expect(seen('res\n  .status(202)\n  .json({ status });')).toBe(1);
  expect(seen('tx.json(r.parts); sql.json(v); express.json({ limit }); await res.json();')).toBe(0);
});

it('the web app decodes every answer it reads: no unchecked `api<T>` cast, no JSON read past api.ts', () => {
  for (const file of files('client/src', /\.tsx?$/)) {
    const source = readFileSync(path.join(ROOT, file), 'utf8');
    expect(source, file).not.toMatch(/\bapi</);
    // The reading pages' own bundle carries no zod (reader.tsx): it reads the thread as its contract's type.
    if (file === 'client/src/api.ts' || file === 'client/src/reader.tsx') continue;
    expect(source, `${file}: read answers with fetchAs(Schema, path)`).not.toMatch(/\.json\(\)/);
  }
});
