import { TID } from '@atproto/common-web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indexRecords } from '../../src/appview/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { textScript } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

const ADMIN = 'did:plc:moderationadmin00000000';
const AUTHOR = 'did:plc:moderationauthor0000000';
const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
let app: TestApp;
let admin: { cookie: string };
let player: { cookie: string; did: string };
let uri: string;
let rkey: string;

beforeAll(async () => {
  app = await startTestApp({ adminDids: [ADMIN] });
  admin = await app.signIn(ADMIN);
  player = await app.signIn();
  // A published thread in the index, its author's handle verified (no network lookup).
  rkey = TID.nextStr();
  uri = `at://${AUTHOR}/click.aligned.chat.session/${rkey}`;
  await indexRecords(app.db.sql, AUTHOR, [
    {
      collection: 'click.aligned.chat.session',
      rkey,
      cid: CID,
      record: { $type: 'click.aligned.chat.session', title: 'Maps', createdAt: '2026-11-01T00:00:00.000Z' },
    },
    {
      collection: 'click.aligned.chat.message',
      rkey: TID.nextStr(),
      cid: CID,
      record: {
        $type: 'click.aligned.chat.message',
        session: uri,
        role: 'user',
        text: 'Where are the maps?',
        createdAt: '2026-11-01T00:00:00.000Z',
      },
    },
  ]);
  await app.db
    .sql`insert into index_actors (did, handle, verified_at) values (${AUTHOR}, 'author.test', now())
    on conflict (did) do update set handle = excluded.handle, verified_at = now()`;
});
afterAll(() => app?.close());

/** What a reader sees of the thread: XRPC getThread, the reader's API, and everyone's list. */
async function visible() {
  const xrpc = await app.api(`/xrpc/click.aligned.chat.getThread?uri=${encodeURIComponent(uri)}`);
  const reader = await app.api(`/api/reader/threads/${AUTHOR}/${rkey}`);
  const list = (await (await app.api('/xrpc/click.aligned.chat.listSessions?limit=100')).json()) as {
    sessions: { uri: string }[];
  };
  return {
    xrpc: xrpc.status === 200,
    reader: reader.status === 200,
    listed: list.sessions.some((s) => s.uri === uri),
  };
}
const shown = { xrpc: true, reader: true, listed: true };
const gone = { xrpc: false, reader: false, listed: false };

const asAdmin = (path: string, body?: unknown) => app.api(path, { cookie: admin.cookie, body });

describe('an admin hides a thread or an author, and shows it again', () => {
  it('only an admin may', async () => {
    const res = await app.api('/api/admin/takedowns', {
      cookie: player.cookie,
      body: { subject: uri, reason: 'no' },
    });
    expect(res.status).toBe(403);
    expect((await app.api('/api/admin/takedowns', { body: { subject: uri, reason: 'no' } })).status).toBe(
      401,
    );
  });

  it('a thread, then its author: hidden from XRPC, the reader and the list; lifted, served again; all audited', async () => {
    expect(await visible()).toEqual(shown);
    for (const subject of [uri, AUTHOR]) {
      const taken = await asAdmin('/api/admin/takedowns', { subject, reason: 'Spam in the thread' });
      expect(taken.status).toBe(201);
      const { takedown } = (await taken.json()) as { takedown: { id: string } };
      expect(await visible()).toEqual(gone);
      expect((await asAdmin('/api/admin/takedowns', { subject, reason: 'twice' })).status).toBe(409);
      const lifted = await asAdmin(`/api/admin/takedowns/${takedown.id}/lift`, { reason: 'Reviewed: fine' });
      expect(lifted.status).toBe(200);
      expect(await visible()).toEqual(shown);
    }
    const { takedowns } = (await (await asAdmin('/api/admin/takedowns')).json()) as {
      takedowns: Record<string, unknown>[];
    };
    expect(takedowns.map((t) => t.subject).sort()).toEqual([uri, AUTHOR].sort());
    for (const t of takedowns)
      expect(t).toMatchObject({
        reason: 'Spam in the thread',
        createdBy: ADMIN,
        createdAt: expect.any(String),
        liftedBy: ADMIN,
        liftedAt: expect.any(String),
        liftReason: 'Reviewed: fine',
      });
  });

  it('refuses a subject that is neither a thread nor a DID', async () => {
    const res = await asAdmin('/api/admin/takedowns', { subject: 'https://example.com', reason: 'x' });
    expect(res.status).toBe(400);
  });
});

describe('an admin blocks a Player from starting turns', () => {
  it('a blocked Player is refused before any Provider call; lifted, their turns run again', async () => {
    const { conversationId } = await setupConversation(app, player.cookie);
    const blocked = await asAdmin('/api/admin/blocks', {
      did: player.did,
      reason: 'Abuse of the Village budget',
    });
    expect(blocked.status).toBe(201);
    const { block } = (await blocked.json()) as { block: { id: string; did: string } };
    expect(block.did).toBe(player.did);
    // A Player never signed in is named by no block; one already blocked is blocked once.
    expect((await asAdmin('/api/admin/blocks', { did: 'did:plc:nobodyhere', reason: 'x' })).status).toBe(404);
    const again = await asAdmin('/api/admin/blocks', { did: player.did, reason: 'Again' });
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe('ALREADY_BLOCKED');
    const calls = app.fake.requests.length;
    const refused = await app.api(`/api/conversations/${conversationId}/messages`, {
      cookie: player.cookie,
      body: { text: 'Hello?' },
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('PLAYER_BLOCKED');
    expect(app.fake.requests.length).toBe(calls);

    const lifted = await asAdmin(`/api/admin/blocks/${block.id}/lift`, { reason: 'Talked it over' });
    expect(lifted.status).toBe(200);
    expect(((await lifted.json()) as { block: { did: string } }).block.did).toBe(player.did);
    app.fake.enqueue(textScript('Welcome back.'));
    const frames = await collectFrames(
      await app.api(`/api/conversations/${conversationId}/messages`, {
        cookie: player.cookie,
        body: { text: 'Hello?' },
      }),
    );
    expect(frames.at(-1)).toMatchObject({ type: 'finish', status: 'complete' });
    const { blocks } = (await (await asAdmin('/api/admin/blocks')).json()) as {
      blocks: Record<string, unknown>[];
    };
    expect(blocks[0]).toMatchObject({ did: player.did, createdBy: ADMIN, liftedBy: ADMIN });
  });
});

describe('a reader reports a thread', () => {
  it('without an account, stored for the admins, a few a minute per address', async () => {
    const send = (reason: string) => app.api('/api/reader/reports', { body: { uri, reason } });
    const wrong = await app.api('/api/reader/reports', {
      body: { uri: 'https://example.com/t/1', reason: 'x' },
    });
    expect(wrong.status).toBe(400);
    for (let i = 0; i < 4; i++) expect((await send(`Report ${i}`)).status).toBe(201);
    const sixth = await send('One too many');
    expect(sixth.status).toBe(429);
    const { reports } = (await (await asAdmin('/api/admin/reports')).json()) as {
      reports: { subject: string; reason: string; reporterDid: string | null }[];
    };
    expect(reports.filter((r) => r.subject === uri).map((r) => r.reason)).toHaveLength(4);
    expect(reports[0]).toMatchObject({ subject: uri, reporterDid: null });
    expect((await app.api('/api/admin/reports', { cookie: player.cookie })).status).toBe(403);
  });
});
