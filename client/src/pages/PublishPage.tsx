import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState } from 'react';
import { Link, useParams } from 'react-router';
import { attachmentsOf, flattenText, readParts } from '../../../src/parts/index.ts';
import {
  type AgentChoices,
  type Choices,
  type Cover,
  coverOf,
  extraPlaces,
  makeCover,
  mergeSpans,
  type Span,
  type TurnChoice,
} from '../../../src/redaction/index.ts';
import { ConversationPage, MessagePage } from '../../../src/wire/index.ts';
import { ApiError, api, fetchAs, type Message } from '../api.ts';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { LiveSettings, type LiveView } from '../components/LivePublishing.tsx';
import {
  Barred,
  type Preview,
  PreviewView,
  type Problem,
  ProblemList,
} from '../components/PublishPreview.tsx';
import { useDocumentTitle } from '../title.ts';

interface PublicationView extends LiveView {
  status: string;
  uri: string;
  title: string;
  error: string | null;
  /** A turn's record still to be written has `pending` set (the stored plan, written batch by batch). */
  turns: { pending: string | null; messageId: string | null }[];
}
interface Draft {
  title: string | null;
  choices: Choices;
  agents?: AgentChoices;
  /** Words still covered from turns that have since gone (regenerated replies). */
  removedWords: string[];
}

/** The reader's page for a session at-uri. */
const readerPath = (uri: string) => {
  const [, , did, , rkey] = uri.split('/');
  return `/profile/${did}/thread/${rkey}`;
};

/** Loads every Message of the Conversation, oldest first (the editor shows them all). */
async function allMessages(id: string) {
  const first = await fetchAs(ConversationPage, `/api/conversations/${id}?limit=200`);
  let messages = first.messages;
  for (let before = first.before; before; ) {
    const page = await fetchAs(MessagePage, `/api/conversations/${id}/messages?limit=200&before=${before}`);
    messages = [...page.messages, ...messages];
    before = page.before;
  }
  return { conversation: first.conversation, messages };
}

export function PublishPage() {
  const { id } = useParams() as { id: string };
  useDocumentTitle('Publish');
  const queryClient = useQueryClient();
  const data = useQuery({ queryKey: ['publish-source', id], queryFn: () => allMessages(id) });
  // While publishing, the stored plan is read every 300 ms: how many turns are still to be written.
  const [publishing, setPublishing] = useState(false);
  const publication = useQuery({
    queryKey: ['publication', id],
    queryFn: () =>
      api<{ publication: PublicationView | null; draft: Draft | null }>(
        `/api/conversations/${id}/publication`,
      ),
    refetchInterval: publishing ? 300 : false,
  });
  const plan = publication.data?.publication;
  const remaining =
    publishing && plan?.status === 'publishing' ? plan.turns.filter((t) => t.pending).length : undefined;
  // The most seen still to write is the whole of this publish (the plan is stored before any write).
  const [planned, setPlanned] = useState(0);
  useEffect(() => {
    if (remaining !== undefined) setPlanned((p) => Math.max(p, remaining));
  }, [remaining]);
  const [choices, setChoices] = useState<Choices>({});
  const [agents, setAgents] = useState<AgentChoices>({});
  const [title, setTitle] = useState('');
  const [forgetRemoved, setForgetRemoved] = useState(false);
  const [loaded, setLoaded] = useState(false);
  // The kept draft (choices and title survive an unpublish) fills the editor once.
  useEffect(() => {
    if (!publication.data || loaded) return;
    const draft = publication.data.draft;
    if (draft) {
      setChoices(draft.choices);
      setAgents(draft.agents ?? {});
      setTitle(draft.title ?? '');
    }
    setLoaded(true);
  }, [publication.data, loaded]);

  const texts = useMemo(
    () => (data.data?.messages ?? []).map((m) => ({ id: m.id, text: flattenText(readParts(m.parts)) })),
    [data.data],
  );
  const removed = useMemo(
    () => (forgetRemoved ? [] : (publication.data?.draft?.removedWords ?? [])),
    [forgetRemoved, publication.data],
  );
  // The same covering pass the server runs: what the editor marks is what the records will cover.
  const cover = useMemo(() => coverOf(texts, choices, removed), [texts, choices, removed]);

  const body = () => ({
    title: title.trim() || null,
    choices,
    agents,
    ...(forgetRemoved ? { forgetRemoved } : {}),
  });
  // The turns whose links and mentions the Player asked to check: a lookup reaches whoever a link names, so
  // the preview looks up nothing else (publishing looks up every published turn's). A changed turn is unchecked.
  const [checked, setChecked] = useState<string[]>([]);
  const check = checked.filter((m) => !choices[m]?.withheld);
  const [shown, setShown] = useState<Preview | null>(null);
  const preview = useMutation({
    mutationFn: () =>
      api<Preview>(`/api/conversations/${id}/publication/preview`, {
        body: { ...body(), ...(check.length ? { check } : {}) },
      }),
    onSuccess: setShown,
  });
  // The preview follows the editor: every change is previewed by the server, whose projection is the truth.
  const previewNow = preview.mutate;
  const signature = JSON.stringify([body(), check]);
  useEffect(() => {
    if (!data.data || !loaded || !signature) return;
    const timer = setTimeout(() => previewNow(), 400);
    return () => clearTimeout(timer);
  }, [signature, data.data, loaded, previewNow]);

  const publish = useMutation({
    mutationFn: () =>
      api<Preview & { calls: number }>(`/api/conversations/${id}/publication`, {
        method: 'PUT',
        // The turns looked over here: if the Conversation moved on meanwhile, the server refuses (409).
        body: { ...body(), path: texts.map((t) => t.id) },
      }),
    // How many records this publish writes: the preview's count of new and changed ones.
    onMutate: () => {
      setPlanned(0);
      setPublishing(true);
      return { writes: shown?.records.filter((r) => r.write).length ?? null };
    },
    // What is shown after a publish is the new state, not the preview from before it.
    onSuccess: setShown,
    onSettled: () => {
      setPublishing(false);
      return queryClient.invalidateQueries({ queryKey: ['publication', id] });
    },
    // New turns (or another branch) arrived while this page was open: show them, to be looked over first.
    onError: (e) => {
      if (e instanceof ApiError && e.code === 'CONVERSATION_CHANGED')
        void queryClient.invalidateQueries({ queryKey: ['publish-source', id] });
    },
  });
  // The outcome is said at the top of the page, where the eye (and a screen reader) is sent.
  const outcomeRef = useRef<HTMLParagraphElement>(null);
  useEffect(() => {
    if (publish.data) outcomeRef.current?.focus();
  }, [publish.data]);
  const unpublish = useMutation({
    mutationFn: () => api(`/api/conversations/${id}/publication`, { method: 'DELETE' }),
    onSuccess: () => {
      // The choices stay: they are the draft for publishing again, under the same link.
      queryClient.invalidateQueries({ queryKey: ['publication', id] });
      previewNow();
    },
  });
  const set = (messageId: string, patch: Partial<TurnChoice>) => {
    setChoices((c) => ({ ...c, [messageId]: { ...c[messageId], ...patch } }));
    setChecked((c) => c.filter((m) => m !== messageId));
  };
  const checkLinks = (ids: string[]) => setChecked((c) => [...new Set([...c, ...ids])]);
  const uncheckedOf = (messageId: string) =>
    shown?.unchecked?.find((u) => u.messageId === messageId)?.links ?? [];

  if (!data.data) return <ErrorNote error={data.error} />;
  const current = publication.data?.publication;
  const publishProblems =
    publish.error instanceof ApiError && publish.error.code === 'PUBLISH_PROBLEMS'
      ? ((publish.error.details as { problems?: Problem[] } | undefined)?.problems ?? null)
      : null;
  const problemsOf = (messageId: string) =>
    (publishProblems ?? shown?.problems ?? []).filter((p) => p.messageId === messageId);
  const stepDefaults = (messageId: string) =>
    (
      shown?.records.find((r) => r.messageId === messageId)?.record as {
        steps?: { name: string; summary: string }[];
      }
    )?.steps;
  return (
    <div className="narrow publish">
      <p>
        <Link to={`/c/${id}`}>← Back to the conversation</Link>
      </p>
      <h1>Publish</h1>
      {publish.data && !publish.isPending && (
        <p role="status" className="notice" id="publish-outcome" tabIndex={-1} ref={outcomeRef}>
          {publish.context?.writes === 0
            ? 'Nothing had changed: no record was written.'
            : `Wrote ${publish.context?.writes ?? publish.data.records.length} record(s) in ${publish.data.calls} call(s).`}{' '}
          <Link to={readerPath(publish.data.uri)}>Read it as readers will</Link>
        </p>
      )}
      {current ? (
        <p className="notice" role="status">
          Published ({current.status}) at <code>{current.uri}</code> —{' '}
          <Link to={readerPath(current.uri)}>read the published thread</Link>
          {current.error ? ` — ${current.error}` : ''}
        </p>
      ) : (
        <p>
          Publishing writes this Conversation to your own repo: one session record and one record per turn.
          Withheld turns stay visible as holes. A word you redact is covered everywhere it appears — every
          turn, the title, step summaries — and never leaves this server.
          {publication.data?.draft && ' Your choices from before are kept.'}
        </p>
      )}
      <label>
        Title
        <input
          value={title}
          onChange={(e) => setTitle(e.target.value)}
          maxLength={200}
          placeholder={shown ? `Default: ${shown.defaultTitle}` : 'Default: the first published words'}
        />
      </label>
      {removed.length > 0 && (
        <p className="notice covered-note">
          Still covered everywhere, from replies you redacted before they were regenerated:{' '}
          {removed.map((w) => `“${w}”`).join(', ')}.{' '}
          <button type="button" className="link" onClick={() => setForgetRemoved(true)}>
            Stop covering these
          </button>
        </p>
      )}
      {shown && (
        <p className="meta" data-testid="published-title">
          Published as: <Barred text={shown.title} />
        </p>
      )}
      {(shown?.agents.length ?? 0) > 0 && (
        <fieldset className="publish-agents">
          <legend>Who readers are told they talked to</legend>
          <p className="meta">
            Each NPC is published by its name and Job Title. Its own description stays private (for an
            imported card it is the whole character) unless you write one here.
          </p>
          {shown!.agents.map((a) => (
            <div key={a.npcId} className="publish-agent" data-npc-id={a.npcId}>
              <label>
                About {a.name}
                {a.jobTitle ? ` (${a.jobTitle})` : ''}, in your words (published)
                <textarea
                  value={agents[a.npcId]?.description ?? ''}
                  maxLength={300}
                  rows={2}
                  placeholder="Nothing: readers see only the name and Job Title"
                  onChange={(e) =>
                    setAgents((c) => ({ ...c, [a.npcId]: { description: e.target.value || undefined } }))
                  }
                />
              </label>
              {a.description && !agents[a.npcId]?.description && (
                <button
                  type="button"
                  className="link"
                  onClick={() =>
                    setAgents((c) => ({ ...c, [a.npcId]: { description: a.description.slice(0, 300) } }))
                  }
                >
                  Start from {a.name}’s own description
                </button>
              )}
            </div>
          ))}
        </fieldset>
      )}
      <ol className="publish-turns">
        {data.data.messages.map((m, i) => (
          <TurnEditor
            key={m.id}
            message={m}
            text={texts[i]!.text}
            cover={cover}
            choice={choices[m.id] ?? {}}
            defaults={stepDefaults(m.id)}
            problems={problemsOf(m.id)}
            unchecked={uncheckedOf(m.id)}
            onCheck={() => checkLinks([m.id])}
            onChange={(patch) => set(m.id, patch)}
          />
        ))}
      </ol>
      <div className="row">
        <button
          type="button"
          className="secondary"
          onClick={() => preview.mutate()}
          disabled={preview.isPending}
        >
          Preview records
        </button>
        {(shown?.unchecked?.length ?? 0) > 0 && (
          <button
            type="button"
            className="secondary"
            onClick={() => checkLinks(shown!.unchecked.map((u) => u.messageId))}
          >
            Check links of published turns
          </button>
        )}
        <button type="button" onClick={() => publish.mutate()} disabled={publish.isPending}>
          {publish.isPending ? 'Publishing…' : current ? 'Update publication' : 'Publish'}
        </button>
        {current && (
          <button
            type="button"
            className="danger secondary"
            onClick={() =>
              window.confirm('Delete every published record of this Conversation? Your choices are kept.') &&
              unpublish.mutate()
            }
          >
            Unpublish
          </button>
        )}
      </div>
      {current && plan && <LiveSettings conversationId={id} publication={plan} />}
      {publish.isPending && (
        <p className="publish-progress" role="status">
          {planned > 0 ? (
            <>
              <progress aria-label="Publishing" value={planned - (remaining ?? 0)} max={planned} /> Written{' '}
              {planned - (remaining ?? 0)} of {planned} turns to your PDS…
            </>
          ) : (
            <>
              <progress aria-label="Publishing" /> Preparing the records…
            </>
          )}
        </p>
      )}
      {publishProblems ? (
        <ProblemList problems={publishProblems} />
      ) : (
        <ErrorNote error={publish.error ?? unpublish.error ?? preview.error} />
      )}
      {shown && <PreviewView preview={shown} />}
    </div>
  );
}

/**
 * Where the typed words are in `text`, found the way the covering pass finds them (case, accents, curly
 * quotes, widths folded alike): the first place only — the cover takes every other place, in every turn.
 */
function findFirst(text: string, phrase: string): Span[] {
  const [first] = makeCover([phrase]).find(text);
  return first ? [first] : [];
}

/** Offsets of the current selection within `container`'s text, or null when it is not inside it. */
function selectionIn(container: HTMLElement | null): Span | null {
  const selection = window.getSelection();
  if (!container || !selection?.rangeCount) return null;
  const range = selection.getRangeAt(0);
  if (range.collapsed || !container.contains(range.startContainer) || !container.contains(range.endContainer))
    return null;
  const before = document.createRange();
  before.selectNodeContents(container);
  before.setEnd(range.startContainer, range.startOffset);
  const start = before.toString().length;
  return { start, end: start + range.toString().length };
}

function TurnEditor({
  message,
  text,
  cover,
  choice,
  defaults,
  problems,
  unchecked,
  onCheck,
  onChange,
}: {
  message: Message;
  text: string;
  cover: Cover;
  choice: TurnChoice;
  defaults: { name: string; summary: string }[] | undefined;
  problems: Problem[];
  /** Links and mentions not looked up yet (nothing is looked up until the Player asks). */
  unchecked: string[];
  onCheck: () => void;
  onChange: (c: Partial<TurnChoice>) => void;
}) {
  const textRef = useRef<HTMLParagraphElement>(null);
  const parts = readParts(message.parts);
  const tools = parts.filter((p) => p.type === 'tool');
  const attached = attachmentsOf(parts);
  const own = choice.redactions ?? [];
  const extra = extraPlaces(text, own, cover);
  const [hint, setHint] = useState<string | null>(null);
  const [phrase, setPhrase] = useState('');
  const redactSelection = () => {
    const span = selectionIn(textRef.current);
    if (!span) {
      setHint('Select words in this turn’s text first, or type them in the field beside the button.');
      return;
    }
    setHint(null);
    if (!own.some((r) => r.start === span.start && r.end === span.end))
      onChange({ redactions: [...own, span] });
    window.getSelection()?.removeAllRanges();
  };
  // By keyboard: the words typed are redacted where they appear in this turn (and so, like every
  // redaction, covered everywhere they appear).
  const redactPhrase = () => {
    const [span] = findFirst(text, phrase.trim());
    if (!span) {
      setHint(`“${phrase.trim()}” is not in this turn’s text.`);
      return;
    }
    setHint(null);
    setPhrase('');
    if (!own.some((r) => r.start === span.start && r.end === span.end))
      onChange({ redactions: [...own, span] });
  };
  return (
    <li
      className={`card publish-turn ${choice.withheld ? 'withheld' : ''}`}
      data-message-id={message.id}
      id={`turn-${message.id}`}
      tabIndex={-1}
    >
      <div className="row">
        <strong>{message.role === 'npc' ? (message.npcName ?? 'NPC') : 'You'}</strong>
        <label className="check">
          <input
            type="checkbox"
            checked={Boolean(choice.withheld)}
            onChange={(e) => onChange({ withheld: e.target.checked })}
          />
          Withhold this turn
        </label>
      </div>
      {choice.withheld && (
        <div className="meta hole-choices">
          <p>
            Published as a visible hole: none of its words leave, nor when it happened (it shows the time of
            the turn published before it){message.role === 'npc' ? ', nor which model wrote it' : ''}.
          </p>
          <label className="check">
            <input
              type="checkbox"
              checked={Boolean(choice.keepTime)}
              onChange={(e) => onChange({ keepTime: e.target.checked || undefined })}
            />
            Show when it happened ({new Date(message.createdAt).toLocaleString()})
          </label>
          {message.role === 'npc' && message.model && (
            <label className="check">
              <input
                type="checkbox"
                checked={Boolean(choice.keepModel)}
                onChange={(e) => onChange({ keepModel: e.target.checked || undefined })}
              />
              Show which model wrote it ({message.model})
            </label>
          )}
        </div>
      )}
      <p ref={textRef} className="turn-text" data-testid="turn-text">
        <Marked text={text} own={mergeSpans(own, text.length)} extra={extra} />
      </p>
      {extra.length > 0 && !choice.withheld && (
        <p className="meta covered-note">
          {extra.length === 1 ? 'One more place' : `${extra.length} more places`} covered here because you
          redacted the same words elsewhere.
        </p>
      )}
      {unchecked.length > 0 && !choice.withheld && (
        <p className="meta unchecked-links" data-testid="unchecked-links">
          Not checked yet: {unchecked.join(', ')}. Checking asks the network for each (the sites they name see
          the request); publishing checks them too.{' '}
          <button type="button" className="link" onClick={onCheck}>
            Check links
          </button>
        </p>
      )}
      {problems.length > 0 && (
        <ul className="error">
          {problems.map((p) => (
            <li key={`${p.code}-${p.message}`}>{p.message}</li>
          ))}
        </ul>
      )}
      {!choice.withheld && (
        <div className="row redact-row">
          <button type="button" className="secondary" onClick={redactSelection}>
            Redact selection
          </button>
          <label className="inline">
            <span className="visually-hidden">Words to redact in this turn</span>
            <input
              value={phrase}
              placeholder="or type words to redact"
              onChange={(e) => setPhrase(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter') {
                  e.preventDefault();
                  redactPhrase();
                }
              }}
            />
          </label>
          <button type="button" className="secondary" onClick={redactPhrase} disabled={!phrase.trim()}>
            Redact these words
          </button>
        </div>
      )}
      {hint && (
        <p className="meta" role="status">
          {hint}
        </p>
      )}
      {own.length > 0 && (
        <ul className="chips redactions" aria-label="Your redactions in this turn">
          {own.map((r, i) => (
            <li key={`${r.start}-${r.end}`} className="chip">
              “{text.slice(r.start, r.end)}”
              <button
                type="button"
                className="link"
                aria-label={`Stop redacting “${text.slice(r.start, r.end)}”`}
                onClick={() => onChange({ redactions: own.filter((_, j) => j !== i) })}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      {attached.length > 0 && (
        <div className="attachment-note" data-testid="attachment-note">
          <p className="meta">
            {attached.length === 1 ? 'Its attachment' : `Its ${attached.length} attachments`} (
            {attached.map((a) => (a.type === 'file' ? a.name : (a.title ?? a.url))).join(', ')}){' '}
            {attached.length === 1 ? 'stays' : 'stay'} private: never published.
          </p>
          {!choice.withheld && (
            <label>
              Describe what was attached, if the turn needs it (published with the turn)
              <input
                value={choice.attachmentNote ?? ''}
                maxLength={1000}
                placeholder="e.g. a photo of a red bicycle"
                onChange={(e) => onChange({ attachmentNote: e.target.value || undefined })}
              />
            </label>
          )}
        </div>
      )}
      {!choice.withheld && (
        <>
          {tools.map((t, i) => (
            <div key={t.type === 'tool' ? t.id : i} className="step-choice">
              <label>
                Step {i + 1}: name (published)
                <input
                  value={choice.stepNames?.[i] ?? ''}
                  maxLength={64}
                  placeholder={
                    choice.stepNames?.[i] || !defaults?.[i]
                      ? 'Default: a neutral name'
                      : `Default: ${defaults[i]!.name}`
                  }
                  onChange={(e) => onChange({ stepNames: listWith(choice.stepNames, i, e.target.value) })}
                />
              </label>
              {t.type === 'tool' &&
                t.name &&
                !choice.stepNames?.[i] &&
                defaults?.[i] &&
                defaults[i]!.name !== t.name && (
                  <button
                    type="button"
                    className="link"
                    onClick={() => onChange({ stepNames: listWith(choice.stepNames, i, t.name ?? '') })}
                  >
                    Publish its real name ({t.name})
                  </button>
                )}
              <StepSummary index={i} choice={choice} defaults={defaults} cover={cover} onChange={onChange} />
            </div>
          ))}
          <div className="row">
            <label>
              Also about (record links, comma-separated)
              <input
                value={(choice.refs ?? []).join(', ')}
                onChange={(e) => onChange({ refs: splitList(e.target.value) })}
              />
            </label>
            <label>
              Also mentions (@handles)
              <input
                value={(choice.mentions ?? []).join(', ')}
                onChange={(e) => onChange({ mentions: splitList(e.target.value) })}
              />
            </label>
          </div>
        </>
      )}
    </li>
  );
}

/** A step's summary: the Player's words, or the neutral default the placeholder shows. */
function StepSummary({
  index: i,
  choice,
  defaults,
  cover,
  onChange,
}: {
  index: number;
  choice: TurnChoice;
  defaults: { summary: string }[] | undefined;
  cover: Cover;
  onChange: (c: Partial<TurnChoice>) => void;
}) {
  return (
    <label>
      Step {i + 1}: summary
      <input
        value={choice.steps?.[i] ?? ''}
        placeholder={
          choice.steps?.[i] || !defaults?.[i]
            ? 'Default: what kind of call it was, never its arguments'
            : `Default: ${defaults[i]!.summary}`
        }
        maxLength={250}
        onChange={(e) => onChange({ steps: listWith(choice.steps, i, e.target.value) })}
      />
      {choice.steps?.[i] && cover.find(choice.steps[i]).length > 0 && (
        <span className="meta covered-note">
          Published as: <Barred text={cover.apply(choice.steps[i])} />
        </span>
      )}
    </label>
  );
}

/** `list` with its `i`th entry set (empty: null, the default), padded with nulls. */
function listWith(list: (string | null)[] | undefined, i: number, value: string): (string | null)[] {
  const out = [...(list ?? [])];
  while (out.length < i) out.push(null);
  out[i] = value || null;
  return out;
}

/** The turn's own words, with its redactions and the places the cover reaches marked. */
function Marked({ text, own, extra }: { text: string; own: Span[]; extra: Span[] }) {
  const marks = [
    ...own.map((s) => ({ ...s, kind: 'redacted' })),
    ...extra.map((s) => ({ ...s, kind: 'also-covered' })),
  ].sort((a, b) => a.start - b.start);
  const out: React.ReactNode[] = [];
  let at = 0;
  for (const m of marks) {
    if (m.start < at) continue;
    out.push(text.slice(at, m.start));
    out.push(
      <mark
        key={m.start}
        className={m.kind}
        title={m.kind === 'redacted' ? 'Redacted' : 'Covered: you redacted these words elsewhere'}
      >
        {text.slice(m.start, m.end)}
      </mark>,
    );
    at = m.end;
  }
  out.push(text.slice(at));
  return <>{out}</>;
}

const splitList = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
