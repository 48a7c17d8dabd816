import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { api } from '../api.ts';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { LabelNotice } from '../components/LabelNotice.tsx';
import { Markdown } from '../components/Markdown.tsx';
import { ReaderHeader } from '../components/ReaderHeader.tsx';
import { useDocumentTitle } from '../title.ts';

interface ThreadView {
  uri: string;
  author: { did: string; handle: string | null };
  session: {
    title: string;
    createdAt: string;
    agents?: { name: string; role?: string; description?: string }[];
  };
  messages: {
    uri: string;
    rkey: string;
    record: {
      role: string;
      createdAt: string;
      text?: string;
      withheld?: boolean;
      model?: string;
      steps?: { name: string; summary?: string; failed?: boolean }[];
    };
    refs: { uri: string; state: 'same' | 'changed' | 'deleted' | 'unchecked'; text: string | null }[];
    mentions: { did: string; handle: string | null }[];
    /** Labels of followed moderation services on this turn that warn: a notice in the turn's place. */
    labels?: { src: string; val: string }[];
    /** A followed moderation service hid this turn: it is a hole (`record.withheld`). */
    hidden?: boolean;
  }[];
  /** Labels of followed moderation services that warn rather than hide: shown as a notice first. */
  labels?: { src: string; val: string }[];
}

/** A published thread as a reader sees it, with only its link: no sign-in. */
/**
 * Who a turn is from: the author for `user`; for `assistant`, the agent's name when the session names exactly
 * one (else "AI character"); any other role, from a third-party client, is shown as it is, marked unknown.
 */
export function speakerOf(role: string, author: string, agents: { name: string }[] | undefined): string {
  if (role === 'user') return author;
  if (role === 'assistant') return agents?.length === 1 ? agents[0]!.name : 'AI character';
  return `${role} (unknown role)`;
}

export function ThreadPage() {
  const { actor, rkey } = useParams() as { actor: string; rkey: string };
  // A long thread renders a page of turns at a time.
  const [visible, setVisible] = useState(100);
  // The thread whose warning the reader clicked through (another thread asks again).
  const [shownAnyway, setShownAnyway] = useState<string | null>(null);
  // The labelled turns the reader clicked through, by URI (kept while the thread is polled again).
  const [turnsShown, setTurnsShown] = useState<ReadonlySet<string>>(new Set());
  const thread = useQuery({
    queryKey: ['thread', actor, rkey],
    queryFn: () => api<{ thread: ThreadView }>(`/api/reader/threads/${encodeURIComponent(actor)}/${rkey}`),
    // A thread published live grows while it is read: asked again every 5 s while the tab is shown.
    refetchInterval: 5000,
  });
  useDocumentTitle(thread.data?.thread.session.title ?? 'A published conversation');
  if (!thread.data)
    return (
      <main className="reader">
        <ReaderHeader />
        {thread.error ? (
          <ErrorNote error={thread.error} />
        ) : (
          <p className="loading">
            Loading the thread (reading its author's repository if this server has not seen it)…
          </p>
        )}
      </main>
    );
  const t = thread.data.thread;
  const shown = t.messages.slice(0, visible);
  const author = t.author.handle ? `@${t.author.handle}` : t.author.did;
  return (
    <main className="reader" id="main">
      <ReaderHeader />
      <h1>{t.session.title}</h1>
      <p className="meta">
        A conversation <Link to={`/profile/${t.author.handle ?? t.author.did}`}>{author}</Link> published ·
        began {new Date(t.session.createdAt).toLocaleString()}
      </p>
      {t.session.agents?.length ? (
        <p className="meta">
          With {t.session.agents.map((a) => `${a.name}${a.role ? ` (${a.role})` : ''}`).join(', ')} — AI
          characters.
        </p>
      ) : null}
      {t.labels?.length && shownAnyway !== t.uri ? (
        <LabelNotice labels={t.labels} onShow={() => setShownAnyway(t.uri)} />
      ) : (
        turns()
      )}
    </main>
  );

  /** The turns, a page at a time (a plain function, not a component: nothing remounts). */
  function turns() {
    return (
      <>
        <ol className="thread">
          {shown.map((m) => (
            <li
              key={m.rkey}
              className={`message ${m.record.role === 'user' ? 'player' : 'npc'}`}
              data-rkey={m.rkey}
            >
              <header>
                <span className="speaker">{speakerOf(m.record.role, author, t.session.agents)}</span>
                {m.record.model && <span className="model">{m.record.model}</span>}
              </header>
              {m.record.withheld ? (
                <p className="hole">
                  {m.hidden
                    ? 'A turn happened here; a moderation service this instance follows hid it.'
                    : 'A turn happened here and was not published.'}
                </p>
              ) : m.labels?.length && !turnsShown.has(m.uri) ? (
                <LabelNotice
                  labels={m.labels}
                  subject="turn"
                  onShow={() => setTurnsShown((s) => new Set(s).add(m.uri))}
                />
              ) : (
                <>
                  {m.record.steps?.length ? (
                    <ul className="steps" aria-label="Tools used">
                      {m.record.steps.map((s, i) => (
                        <li key={i} className={s.failed ? 'failed' : ''}>
                          <code>{s.name}</code> {s.summary} {s.failed && <strong>(failed)</strong>}
                        </li>
                      ))}
                    </ul>
                  ) : null}
                  {m.record.text && <Markdown text={m.record.text} />}
                  {m.refs.map((r) => (
                    <blockquote key={r.uri} className={`ref ${r.state}`}>
                      {r.state === 'deleted'
                        ? 'This record has been deleted.'
                        : r.state === 'unchecked'
                          ? r.uri
                          : r.text}
                      {r.state === 'changed' && <span className="meta"> (changed since)</span>}
                      <br />
                      <small>{r.uri}</small>
                    </blockquote>
                  ))}
                  {m.mentions.length > 0 && (
                    <p className="meta">
                      About {m.mentions.map((x) => (x.handle ? `@${x.handle}` : x.did)).join(', ')}
                    </p>
                  )}
                </>
              )}
            </li>
          ))}
        </ol>
        {t.messages.length > visible && (
          <button type="button" className="secondary" onClick={() => setVisible(visible + 100)}>
            Show {Math.min(100, t.messages.length - visible)} more turns
          </button>
        )}
      </>
    );
  }
}
