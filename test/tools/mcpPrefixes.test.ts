import fc from 'fast-check';
import { expect, it } from 'vitest';
import { mcpPrefixes } from '../../src/tools/mcp.ts';

// A tool of an MCP Server reaches the Provider as `<prefix>__<tool>`. Two servers' tools can share a name only if
// one prefix could be read as another plus part of a tool's name: so each prefix is distinct, non-empty, and
// holds no `__` nor a `_` at either end, whatever the Player named the servers.
it('gives every server of a turn its own prefix, which never blurs into a tool name', () => {
  const name = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.constantFrom('Search', 'SEARCH', 'search!', '_search_', 'Search 2', 'search_2', '!!!', '', '  '),
  );
  fc.assert(
    fc.property(fc.array(name, { maxLength: 12 }), (names) => {
      const prefixes = mcpPrefixes(names);
      expect(prefixes).toHaveLength(names.length);
      expect(new Set(prefixes).size).toBe(prefixes.length);
      for (const p of prefixes) expect(p).toMatch(/^[a-z0-9]+(_[a-z0-9]+)*$/);
      // The tools of any two servers, however named, never end up with one name.
      const tools = ['add', '_q', 'q', '2__add', '_2__add', 'x'];
      const full = prefixes.flatMap((p) => tools.map((t) => `${p}__${t}`));
      const byServer = new Map<string, number>();
      prefixes.forEach((p, i) => {
        for (const t of tools) {
          const seen = byServer.get(`${p}__${t}`);
          expect(seen === undefined || seen === i).toBe(true);
          byServer.set(`${p}__${t}`, i);
        }
      });
      expect(full.length).toBe(prefixes.length * tools.length);
    }),
    { numRuns: 2000 },
  );
  // The first keeps its name; a later alike one takes the first number free, never another server's own.
  expect(mcpPrefixes(['Search', 'search!', 'Search 2', 'SEARCH'])).toEqual([
    'search',
    'search_3',
    'search_2',
    'search_4',
  ]);
});
