import type { AtpAgent } from '@atproto/api';
import { TID } from '@atproto/common-web';

/** A click.aligned.chat.session written straight to a repo, as another app would; returns its at-uri. */
export async function writeSession(agent: AtpAgent, did: string, title: string): Promise<string> {
  const rkey = TID.nextStr();
  await agent.com.atproto.repo.createRecord({
    repo: did,
    collection: 'click.aligned.chat.session',
    rkey,
    record: { $type: 'click.aligned.chat.session', title, createdAt: new Date().toISOString() },
  });
  return `at://${did}/click.aligned.chat.session/${rkey}`;
}

/** `n` user turns of that session, one write each, texts `${prefix}0` … in order. */
export async function writeTurns(agent: AtpAgent, did: string, session: string, n: number, prefix: string) {
  for (let i = 0; i < n; i++) {
    await agent.com.atproto.repo.createRecord({
      repo: did,
      collection: 'click.aligned.chat.message',
      rkey: TID.nextStr(),
      record: {
        $type: 'click.aligned.chat.message',
        session,
        role: 'user',
        createdAt: new Date().toISOString(),
        text: `${prefix}${i}`,
      },
    });
  }
}

/** A user turn's record of that session, as the index receives it. */
export const userTurn = (session: string, text: string) => ({
  $type: 'click.aligned.chat.message',
  session,
  role: 'user',
  text,
  createdAt: '2026-11-01T00:00:00.000Z',
});
