// Run by test/web/ssrRuntime.test.ts with plain `node --import tsx` (as `npm start` runs the server), not Vitest:
// renders a thread through the server's renderer and prints the HTML.
import { loadRenderer } from '../../src/web/readerPages.ts';

const render = await loadRenderer();
const thread = {
  uri: 'at://did:plc:x/click.aligned.chat.session/3kabcdefghijk',
  author: { did: 'did:plc:x', handle: 'alice.test' },
  session: { title: 'Smoke <b>test</b>', createdAt: '2026-11-01T00:00:00.000Z', agents: [{ name: 'Ada' }] },
  messages: [
    {
      uri: 'u1',
      rkey: 'r1',
      record: {
        role: 'assistant',
        createdAt: '2026-11-01T00:00:00.000Z',
        model: 'm/1',
        text: '**bold** ████████\n\n```ts\nlet a = 1;\n```',
      },
      refs: [{ uri: 'at://did:plc:y/app.bsky.feed.post/3kabcdefghijk', state: 'deleted', text: null }],
      mentions: [{ did: 'did:plc:y', handle: 'bob.test' }],
    },
  ],
};
process.stdout.write(render({ page: 'thread', actor: 'alice.test', rkey: '3kabcdefghijk', thread }));
process.stdout.write('\n');
process.stdout.write(render({ page: 'list', actor: null, sessions: [] }));
