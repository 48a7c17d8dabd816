import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';

/**
 * Each room (a folder of src/) owns its tables: only its SQL names them, and other rooms call its queries
 * (DESIGN.md: "No feature room reaches into another's tables"; issue 26). The SQL is read from the template
 * literals of each file (`sql\`…\``), the table names from after `from`, `join`, `into`, `update`.
 */

const ROOT = path.join(import.meta.dirname, '../..');

/** Who owns each table the migrations create. A new table needs a line here (the test says so). */
const OWNER: Record<string, string> = {
  players: 'auth',
  sessions: 'auth',
  oauth_sessions: 'auth',
  oauth_states: 'auth',
  village_settings: 'village',
  npcs: 'village',
  provider_keys: 'village',
  grants: 'village',
  conversations: 'conversations',
  conversation_participants: 'conversations',
  messages: 'conversations',
  daily_spend: 'conversations',
  village_spend: 'conversations',
  discarded_usage: 'conversations',
  turn_log: 'conversations',
  attachments: 'attachments',
  blobs: 'attachments',
  blob_chunks: 'attachments',
  mcp_servers: 'tools',
  skills: 'tools',
  memories: 'tools',
  sandbox_files: 'tools',
  sandbox_versions: 'tools',
  lorebooks: 'cards',
  npc_lorebooks: 'cards',
  publications: 'publish',
  publication_drafts: 'publish',
  publication_records: 'publish',
  reply_frames: 'replies',
  index_actors: 'appview',
  index_messages: 'appview',
  index_sessions: 'appview',
  index_state: 'appview',
  index_thread_totals: 'appview',
  index_tombstones: 'appview',
  player_blocks: 'moderation',
  takedowns: 'moderation',
  thread_reports: 'moderation',
  player_storage: 'storage',
  leases: 'db',
  rate_limits: 'http',
  labels: 'labels',
  labeler_cursors: 'labels',
};

const tablesOfMigrations = () =>
  new Set(
    readdirSync(path.join(ROOT, 'migrations')).flatMap((f) =>
      [
        ...readFileSync(path.join(ROOT, 'migrations', f), 'utf8').matchAll(
          /create\s+(?:unlogged\s+)?table\s+(?:if\s+not\s+exists\s+)?([a-z_][a-z0-9_]*)/gi,
        ),
      ].map((m) => m[1]!.toLowerCase()),
    ),
  );

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'generated' ? [] : sourceFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });

/** The tables a file's SQL names: inside template literals, after a keyword that is followed by a table. */
export function tablesNamed(source: string, known: Set<string>): Set<string> {
  const named = new Set<string>();
  for (const literal of source.match(/`[^`]*`/g) ?? []) {
    for (const m of literal.matchAll(/\b(?:from|join|into|update)\s+([a-z_][a-z0-9_]*)/gi)) {
      const table = m[1]!.toLowerCase();
      if (known.has(table)) named.add(table);
    }
  }
  return named;
}

it('finds a table named in a query, and not one named in prose', () => {
  const known = new Set(['messages', 'npcs']);
  expect(tablesNamed('sql`select id from messages m join npcs n on true`', known)).toEqual(known);
  expect(tablesNamed("// read from messages\nimport { x } from 'messages';", known)).toEqual(new Set());
});

it('every table has an owner, and a room’s SQL names only its own tables', () => {
  const tables = tablesOfMigrations();
  expect([...tables].filter((t) => !OWNER[t])).toEqual([]);
  const crossings: string[] = [];
  for (const file of sourceFiles(path.join(ROOT, 'src'))) {
    const rel = path.relative(ROOT, file).split(path.sep).join('/');
    const room = rel.split('/')[1]!.replace(/\.ts$/, '');
    for (const table of tablesNamed(readFileSync(file, 'utf8'), tables)) {
      if (OWNER[table] !== room)
        crossings.push(
          `${rel} names ${table} (${OWNER[table]}'s): call a query or compose a fragment of ${OWNER[table]}/ instead`,
        );
    }
  }
  expect(crossings).toEqual([]);
});
