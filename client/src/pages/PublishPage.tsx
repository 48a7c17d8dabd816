import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import { flattenText, readParts } from '../../../src/parts/index.ts';
import { api, type Conversation, type Message } from '../api.ts';
import { ErrorNote } from '../components/ErrorNote.tsx';

interface Choice {
  withheld?: boolean;
  redactions?: { start: number; end: number }[];
  steps?: (string | null)[];
  refs?: string[];
  mentions?: string[];
}
interface PublicationView {
  status: string;
  uri: string;
  title: string;
  error: string | null;
  turns: { messageId: string; choice: Choice }[];
}
interface Preview {
  uri: string;
  records: {
    rkey: string;
    collection: string;
    messageId: string | null;
    record: unknown;
    write: string | null;
  }[];
  problems: { messageId: string | null; turn: number | null; message: string }[];
  points: number;
}

const BAR = '█'.repeat(8);

/** The reader's page for a session at-uri. */
const readerPath = (uri: string) => {
  const [, , did, , rkey] = uri.split('/');
  return `/profile/${did}/thread/${rkey}`;
};

/** Loads every Message of the Conversation, oldest first (the editor shows them all). */
async function allMessages(id: string) {
  const first = await api<{ conversation: Conversation; messages: Message[]; before: string | null }>(
    `/api/conversations/${id}?limit=200`,
  );
  let messages = first.messages;
  for (let before = first.before; before; ) {
    const page = await api<{ messages: Message[]; before: string | null }>(
      `/api/conversations/${id}/messages?limit=200&before=${before}`,
    );
    messages = [...page.messages, ...messages];
    before = page.before;
  }
  return { conversation: first.conversation, messages };
}

export function PublishPage() {
  const { id } = useParams() as { id: string };
  const queryClient = useQueryClient();
  const data = useQuery({ queryKey: ['publish-source', id], queryFn: () => allMessages(id) });
  const publication = useQuery({
    queryKey: ['publication', id],
    queryFn: () => api<{ publication: PublicationView | null }>(`/api/conversations/${id}/publication`),
  });
  const [choices, setChoices] = useState<Record<string, Choice>>({});
  const [title, setTitle] = useState('');
  useEffect(() => {
    const p = publication.data?.publication;
    if (p) {
      setChoices(Object.fromEntries(p.turns.map((t) => [t.messageId, t.choice])));
      setTitle(p.title);
    }
  }, [publication.data]);
  useEffect(() => {
    if (data.data && !title) setTitle(data.data.conversation.title ?? '');
  }, [data.data, title]);

  const body = () => ({ title: title || undefined, choices });
  const preview = useMutation({
    mutationFn: () => api<Preview>(`/api/conversations/${id}/publication/preview`, { body: body() }),
  });
  const publish = useMutation({
    mutationFn: () => api<Preview>(`/api/conversations/${id}/publication`, { method: 'PUT', body: body() }),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['publication', id] }),
  });
  const unpublish = useMutation({
    mutationFn: () => api(`/api/conversations/${id}/publication`, { method: 'DELETE' }),
    onSuccess: () => {
      setChoices({});
      queryClient.invalidateQueries({ queryKey: ['publication', id] });
    },
  });
  const set = (messageId: string, patch: Partial<Choice>) =>
    setChoices((c) => ({ ...c, [messageId]: { ...c[messageId], ...patch } }));

  if (!data.data) return <ErrorNote error={data.error} />;
  const current = publication.data?.publication;
  return (
    <div className="narrow publish">
      <p>
        <Link to={`/c/${id}`}>← Back to the conversation</Link>
      </p>
      <h1>Publish</h1>
      {current ? (
        <p className="notice" role="status">
          Published ({current.status}) at <code>{current.uri}</code> —{' '}
          <Link to={readerPath(current.uri)}>read the published thread</Link>
          {current.error ? ` — ${current.error}` : ''}
        </p>
      ) : (
        <p>
          Publishing writes this Conversation to your own repo: one session record and one record per turn.
          Withheld turns stay visible as holes; redacted words never leave this server.
        </p>
      )}
      <label>
        Title
        <input value={title} onChange={(e) => setTitle(e.target.value)} maxLength={200} />
      </label>
      <ol className="publish-turns">
        {data.data.messages.map((m) => (
          <TurnEditor
            key={m.id}
            message={m}
            choice={choices[m.id] ?? {}}
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
        <button type="button" onClick={() => publish.mutate()} disabled={publish.isPending}>
          {publish.isPending ? 'Publishing…' : current ? 'Update publication' : 'Publish'}
        </button>
        {current && (
          <button
            type="button"
            className="danger secondary"
            onClick={() =>
              window.confirm('Delete every published record of this Conversation?') && unpublish.mutate()
            }
          >
            Unpublish
          </button>
        )}
      </div>
      {publish.isPending && <progress aria-label="Publishing" />}
      <ErrorNote error={publish.error ?? unpublish.error ?? preview.error} />
      {publish.data && (
        <p role="status" className="notice">
          Published {publish.data.records.length} records at <code>{publish.data.uri}</code>.
        </p>
      )}
      {preview.data && <PreviewView preview={preview.data} />}
    </div>
  );
}

function TurnEditor({
  message,
  choice,
  onChange,
}: {
  message: Message;
  choice: Choice;
  onChange: (c: Partial<Choice>) => void;
}) {
  const parts = readParts(message.parts);
  const text = flattenText(parts);
  const tools = parts.filter((p) => p.type === 'tool');
  const redactSelection = () => {
    const selection = window.getSelection();
    const range = selection?.rangeCount ? selection.getRangeAt(0) : null;
    const node = document.getElementById(`turn-text-${message.id}`)?.firstChild;
    if (!range || !node || range.startContainer !== node || range.endContainer !== node || range.collapsed)
      return;
    onChange({
      redactions: [...(choice.redactions ?? []), { start: range.startOffset, end: range.endOffset }],
    });
    selection?.removeAllRanges();
  };
  return (
    <li className={`card publish-turn ${choice.withheld ? 'withheld' : ''}`} data-message-id={message.id}>
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
      {!choice.withheld && (
        <>
          <p id={`turn-text-${message.id}`} className="turn-text">
            {text}
          </p>
          <div className="row">
            <button type="button" className="secondary" onClick={redactSelection}>
              Redact selection
            </button>
            {(choice.redactions?.length ?? 0) > 0 && (
              <button type="button" className="link" onClick={() => onChange({ redactions: [] })}>
                Clear {choice.redactions!.length} redaction(s)
              </button>
            )}
          </div>
          {(choice.redactions?.length ?? 0) > 0 && (
            <p className="redacted-preview">
              <span className="visually-hidden">Published text: </span>
              {applyBars(text, choice.redactions!)}
            </p>
          )}
          {tools.map((t, i) => (
            <label key={t.type === 'tool' ? t.id : i}>
              Step {i + 1}: {t.type === 'tool' ? t.name : ''} — summary
              <input
                value={choice.steps?.[i] ?? ''}
                placeholder="Default: the call and its arguments"
                maxLength={250}
                onChange={(e) => {
                  const steps = [...(choice.steps ?? [])];
                  steps[i] = e.target.value || null;
                  onChange({ steps });
                }}
              />
            </label>
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

const splitList = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** The same bars the server will publish (the server's projection is what counts; this is a preview). */
function applyBars(text: string, spans: { start: number; end: number }[]): string {
  let out = '';
  let at = 0;
  for (const s of [...spans].sort((a, b) => a.start - b.start)) {
    if (s.end <= at) continue;
    out += text.slice(at, Math.max(at, s.start)) + BAR;
    at = s.end;
  }
  return out + text.slice(at);
}

function PreviewView({ preview }: { preview: Preview }) {
  return (
    <section aria-labelledby="preview-heading" className="card">
      <h2 id="preview-heading">Exactly what will be written ({preview.records.length} records)</h2>
      {preview.problems.length > 0 && (
        <ul className="error" role="alert">
          {preview.problems.map((p) => (
            <li key={`${p.messageId}-${p.message}`}>{p.message}</li>
          ))}
        </ul>
      )}
      <p className="meta">About {preview.points} of your PDS's write points.</p>
      <pre className="records">{JSON.stringify(preview.records, null, 2)}</pre>
    </section>
  );
}
