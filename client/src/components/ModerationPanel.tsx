import { useQuery } from '@tanstack/react-query';
import { ReportListResponse, TakedownListResponse } from '../../../src/wire/index.ts';
import { api, fetchAs } from '../api.ts';
import { ErrorNote } from './ErrorNote.tsx';
import { ReasonedList, ReasonForm, useReasonedActions, when } from './ReasonedActions.tsx';

/** A Village admin hides threads and authors from this instance, shows them again, and reads readers' reports. */
export function ModerationPanel() {
  const takedowns = useQuery({
    queryKey: ['admin', 'takedowns'],
    queryFn: () => fetchAs(TakedownListResponse, '/api/admin/takedowns'),
  });
  const reports = useQuery({
    queryKey: ['admin', 'reports'],
    queryFn: () => fetchAs(ReportListResponse, '/api/admin/reports'),
  });
  const state = useReasonedActions(
    'takedowns',
    (subject, reason) => api('/api/admin/takedowns', { body: { subject: subject.trim(), reason } }),
    (id, reason) => api(`/api/admin/takedowns/${id}/lift`, { body: { reason } }),
  );
  return (
    <section className="card moderation" aria-label="Moderation">
      <h2>Moderation</h2>
      <p className="notice">
        Hidden threads and authors are not served by this instance (reader, XRPC, link previews). Their
        records stay on their owners’ PDSes.
      </p>
      <ReasonForm
        state={state}
        subjectLabel="Thread (at://… URI) or author (DID)"
        placeholder="at://did:plc:…"
        reasonLabel="Reason (kept with the action, for hiding and showing again)"
        action="Hide"
      />
      <h3>Takedowns</h3>
      <ErrorNote error={takedowns.error} />
      {takedowns.data?.takedowns.length === 0 && <p>Nothing is hidden.</p>}
      <ReasonedList
        state={state}
        className="takedowns"
        items={takedowns.data?.takedowns}
        taken="Hidden"
        lifted="Shown again"
        lift="Show again"
      />
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
            <button type="button" className="mod-action" onClick={() => state.setSubject(r.subject)}>
              Review
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
