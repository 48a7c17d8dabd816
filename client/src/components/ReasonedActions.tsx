import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import type { TakedownView } from '../../../src/wire/index.ts';
import { ErrorNote } from './ErrorNote.tsx';

/** An admin's action on a subject (a block, a takedown), kept with its reason and, once lifted, the lifting. */
export type ReasonedAction = TakedownView;

export const when = (d: Date) => d.toLocaleString();

/**
 * The form state of an admin panel's reasoned actions: the subject and the reason, taking the action on the
 * subject, and lifting one (with the same reason field). Both refresh the list under `['admin', list]`.
 */
export function useReasonedActions(
  list: string,
  take: (subject: string, reason: string) => Promise<unknown>,
  lift: (id: string, reason: string) => Promise<unknown>,
) {
  const queryClient = useQueryClient();
  const [subject, setSubject] = useState('');
  const [reason, setReason] = useState('');
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['admin', list] });
  const act = useMutation({
    mutationFn: () => take(subject, reason),
    onSuccess: () => {
      setSubject('');
      return refresh();
    },
  });
  const undo = useMutation({
    mutationFn: (id: string) => lift(id, reason),
    onSuccess: refresh,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    act.mutate();
  };
  return { subject, setSubject, reason, setReason, act, undo, submit };
}

export type ReasonedActionsState = ReturnType<typeof useReasonedActions>;

/** The subject, the reason and the button that takes the action. */
export function ReasonForm(props: {
  state: ReasonedActionsState;
  subjectLabel: string;
  placeholder: string;
  reasonLabel: string;
  action: string;
}) {
  const { subject, setSubject, reason, setReason, act, undo, submit } = props.state;
  return (
    <form onSubmit={submit}>
      <label>
        {props.subjectLabel}
        <input value={subject} onChange={(e) => setSubject(e.target.value)} placeholder={props.placeholder} />
      </label>
      <label>
        {props.reasonLabel}
        <input value={reason} onChange={(e) => setReason(e.target.value)} maxLength={1000} />
      </label>
      <button type="submit" disabled={!subject.trim() || !reason.trim() || act.isPending}>
        {props.action}
      </button>
      <ErrorNote error={act.error ?? undo.error} />
    </form>
  );
}

/** The actions taken, each with who took it, when and why, and — once lifted — the same of the lifting. */
export function ReasonedList(props: {
  state: ReasonedActionsState;
  className: string;
  items: ReasonedAction[] | undefined;
  /** What the action and its lifting are called: "Hidden", "Shown again", "Show again". */
  taken: string;
  lifted: string;
  lift: string;
}) {
  const { reason, undo } = props.state;
  return (
    <ul className={`mod-list ${props.className}`}>
      {props.items?.map((t) => (
        <li key={t.id} className={`mod-item ${t.liftedAt ? 'lifted' : 'active'}`}>
          <code className="mod-subject">{t.subject}</code>
          <span>
            {props.taken} by {t.createdBy} on {when(t.createdAt)}: {t.reason}
          </span>
          {t.liftedAt ? (
            <span>
              {props.lifted} by {t.liftedBy} on {when(t.liftedAt)}: {t.liftReason}
            </span>
          ) : (
            <button
              type="button"
              className="mod-action"
              disabled={!reason.trim() || undo.isPending}
              title={reason.trim() ? undefined : 'Write a reason first'}
              onClick={() => undo.mutate(t.id)}
            >
              {props.lift}
            </button>
          )}
        </li>
      ))}
    </ul>
  );
}
