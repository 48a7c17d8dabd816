import { AtpAgent } from '@atproto/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertConversation } from '../support/conversations.ts';
import { type LocalApp, startLocalApp } from '../support/localnet.ts';
import { picture } from '../support/picture.ts';

// Covered words never leave the server, and other AppViews show what a link or a mention leads to as it is: a
// linked post's text, an account's handle. Against a real PLC and PDS: bob's post and handle are read from them.
let local: LocalApp;
let alice: { cookie: string; did: string; playerId: string };
let bob: { did: string; post: { uri: string; cid: string } };

beforeAll(async () => {
  local = await startLocalApp();
  alice = await local.signInAs('alice.test');
  const account = local.app.running.localnet!.accounts.find((a) => a.handle === 'bob.test')!;
  const agent = new AtpAgent({ service: local.app.running.localnet!.pdsUrl });
  await agent.login({ identifier: account.handle, password: account.password });
  bob = {
    did: account.did,
    post: await agent.post({ text: 'Pelican maps are the best', createdAt: new Date().toISOString() }),
  };
}, 120_000);
afterAll(() => local?.close());

const api = (path: string, body: unknown) =>
  local.app.api(path, { method: 'PUT', body, cookie: alice.cookie });

/** A Conversation whose first turn links bob's post by its at-URI (a DID: no handle written) and whose second covers `word`. */
async function conversation(second: string) {
  return insertConversation(local.app.db.sql, alice.playerId, {
    turns: [
      { role: 'player', parts: [{ type: 'text', text: `Is ${bob.post.uri} right?` }] },
      { role: 'npc', parts: [{ type: 'text', text: second }] },
    ],
  });
}
const cover = (text: string, word: string) => {
  const start = text.indexOf(word);
  return { redactions: [{ start, end: start + word.length }] };
};
type Refused = {
  error: { code: string; details: { problems: { code: string; turn: number; message: string }[] } };
};

describe('publishing a link or a mention that leads to covered words', () => {
  it('is refused when the linked post shows a covered word; published, with its strongRef, when it does not', async () => {
    const second = 'Pelican is the name I would rather keep.';
    const { conversationId, ids } = await conversation(second);
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      choices: { [ids[1]!]: cover(second, 'Pelican') },
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as Refused;
    expect(body.error.details.problems.map((p) => [p.code, p.turn])).toEqual([['COVERED_REFERENCE', 1]]);
    expect(body.error.details.problems[0]!.message).toContain('a record that shows words you covered');

    const plain = 'Nothing covered here.';
    const other = await conversation(plain);
    const ok = await api(`/api/conversations/${other.conversationId}/publication`, {
      choices: { [other.ids[1]!]: cover(plain, 'covered') },
    });
    expect(ok.status).toBe(200);
    const agent = new AtpAgent({ service: local.app.running.localnet!.pdsUrl });
    const { data } = await agent.com.atproto.repo.listRecords({
      repo: alice.did,
      collection: 'click.aligned.chat.message',
      limit: 10,
    });
    expect(data.records.map((r) => (r.value as { refs?: unknown }).refs).filter(Boolean)).toEqual([
      [{ uri: bob.post.uri, cid: bob.post.cid }],
    ]);
  }, 60_000);

  it('a linked post with a picture is checked too: its alt text is read, its blob is hashed as its CID says', async () => {
    const agent = new AtpAgent({ service: local.app.running.localnet!.pdsUrl });
    const account = local.app.running.localnet!.accounts.find((a) => a.handle === 'bob.test')!;
    await agent.login({ identifier: account.handle, password: account.password });
    const { data } = await agent.uploadBlob(picture(), { encoding: 'image/png' });
    const withPicture = await agent.post({
      text: 'A picture of the harbour',
      embed: { $type: 'app.bsky.embed.images', images: [{ image: data.blob, alt: 'Osric at the harbour' }] },
      createdAt: new Date().toISOString(),
    });
    const second = 'Osric took it.';
    const { conversationId, ids } = await insertConversation(local.app.db.sql, alice.playerId, {
      turns: [
        { role: 'player', parts: [{ type: 'text', text: `See ${withPicture.uri}` }] },
        { role: 'npc', parts: [{ type: 'text', text: second }] },
      ],
    });
    const publish = (choices: object) => api(`/api/conversations/${conversationId}/publication`, { choices });
    // Its alt text names the covered word.
    const refused = await publish({ [ids[1]!]: cover(second, 'Osric') });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as Refused).error.details.problems.map((p) => p.code)).toEqual([
      'COVERED_REFERENCE',
    ]);
    // Nothing covered it shows: published, with the post's own CID (the blob hashed as a link, not as a map).
    const ok = await publish({ [ids[1]!]: cover(second, 'took') });
    expect(ok.status).toBe(200);
    const records = await agent.com.atproto.repo.listRecords({
      repo: alice.did,
      collection: 'click.aligned.chat.message',
      limit: 20,
    });
    expect(
      records.data.records.map((r) => (r.value as { refs?: unknown }).refs).filter(Boolean),
    ).toContainEqual([{ uri: withPicture.uri, cid: withPicture.cid }]);
    // The reader hashes it the same way: the post is the one linked, not "changed".
    const rkey = ((await ok.json()) as { uri: string }).uri.split('/').pop()!;
    const reader = await fetch(`${local.app.running.listenUrl}/api/reader/threads/alice.test/${rkey}`);
    const { thread } = (await reader.json()) as { thread: { messages: { refs: { state: string }[] }[] } };
    expect(thread.messages[0]!.refs.map((r) => r.state)).toEqual(['same']);
  }, 60_000);

  it('is refused when a mention by DID leads to a handle that shows a covered word', async () => {
    const second = 'Ask bob, he knows.';
    const { conversationId, ids } = await conversation(second);
    const res = await api(`/api/conversations/${conversationId}/publication`, {
      choices: { [ids[0]!]: { mentions: [bob.did] }, [ids[1]!]: cover(second, 'bob') },
    });
    expect(res.status).toBe(400);
    const problems = ((await res.json()) as Refused).error.details.problems;
    // The mention (by DID, whose handle is bob.test) and the link (to bob's post): both lead to bob.test.
    expect(problems.map((p) => [p.code, p.turn])).toEqual([
      ['COVERED_REFERENCE', 1],
      ['COVERED_REFERENCE', 1],
    ]);
    expect(
      problems.every((p) => p.message.includes('an account whose address shows words you covered')),
    ).toBe(true);
  }, 60_000);
});
