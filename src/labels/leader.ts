import type { Sql } from '../db/index.ts';
import { type Leadership, LOCKS, lead } from '../db/index.ts';
import type { SocketPolicy } from '../outbound/index.ts';
import { LabelerFollower } from './follower.ts';
import { LabelerKeys } from './keys.ts';
import { forgetOtherLabelers } from './store.ts';

export interface FollowLabelsOptions {
  sql: Sql;
  /** The labelers to follow: a DID, and the service URL when it is not read from the DID document. */
  labelers: { did: string; url?: string }[];
  plcUrl: string;
  /** Offline mode: labelers on loopback, over plain http. */
  local: boolean;
  /** The outbound fetch DID documents are read with (see outbound/). */
  fetch: typeof globalThis.fetch;
  log: (message: string, error?: unknown) => void;
  retryMs?: number;
  backoffFirstMs?: number;
  /** The network's address policy for the sockets DID documents name (see outbound/). */
  policy?: SocketPolicy;
}

/**
 * Follows every configured labeler from one server process at a time (the leader holds an advisory lock, like
 * the indexer's: db/leadership.ts). Labels of labelers no longer configured are let go first, so they stop counting at once.
 */
export function followLabelers(o: FollowLabelsOptions): { leading: Promise<void>; stop(): Promise<void> } {
  let leadership: Leadership | undefined;
  let led!: () => void;
  const leading = new Promise<void>((resolve) => {
    led = resolve;
  });
  let stopped = false;
  const keys = new LabelerKeys({ plcUrl: o.plcUrl, fetch: o.fetch, local: o.local });
  const start = async () => {
    const followers = o.labelers.map(
      (l) =>
        new LabelerFollower({
          sql: o.sql,
          did: l.did,
          url: l.url,
          keys,
          log: o.log,
          backoffFirstMs: o.backoffFirstMs,
          policy: o.policy,
        }),
    );
    for (const f of followers) f.start();
    return async () => {
      await Promise.all(followers.map((f) => f.stop()));
    };
  };
  const run = async () => {
    await forgetOtherLabelers(
      o.sql,
      o.labelers.map((l) => l.did),
    );
    if (!o.labelers.length || stopped) return;
    leadership = lead(o.sql, [LOCKS.labelsLeader], { name: 'labels', start, log: o.log, retryMs: o.retryMs });
    void leadership.leading.then(led);
  };
  const running = run().catch((e) => o.log('labels: following labelers failed to start', e));
  return {
    leading,
    async stop() {
      stopped = true;
      await running;
      await leadership?.stop();
    },
  };
}
