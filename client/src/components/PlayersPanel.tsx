import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { BlockListResponse, SpendingResponse } from '../../../src/wire/index.ts';
import { api, fetchAs } from '../api.ts';
import { ErrorNote } from './ErrorNote.tsx';

const when = (d: Date) => d.toLocaleString();
const tokens = (n: number) => n.toLocaleString();

/**
 * A Village admin sees what each Player spent (tokens today and this month, UTC), stops a Player from starting
 * turns, and lets them again — each with a reason kept beside it.
 */
export function PlayersPanel() {
  const queryClient = useQueryClient();
  const spending = useQuery({
    queryKey: ['admin', 'spending'],
    queryFn: () => fetchAs(SpendingResponse, '/api/admin/spending'),
  });
  const blocks = useQuery({
    queryKey: ['admin', 'blocks'],
    queryFn: () => fetchAs(BlockListResponse, '/api/admin/blocks'),
  });
  const [did, setDid] = useState('');
  const [reason, setReason] = useState('');
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['admin', 'blocks'] });
  const block = useMutation({
    mutationFn: () => api('/api/admin/blocks', { body: { did: did.trim(), reason } }),
    onSuccess: () => {
      setDid('');
      return refresh();
    },
  });
  const unblock = useMutation({
    mutationFn: (id: string) => api(`/api/admin/blocks/${id}/lift`, { body: { reason } }),
    onSuccess: refresh,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    block.mutate();
  };
  const blocked = new Set(blocks.data?.blocks.filter((b) => !b.liftedAt).map((b) => b.did));
  return (
    <section className="card moderation players" aria-label="Players">
      <h2>Players</h2>
      <h3>Spending (tokens, UTC)</h3>
      <ErrorNote error={spending.error} />
      {spending.data?.players.length === 0 && <p>No Player has spent anything this month.</p>}
      {spending.data?.players.length ? (
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
            {spending.data.players.map((p) => (
              <tr key={p.did} data-did={p.did}>
                <td>
                  {p.handle ? `@${p.handle}` : p.did}
                  {blocked.has(p.did) && <strong className="blocked">(blocked)</strong>}
                </td>
                <td>{tokens(p.today)}</td>
                <td>{tokens(p.month)}</td>
                <td>
                  <button type="button" className="mod-action" onClick={() => setDid(p.did)}>
                    Review
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <form onSubmit={submit}>
        <label>
          Player (DID)
          <input value={did} onChange={(e) => setDid(e.target.value)} placeholder="did:plc:…" />
        </label>
        <label>
          Reason (kept with the block, and with lifting it)
          <input value={reason} onChange={(e) => setReason(e.target.value)} maxLength={1000} />
        </label>
        <button type="submit" disabled={!did.trim() || !reason.trim() || block.isPending}>
          Block from starting turns
        </button>
        <ErrorNote error={block.error ?? unblock.error} />
      </form>
      <h3>Blocks</h3>
      <ErrorNote error={blocks.error} />
      {blocks.data?.blocks.length === 0 && <p>No Player is blocked.</p>}
      <ul className="mod-list blocks">
        {blocks.data?.blocks.map((b) => (
          <li key={b.id} className={`mod-item ${b.liftedAt ? 'lifted' : 'active'}`}>
            <code className="mod-subject">{b.did}</code>
            <span>
              Blocked by {b.createdBy} on {when(b.createdAt)}: {b.reason}
            </span>
            {b.liftedAt ? (
              <span>
                Unblocked by {b.liftedBy} on {when(b.liftedAt)}: {b.liftReason}
              </span>
            ) : (
              <button
                type="button"
                className="mod-action"
                disabled={!reason.trim() || unblock.isPending}
                title={reason.trim() ? undefined : 'Write a reason first'}
                onClick={() => unblock.mutate(b.id)}
              >
                Unblock
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
