import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { ReportListResponse, TakedownListResponse } from '../../../src/wire/index.ts';
import { api, fetchAs } from '../api.ts';
import { ErrorNote } from './ErrorNote.tsx';

const when = (d: Date) => d.toLocaleString();

/** A Village admin hides threads and authors from this instance, shows them again, and reads readers' reports. */
export function ModerationPanel() {
  const queryClient = useQueryClient();
  const takedowns = useQuery({
    queryKey: ['admin', 'takedowns'],
    queryFn: () => fetchAs(TakedownListResponse, '/api/admin/takedowns'),
  });
  const reports = useQuery({
    queryKey: ['admin', 'reports'],
    queryFn: () => fetchAs(ReportListResponse, '/api/admin/reports'),
  });
  const [subject, setSubject] = useState('');
  const [reason, setReason] = useState('');
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['admin', 'takedowns'] });
  const hide = useMutation({
    mutationFn: () => api('/api/admin/takedowns', { body: { subject: subject.trim(), reason } }),
    onSuccess: () => {
      setSubject('');
      return refresh();
    },
  });
  const lift = useMutation({
    mutationFn: (id: string) => api(`/api/admin/takedowns/${id}/lift`, { body: { reason } }),
    onSuccess: refresh,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    hide.mutate();
  };
  return (
    <section className="card moderation" aria-label="Moderation">
      <h2>Moderation</h2>
      <p className="notice">
        Hidden threads and authors are not served by this instance (reader, XRPC, link previews). Their
        records stay on their owners’ PDSes.
      </p>
      <form onSubmit={submit}>
        <label>
          Thread (at://… URI) or author (DID)
          <input value={subject} onChange={(e) => setSubject(e.target.value)} placeholder="at://did:plc:…" />
        </label>
        <label>
          Reason (kept with the action, for hiding and showing again)
          <input value={reason} onChange={(e) => setReason(e.target.value)} maxLength={1000} />
        </label>
        <button type="submit" disabled={!subject.trim() || !reason.trim() || hide.isPending}>
          Hide
        </button>
        <ErrorNote error={hide.error ?? lift.error} />
      </form>
      <h3>Takedowns</h3>
      <ErrorNote error={takedowns.error} />
      {takedowns.data?.takedowns.length === 0 && <p>Nothing is hidden.</p>}
      <ul className="mod-list takedowns">
        {takedowns.data?.takedowns.map((t) => (
          <li key={t.id} className={`mod-item ${t.liftedAt ? 'lifted' : 'active'}`}>
            <code className="mod-subject">{t.subject}</code>
            <span>
              Hidden by {t.createdBy} on {when(t.createdAt)}: {t.reason}
            </span>
            {t.liftedAt ? (
              <span>
                Shown again by {t.liftedBy} on {when(t.liftedAt)}: {t.liftReason}
              </span>
            ) : (
              <button
                type="button"
                className="mod-action"
                disabled={!reason.trim() || lift.isPending}
                title={reason.trim() ? undefined : 'Write a reason first'}
                onClick={() => lift.mutate(t.id)}
              >
                Show again
              </button>
            )}
          </li>
        ))}
      </ul>
      <h3>Reports from readers</h3>
      <ErrorNote error={reports.error} />
      {reports.data?.reports.length === 0 && <p>No reports.</p>}
      <ul className="mod-list reports">
        {reports.data?.reports.map((r) => (
          <li key={r.id} className="mod-item">
            <code className="mod-subject">{r.subject}</code>
            <span>
              {when(r.createdAt)}: {r.reason}
            </span>
            <button type="button" className="mod-action" onClick={() => setSubject(r.subject)}>
              Review
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
