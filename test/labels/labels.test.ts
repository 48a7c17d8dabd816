import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { TID } from '@atproto/common-web';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { indexRecords } from '../../src/appview/index.ts';
import { metrics } from '../../src/metrics/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { startLabeler } from '../support/labeler.ts';
import { freePort } from '../support/ports.ts';
import { until } from '../support/until.ts';

const AUTHOR = 'did:plc:labelsauthor000000000000';
const CID = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm';
let app: TestApp;
let labeler: Awaited<ReturnType<typeof startLabeler>>;
let uri: string;
let rkey: string;
const TURNS = ['Where is the old mill?', 'Past the bridge, where the river bends.', 'And the ferry?'];
const turnUris: string[] = [];

beforeAll(async () => {
  labeler = await startLabeler();
  // Offline mode: the labeler's did:web is on loopback, which only the offline network may reach.
  app = await startTestApp(
    {},
    {
      ATPROTO_NETWORK: 'local',
      DATA_DIR: await mkdtemp(path.join(os.tmpdir(), 'av-labels-')),
      LOCALNET_PDS_PORT: String(await freePort()),
      LOCALNET_PLC_PORT: String(await freePort()),
      LABELERS: labeler.did,
    },
    { labels: { backoffFirstMs: 50, retryMs: 100 } },
  );
  await app.running.labels.leading;
  rkey = TID.nextStr();
  uri = `at://${AUTHOR}/click.aligned.chat.session/${rkey}`;
  await indexRecords(app.db.sql, AUTHOR, [
    {
      collection: 'click.aligned.chat.session',
      rkey,
      cid: CID,
      record: { $type: 'click.aligned.chat.session', title: 'Maps', createdAt: '2026-11-01T00:00:00.000Z' },
    },
  ]);
  for (const [i, text] of TURNS.entries()) {
    const turnKey = TID.nextStr();
    turnUris.push(`at://${AUTHOR}/click.aligned.chat.message/${turnKey}`);
    await indexRecords(app.db.sql, AUTHOR, [
      {
        collection: 'click.aligned.chat.message',
        rkey: turnKey,
        cid: CID,
        record: {
          $type: 'click.aligned.chat.message',
          session: uri,
          role: i % 2 ? 'assistant' : 'user',
          text,
          model: i % 2 ? 'openai/gpt-test' : undefined,
          createdAt: '2026-11-01T00:00:00.000Z',
        },
      },
    ]);
  }
  await app.db
    .sql`insert into index_actors (did, handle, verified_at) values (${AUTHOR}, 'author.test', now())
    on conflict (did) do update set handle = excluded.handle, verified_at = now()`;
}, 120_000);
afterAll(async () => {
  await app?.close();
  await labeler?.close();
});

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
const SECONDS = { timeout: 5000, interval: 100 };

const cursor = async () => {
  const [row] = await app.db.sql<{ cursor: string }[]>`select cursor::text from labeler_cursors
    where did = ${labeler.did}`;
  return row ? Number(row.cursor) : undefined;
};
const refused = async (reason: string) =>
  (await metrics.labelsRefused.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0;

describe("a followed labeler's labels hide what they label, at read time", () => {
  it('`!hide` on a thread hides it within seconds; its negation shows it again', async () => {
    expect(await visible()).toEqual(shown);
    await labeler.label({ uri, val: '!hide' });
    await expect.poll(visible, SECONDS).toEqual(gone);
    const seq = await labeler.label({ uri, val: '!hide', neg: true });
    await expect.poll(visible, SECONDS).toEqual(shown);
    expect(await cursor()).toBe(seq);
  });

  it('`!takedown` on the author hides their threads; its negation shows them again', async () => {
    await labeler.label({ uri: AUTHOR, val: '!takedown' });
    await expect.poll(visible, SECONDS).toEqual(gone);
    await labeler.label({ uri: AUTHOR, val: '!takedown', neg: true });
    await expect.poll(visible, SECONDS).toEqual(shown);
  });

  it('a label signed with another key is seen, refused and not kept; the stream goes on past it', async () => {
    const before = await refused('signature');
    const seq = await labeler.forged({ uri, val: '!hide' });
    // The forged frame was read (the cursor moved past it) and refused (counted), and changed nothing.
    await expect.poll(cursor, SECONDS).toBe(seq);
    expect(await refused('signature')).toBe(before + 1);
    const kept = await app.db.sql`select 1 from labels where uri = ${uri} and not neg`;
    expect(kept.length).toBe(0);
    expect(await visible()).toEqual(shown);
  });

  it('labels PostgreSQL would refuse (a date of year -5000, a NUL) are refused as malformed; the stream goes on past them', async () => {
    const before = await refused('shape');
    await labeler.label({ uri, val: '!hide', cts: '-005000-01-01T00:00:00.000Z' });
    await labeler.label({ uri, val: '!hide\u0000' });
    await labeler.label({ uri: `${uri}\u0000`, val: '!hide' });
    const seq = await labeler.label({ uri, val: '!hide', cts: '+010000-01-01T00:00:00.000Z' });
    await expect.poll(cursor, SECONDS).toBe(seq);
    expect(await refused('shape')).toBe(before + 4);
    expect(await visible()).toEqual(shown);
    // The next good label is taken at once: nothing was left to read again.
    await labeler.label({ uri, val: '!hide' });
    await expect.poll(visible, SECONDS).toEqual(gone);
    await labeler.label({ uri, val: '!hide', neg: true });
    await expect.poll(visible, SECONDS).toEqual(shown);
  });

  it('`!warn` does not hide: the reader is told of it', async () => {
    await labeler.label({ uri, val: '!warn' });
    const labelsOf = async () => {
      const res = await app.api(`/api/reader/threads/${AUTHOR}/${rkey}`);
      return ((await res.json()) as { thread: { labels: { val: string }[] } }).thread.labels.map(
        (l) => l.val,
      );
    };
    await expect.poll(labelsOf, SECONDS).toEqual(['!warn']);
    expect(await visible()).toEqual(shown);
    await labeler.label({ uri, val: '!warn', neg: true });
    await expect.poll(labelsOf, SECONDS).toEqual([]);
  });

  it('after the connection drops, the follower resumes from its stored cursor', async () => {
    const last = await cursor();
    const asked = labeler.cursors.length;
    labeler.drop();
    await until('a new subscription', async () => labeler.cursors.length > asked);
    expect(labeler.cursors.at(-1)).toBe(String(last));
    await labeler.label({ uri, val: '!hide' });
    await expect.poll(visible, SECONDS).toEqual(gone);
    await labeler.label({ uri, val: '!hide', neg: true });
    await expect.poll(visible, SECONDS).toEqual(shown);
  });

  it('a frame that could not be stored is read again from the stored cursor, never skipped', async () => {
    // The database refuses the frame (its table is away): the follower must not move past it.
    await app.db.sql`alter table labels rename to labels_away`;
    const asked = labeler.cursors.length;
    await labeler.label({ uri, val: '!hide' });
    await until('the follower to reconnect', async () => labeler.cursors.length > asked);
    await app.db.sql`alter table labels_away rename to labels`;
    await expect.poll(visible, SECONDS).toEqual(gone);
    await labeler.label({ uri, val: '!hide', neg: true });
    await expect.poll(visible, SECONDS).toEqual(shown);
  });
});

describe("a followed labeler's labels on one turn", () => {
  interface Turn {
    uri: string;
    record: { text?: string; withheld?: boolean; model?: string; role: string };
  }
  /** The thread over XRPC (its turns and ETag) and the reader's API (its turns, notices and holes). */
  async function read() {
    const res = await app.api(`/xrpc/click.aligned.chat.getThread?uri=${encodeURIComponent(uri)}`);
    const xrpc = (await res.json()) as { messages: Turn[] };
    const reader = (await (await app.api(`/api/reader/threads/${AUTHOR}/${rkey}`)).json()) as {
      thread: { messages: (Turn & { hidden?: true; labels: { src: string; val: string }[] })[] };
    };
    return { etag: res.headers.get('etag'), xrpc: xrpc.messages, reader: reader.thread.messages };
  }
  const texts = (turns: Turn[]) => turns.map((m) => (m.record.withheld ? 'hole' : m.record.text));
  // One failing test leaves no label in effect behind it for the next.
  afterEach(async () => {
    await app.db.sql`delete from labels where uri = any(${turnUris})`;
  });

  it('`!hide` on a turn serves that turn as a hole within seconds, the rest stays; negation brings it back', async () => {
    const before = await read();
    expect(texts(before.xrpc)).toEqual(TURNS);
    expect(before.etag).toBeTruthy();
    const middle = turnUris[1]!;

    await labeler.label({ uri: middle, val: '!hide' });
    const holed = [TURNS[0], 'hole', TURNS[2]];
    await expect.poll(async () => texts((await read()).xrpc), SECONDS).toEqual(holed);
    const hidden = await read();
    // The same hole a withheld turn is: who spoke and when, nothing of what was said (nor the model).
    expect(hidden.xrpc[1]).toEqual({
      uri: middle,
      cid: CID,
      record: {
        $type: 'click.aligned.chat.message',
        session: uri,
        role: 'assistant',
        createdAt: '2026-11-01T00:00:00.000Z',
        withheld: true,
      },
    });
    expect(texts(hidden.reader)).toEqual(holed);
    expect(hidden.reader.map((m) => m.hidden ?? false)).toEqual([false, true, false]);
    // The thread's validator moved: a CDN or browser revalidating is told the thread changed.
    expect(hidden.etag).not.toBe(before.etag);
    const revalidated = await app.api(`/xrpc/click.aligned.chat.getThread?uri=${encodeURIComponent(uri)}`, {
      headers: { 'if-none-match': before.etag! },
    });
    expect(revalidated.status).toBe(200);
    // The link preview's first words are not the hidden turn's either.
    await labeler.label({ uri: turnUris[0]!, val: '!takedown' });
    await expect.poll(async () => texts((await read()).xrpc), SECONDS).toEqual(['hole', 'hole', TURNS[2]]);
    // The page's link preview (its description) starts at the first turn still shown.
    const page = await (await app.api(`/profile/${AUTHOR}/thread/${rkey}`)).text();
    const description = /<meta property="og:description" content="([^"]*)"/.exec(page)?.[1] ?? '';
    expect(description).toContain(TURNS[2]!.slice(0, 20));
    expect(description).not.toContain(TURNS[0]!.slice(0, 20));
    await labeler.label({ uri: turnUris[0]!, val: '!takedown', neg: true });

    await labeler.label({ uri: middle, val: '!hide', neg: true });
    await expect.poll(async () => texts((await read()).xrpc), SECONDS).toEqual(TURNS);
    const shownAgain = await read();
    expect(texts(shownAgain.reader)).toEqual(TURNS);
    expect(shownAgain.reader.every((m) => !m.hidden)).toBe(true);
    expect(shownAgain.etag).not.toBe(hidden.etag);
  });

  it("a turn's `!hide` that expires stops counting, and the cached thread follows", async () => {
    // Stored as the follower keeps a verified label with an `exp`: nothing writes the row again when it passes.
    await app.db.sql`insert into labels (src, uri, val, cts, exp)
      values (${labeler.did}, ${turnUris[2]!}, '!hide', now(), now() + interval '2 seconds')`;
    await expect.poll(async () => texts((await read()).xrpc), SECONDS).toEqual([TURNS[0], TURNS[1], 'hole']);
    await expect.poll(async () => texts((await read()).xrpc), SECONDS).toEqual(TURNS);
  });

  it('a content label on a turn is told with that turn only, and hides nothing', async () => {
    const last = turnUris[2]!;
    await labeler.label({ uri: last, val: 'graphic-media' });
    const notices = async () => (await read()).reader.map((m) => m.labels.map((l) => l.val));
    await expect.poll(notices, SECONDS).toEqual([[], [], ['graphic-media']]);
    const now = await read();
    expect(now.reader[2]!.labels[0]!.src).toBe(labeler.did);
    expect(texts(now.xrpc)).toEqual(TURNS);
    await labeler.label({ uri: last, val: 'graphic-media', neg: true });
    await expect.poll(notices, SECONDS).toEqual([[], [], []]);
  });

  it('a turn added after the thread was read is told with its own labels at the next read', async () => {
    // The reader asks for the turns' labels by the turns it last read, beside the version check: a turn added
    // since must be asked for too. A thread of its own, so the others' turns stay as they are.
    const key = TID.nextStr();
    const session = `at://${AUTHOR}/click.aligned.chat.session/${key}`;
    const turn = (text: string) => {
      const turnKey = TID.nextStr();
      return {
        uri: `at://${AUTHOR}/click.aligned.chat.message/${turnKey}`,
        write: {
          collection: 'click.aligned.chat.message',
          rkey: turnKey,
          cid: CID,
          record: {
            $type: 'click.aligned.chat.message',
            session,
            role: 'user',
            text,
            createdAt: '2026-11-01T00:00:00.000Z',
          },
        },
      };
    };
    const first = turn('The first');
    await indexRecords(app.db.sql, AUTHOR, [
      {
        collection: 'click.aligned.chat.session',
        rkey: key,
        cid: CID,
        record: {
          $type: 'click.aligned.chat.session',
          title: 'Later',
          createdAt: '2026-11-01T00:00:00.000Z',
        },
      },
      first.write,
    ]);
    const notices = async () => {
      const res = await app.api(`/api/reader/threads/${AUTHOR}/${key}`);
      const body = (await res.json()) as { thread: { messages: { labels: { val: string }[] }[] } };
      return body.thread.messages.map((m) => m.labels.map((l) => l.val));
    };
    expect(await notices()).toEqual([[]]);
    expect(await notices()).toEqual([[]]);
    const second = turn('The second');
    await indexRecords(app.db.sql, AUTHOR, [second.write]);
    await app.db
      .sql`insert into labels (src, uri, val, cts) values (${labeler.did}, ${second.uri}, 'graphic-media', now())`;
    try {
      expect(await notices()).toEqual([[], ['graphic-media']]);
    } finally {
      await app.db.sql`delete from labels where uri = ${second.uri}`;
    }
  });
});
