import { cidForRecord } from '@atproto/repo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertConversation } from '../support/conversations.ts';
import { didWebHost, RECORD_CID } from '../support/didWeb.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';

/**
 * A link in an NPC's reply names a host: looking it up tells that host (and the DNS on the way) that this
 * Conversation is being looked at. Nothing is looked up for a turn the Player has not chosen to publish, nor
 * before the Player asks the preview to check it.
 */

/** Handle lookups go through the Player's PDS on the OAuth session's own HTTP client: counted here. */
const handleLookups: string[] = [];
const countingFetch: typeof fetch = async (input, init) => {
  const req = new Request(input, init);
  if (req.url.includes('com.atproto.identity.resolveHandle')) handleLookups.push(req.url);
  return fetch(req);
};

let local: LocalApp;
let alice: { cookie: string; did: string; playerId: string };
let host: Awaited<ReturnType<typeof didWebHost>>;
beforeAll(async () => {
  local = await startLocalApp({ oauthFetch: countingFetch });
  alice = await local.signInAs('alice.test');
  host = await didWebHost();
}, 120_000);
afterAll(async () => {
  await host?.close();
  await local?.close();
});

const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
  local.app.api(path, { ...init, cookie: alice.cookie });

interface PreviewBody {
  records: {
    messageId: string | null;
    record: { refs?: { uri: string; cid: string }[]; mentions?: string[] };
  }[];
  problems: { code: string }[];
  unchecked: { messageId: string; links: string[] }[];
}

async function conversationWithPin() {
  const pin = `at://${host.did}/app.bsky.feed.post/pin-4411-alice`;
  const { conversationId, ids } = await insertConversation(local.app.db.sql, alice.playerId, {
    turns: [
      { role: 'player', parts: [{ type: 'text', text: 'Where did we leave it?' }] },
      { role: 'npc', parts: [{ type: 'text', text: `Pinned at ${pin}, ask @bob.test.` }] },
    ],
  });
  return { conversationId, reply: ids[1]!, pin };
}

const seen = () => ({ host: host.requests.length, handles: handleLookups.length });

describe('links and mentions are looked up only for published turns the Player asked about', () => {
  it('opening the publish page and previewing makes no request; asking to check an included turn does', async () => {
    const { conversationId, reply, pin } = await conversationWithPin();
    const before = seen();
    expect((await api(`/api/conversations/${conversationId}/publication`)).status).toBe(200);
    // The page's own preview: no choice made, nothing asked to be checked.
    const opened = await api(`/api/conversations/${conversationId}/publication/preview`, { body: {} });
    expect(opened.status).toBe(200);
    const first = (await opened.json()) as PreviewBody;
    expect(seen()).toEqual(before);
    // Shown as not checked yet, not as a problem; the record does not carry it yet.
    expect(first.unchecked).toEqual([{ messageId: reply, turn: 2, links: [pin, '@bob.test'] }]);
    expect(first.problems).toEqual([]);
    expect(first.records.find((r) => r.messageId === reply)!.record.refs).toBeUndefined();

    // Withheld, a turn is never looked up, even when asked.
    const withheld = await api(`/api/conversations/${conversationId}/publication/preview`, {
      body: { choices: { [reply]: { withheld: true } }, check: [reply] },
    });
    expect(withheld.status).toBe(200);
    expect(((await withheld.json()) as PreviewBody).unchecked).toEqual([]);
    expect(seen()).toEqual(before);

    // Asked, for an included turn: now the host is asked, and the record points at what it answered.
    const checked = await api(`/api/conversations/${conversationId}/publication/preview`, {
      body: { check: [reply] },
    });
    const body = (await checked.json()) as PreviewBody;
    expect(body.unchecked).toEqual([]);
    expect(body.records.find((r) => r.messageId === reply)!.record.refs).toEqual([
      { uri: pin, cid: RECORD_CID },
    ]);
    expect(new Set(host.requests.slice(before.host).map((r) => r.split('?')[0]))).toEqual(
      new Set(['/.well-known/did.json', '/xrpc/com.atproto.repo.getRecord']),
    );
    expect(host.requests.at(-1)).toContain('rkey=pin-4411-alice');
    expect(handleLookups.length).toBeGreaterThan(before.handles);
  }, 60_000);

  it('publishing looks up the turns it publishes, and never a withheld one', async () => {
    const { conversationId, reply, pin } = await conversationWithPin();
    const before = seen();
    const held = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [reply]: { withheld: true } } },
    });
    expect(held.status).toBe(200);
    expect(seen()).toEqual(before);

    const released = await api(`/api/conversations/${conversationId}/publication`, {
      method: 'PUT',
      body: { choices: { [reply]: {} } },
    });
    expect(released.status).toBe(200);
    const body = (await released.json()) as PreviewBody;
    expect(body.records.find((r) => r.messageId === reply)!.record.refs).toEqual([
      { uri: pin, cid: RECORD_CID },
    ]);
    expect(host.requests.length).toBeGreaterThan(before.host);
    expect(handleLookups.length).toBeGreaterThan(before.handles);
    await api(`/api/conversations/${conversationId}/publication`, { method: 'DELETE' });
  }, 60_000);

  it('a linked record whose PDS sends other words than its CID pins is not published', async () => {
    const { conversationId, reply } = await conversationWithPin();
    // The host sends a clean text under the CID of another: the words checked would not be the words linked.
    host.served.cid = (await cidForRecord({ text: 'Zephyr keeps the maps' })).toString();
    try {
      const res = await api(`/api/conversations/${conversationId}/publication`, {
        method: 'PUT',
        body: { choices: { [reply]: {} } },
      });
      expect(res.status).toBe(400);
      const { error } = (await res.json()) as {
        error: { details: { problems: { code: string; turn: number }[] } };
      };
      expect(error.details.problems.map((p) => [p.code, p.turn])).toEqual([['UNRESOLVED_REF', 2]]);
    } finally {
      host.served.cid = RECORD_CID;
    }
  }, 60_000);
});
