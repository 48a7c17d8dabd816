import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import { PublicationResponse, type PublicationView } from '../../../src/wire/index.ts';
import { api, fetchAs } from '../api.ts';
import { ErrorNote } from './ErrorNote.tsx';

/** GET …/publication's publication: its live settings and state (ADR 0043). */
export type LiveView = PublicationView;

/** Why live publishing is waiting, and how to resume it (ADR 0046): said in the Conversation and on the publish page. */
const PAUSED =
  'Live publishing paused: you switched to another branch (or edited or regenerated a published turn). Nothing more goes out and nothing published changes. Review and publish again to resume.';

/** On the publish page, at the top: where the Player comes to resume. */
export function LivePausedNote() {
  return (
    <p className="notice live-paused" role="status">
      {PAUSED}
    </p>
  );
}
/** On the publish page: make a published Conversation live, with the choice for new turns made in advance. */
export function LiveSettings({
  conversationId,
  publication,
}: {
  conversationId: string;
  publication: LiveView;
}) {
  const queryClient = useQueryClient();
  const [withhold, setWithhold] = useState(publication.liveWithhold);
  const [delay, setDelay] = useState(publication.liveDelaySeconds);
  const save = useMutation({
    mutationFn: (live: boolean) =>
      api(`/api/conversations/${conversationId}/publication/live`, {
        method: 'PUT',
        body: { live, withholdNew: withhold, delaySeconds: delay },
      }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['publication', conversationId] }),
  });
  return (
    <fieldset className="card live-settings">
      <legend>Live</legend>
      <p className="meta">
        {publication.live
          ? 'Live: each new turn is added to the published thread once it is complete, after the delay below.'
          : 'Make it live and each new turn is added to the published thread on its own, so readers watch it grow.'}
      </p>
      <label className="check">
        <input type="checkbox" checked={withhold} onChange={(e) => setWithhold(e.target.checked)} /> New turns
        go out withheld (as holes) until I release them here
      </label>
      <label className="inline">
        Wait before a turn goes out{' '}
        <input
          type="number"
          min={0}
          max={3600}
          value={delay}
          onChange={(e) => setDelay(Math.max(0, Math.min(3600, Number(e.target.value) || 0)))}
        />{' '}
        seconds (time to hold it back)
      </label>
      <div className="row">
        <button type="button" onClick={() => save.mutate(true)} disabled={save.isPending}>
          {publication.live ? 'Save live settings' : 'Go live'}
        </button>
        {publication.live && (
          <button
            type="button"
            className="secondary"
            onClick={() => save.mutate(false)}
            disabled={save.isPending}
          >
            Stop live publishing
          </button>
        )}
      </div>
      <ErrorNote error={save.error} />
    </fieldset>
  );
}

/**
 * In the Conversation: when it is published live, the turns not yet out, when they go, and a way to hold one
 * back (it is then published withheld, a visible hole).
 */
export function LiveBanner({
  conversationId,
  path,
}: {
  conversationId: string;
  /** The finished turns on the path shown, in order: who spoke and the start of what they said. */
  path: { id: string; who: string; text: string }[];
}) {
  const { answer, now, hold } = useLivePublication(conversationId);
  const p = answer.data?.publication;
  if (!p?.live) return null;
  if (p.livePaused)
    return (
      <div className="live-banner paused" role="status">
        <span className="live-dot" aria-hidden="true" /> {PAUSED}{' '}
        <Link to={`/c/${conversationId}/publish`}>Review and publish</Link>
      </div>
    );
  // A record planned but not yet written (a run that stopped part-way) is not out yet.
  const out = new Set(p.turns.filter((t) => t.pending !== 'create').map((t) => t.messageId));
  const waiting = path.filter((t) => !out.has(t.id));
  const isHeld = (id: string) => Boolean(answer.data?.draft?.choices[id]?.withheld);
  const held = waiting.filter((t) => isHeld(t.id));
  const toHold = waiting.filter((t) => !isHeld(t.id)).map((t) => t.id);
  const due = p.liveDueAt ? Math.max(0, Math.ceil((p.liveDueAt.getTime() - now) / 1000)) : null;
  return (
    <div className="live-banner" role="status">
      <span className="live-dot" aria-hidden="true" /> Live
      {waiting.length === 0
        ? ' — every turn is published.'
        : ` — ${waiting.length} new turn${waiting.length === 1 ? '' : 's'} ${due === null ? 'go out after the next reply' : `go out in ${due < 120 ? `${due} s` : `${Math.ceil(due / 60)} min`}`}${
            held.length ? ` (${held.length} held back, published as withheld)` : ''
          }.`}{' '}
      {p.status === 'failed' && waiting.length > 0 && (
        <span className="live-failed">
          The last try could not reach your PDS or was refused;{' '}
          {due === null ? 'the next reply tries again' : 'it is tried again then'}.{' '}
        </span>
      )}
      {toHold.length > 1 && (
        <button type="button" className="link" onClick={() => hold.mutate(toHold)} disabled={hold.isPending}>
          Hold all back
        </button>
      )}
      {waiting.length > 0 && (
        <WaitingTurns
          waiting={waiting}
          isHeld={isHeld}
          hold={(ids) => hold.mutate(ids)}
          pending={hold.isPending}
        />
      )}
      <ErrorNote error={hold.error} />
    </div>
  );
}

/** The live publication (read every 2 s while live), a clock for its countdown, and holding turns back. */
function useLivePublication(conversationId: string) {
  const queryClient = useQueryClient();
  const answer = useQuery({
    queryKey: ['publication', conversationId],
    queryFn: () => fetchAs(PublicationResponse, `/api/conversations/${conversationId}/publication`),
    refetchInterval: (q) => (q.state.data?.publication?.live ? 2000 : false),
  });
  const [now, setNow] = useState(Date.now());
  const live = answer.data?.publication?.live ?? false;
  useEffect(() => {
    if (!live) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [live]);
  const hold = useMutation({
    mutationFn: (ids: string[]) =>
      Promise.all(
        ids.map((messageId) =>
          api(`/api/conversations/${conversationId}/publication/hold`, { body: { messageId } }),
        ),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['publication', conversationId] }),
  });
  return { answer, now, hold };
}

function WaitingTurns(props: {
  waiting: { id: string; who: string; text: string }[];
  isHeld: (id: string) => boolean;
  hold: (ids: string[]) => void;
  pending: boolean;
}) {
  return (
    <ul className="live-waiting">
      {props.waiting.map((t) => (
        <li key={t.id}>
          <span className="live-who">{t.who}:</span>{' '}
          <span className="live-text">{t.text.slice(0, 80) || '…'}</span>{' '}
          {props.isHeld(t.id) ? (
            <em>held back</em>
          ) : (
            <button
              type="button"
              className="link"
              aria-label={`Hold back ${t.who}: ${t.text.slice(0, 40)}`}
              onClick={() => props.hold([t.id])}
              disabled={props.pending}
            >
              Hold back
            </button>
          )}
        </li>
      ))}
    </ul>
  );
}
