import { useQuery } from '@tanstack/react-query';
import type { z } from 'zod';
import { BlockListResponse, SpendingResponse } from '../../../src/wire/index.ts';
import { api, fetchAs } from '../api.ts';
import { ErrorNote } from './ErrorNote.tsx';
import { ReasonedList, ReasonForm, useReasonedActions } from './ReasonedActions.tsx';

type Spending = z.output<typeof SpendingResponse>['players'][number];

const tokens = (n: number) => n.toLocaleString();

/**
 * A Village admin sees what each Player spent (tokens today and this month, UTC), stops a Player from starting
 * turns, and lets them again — each with a reason kept beside it.
 */
export function PlayersPanel() {
  const spending = useQuery({
    queryKey: ['admin', 'spending'],
    queryFn: () => fetchAs(SpendingResponse, '/api/admin/spending'),
  });
  const blocks = useQuery({
    queryKey: ['admin', 'blocks'],
    queryFn: () => fetchAs(BlockListResponse, '/api/admin/blocks'),
  });
  const state = useReasonedActions(
    'blocks',
    (did, reason) => api('/api/admin/blocks', { body: { did: did.trim(), reason } }),
    (id, reason) => api(`/api/admin/blocks/${id}/lift`, { body: { reason } }),
  );
  const blocked = new Set(blocks.data?.blocks.filter((b) => !b.liftedAt).map((b) => b.did));
  return (
    <section className="card moderation players" aria-label="Players">
      <h2>Players</h2>
      <h3>Spending (tokens, UTC)</h3>
      <ErrorNote error={spending.error} />
      {spending.data?.players.length === 0 && <p>No Player has spent anything this month.</p>}
      {spending.data?.players.length ? (
        <SpendingTable players={spending.data.players} blocked={blocked} onReview={state.setSubject} />
      ) : null}
      <ReasonForm
        state={state}
        subjectLabel="Player (DID)"
        placeholder="did:plc:…"
        reasonLabel="Reason (kept with the block, and with lifting it)"
        action="Block from starting turns"
      />
      <h3>Blocks</h3>
      <ErrorNote error={blocks.error} />
      {blocks.data?.blocks.length === 0 && <p>No Player is blocked.</p>}
      <ReasonedList
        state={state}
        className="blocks"
        items={blocks.data?.blocks.map((b) => ({ ...b, subject: b.did }))}
        taken="Blocked"
        lifted="Unblocked"
        lift="Unblock"
      />
    </section>
  );
}

function SpendingTable(props: {
  players: Spending[];
  blocked: Set<string>;
  onReview: (did: string) => void;
}) {
  return (
    <table className="spending">
      <thead>
        <tr>
          <th scope="col">Player</th>
          <th scope="col">Today</th>
          <th scope="col">This month</th>
          <th scope="col" />
        </tr>
      </thead>
      <tbody>
        {props.players.map((p) => (
          <tr key={p.did} data-did={p.did}>
            <td>
              {p.handle ? `@${p.handle}` : p.did}
              {props.blocked.has(p.did) && <strong className="blocked">(blocked)</strong>}
            </td>
            <td>{tokens(p.today)}</td>
            <td>{tokens(p.month)}</td>
            <td>
              <button type="button" className="mod-action" onClick={() => props.onReview(p.did)}>
                Review
              </button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
