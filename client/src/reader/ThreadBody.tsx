// Rendered on the server too, where tsx compiles it by the root tsconfig (which covers only src/, test/ and
// scripts/): this pragma gives it the automatic JSX runtime there (test/web/ssrRuntime.test.ts checks).
/** @jsxRuntime automatic @jsxImportSource react */
import { useState } from 'react';
import type { ThreadWindow } from '../../../src/markdown/index.ts';
import { LabelNotice } from '../components/LabelNotice.tsx';
import { Markdown } from '../components/Markdown.tsx';
import type { ThreadData } from './types.ts';

/**
 * Who a turn is from: the author for `user`; for `assistant`, the agent's name when the session names exactly
 * one (else "AI character"); any other role, from a third-party client, is shown as it is, marked unknown.
 */
export function speakerOf(role: string, author: string, agents: { name: string }[] | undefined): string {
  if (role === 'user') return author;
  if (role === 'assistant') return agents?.length === 1 ? agents[0]!.name : 'AI character';
  return `${role} (unknown role)`;
}

const AVATAR_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];

/**
 * Where the reader shows an agent's avatar from: this server's route, which serves only a blob an indexed session
 * references, fetched and checked (ADR 0065) — never an address the record names. Undefined when there is none or
 * the record's reference is not one the route would serve.
 */
export function avatarSrc(did: string, avatar: unknown): string | undefined {
  const a = avatar as { $type?: unknown; ref?: { $link?: unknown }; mimeType?: unknown } | null | undefined;
  const cid = a?.ref?.$link;
  if (a?.$type !== 'blob' || typeof cid !== 'string' || !/^b[a-z2-7]{20,100}$/.test(cid)) return undefined;
  if (!AVATAR_TYPES.includes(a.mimeType as string)) return undefined;
  return `/api/reader/avatars/${encodeURIComponent(did)}/${cid}`;
}

/** An agent's picture: a fixed size (no layout shift while it loads), loaded only when near the view. */
function Avatar({
  did,
  agent,
  size,
}: {
  did: string;
  agent: { name: string; avatar?: unknown };
  size: number;
}) {
  const src = avatarSrc(did, agent.avatar);
  return src ? (
    <img className="avatar" src={src} alt={agent.name} width={size} height={size} loading="lazy" />
  ) : null;
}

/**
 * A date the same on the server and in any browser (hydration compares text: a local time would differ by the
 * reader's time zone), in UTC.
 */
export function utcDate(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** One turn: who and which model, then its steps, text, refs and mentions — or the hole it left. */
function Turn({ m, author, t }: { m: ThreadData['messages'][number]; author: string; t: ThreadData }) {
  // A labelled turn the reader clicked through (kept while the thread is polled again: same component).
  const [shownAnyway, setShownAnyway] = useState(false);
  return (
    <li className={`message ${m.record.role === 'user' ? 'player' : 'npc'}`} data-rkey={m.rkey}>
      <header>
        {m.record.role === 'assistant' && t.session.agents?.length === 1 && (
          <Avatar did={t.author.did} agent={t.session.agents[0]!} size={24} />
        )}
        <span className="speaker">{speakerOf(m.record.role, author, t.session.agents)}</span>
        {m.record.model && <span className="model">{m.record.model}</span>}
      </header>
      {m.record.withheld ? (
        <p className="hole">
          {m.hidden
            ? 'A turn happened here; a moderation service this instance follows hid it.'
            : 'A turn happened here and was not published.'}
        </p>
      ) : m.labels?.length && !shownAnyway ? (
        <LabelNotice labels={m.labels} subject="turn" onShow={() => setShownAnyway(true)} />
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
  );
}

/**
 * A published thread as a reader sees it, the same on the server (rendered to HTML, readable with no script) and
 * in the browser (hydrated over that HTML): no router, no query cache, plain links.
 */
export function ThreadBody({
  t,
  pageSize = 100,
  window: at,
}: {
  t: ThreadData;
  pageSize?: number;
  /** On a reading page: which page of the thread `t` holds (its turns are that page's only). */
  window?: ThreadWindow;
}) {
  // In the app a long thread renders a page of turns at a time; the server's page holds them all (no script
  // needed to read to the end), and its hydration must render the same.
  const [visible, setVisible] = useState(pageSize);
  // The thread whose warning the reader clicked through (another thread asks again).
  const [shownAnyway, setShownAnyway] = useState<string | null>(null);
  const shown = t.messages.slice(0, visible);
  const warned = Boolean(t.labels?.length) && shownAnyway !== t.uri;
  const author = t.author.handle ? `@${t.author.handle}` : t.author.did;
  return (
    <>
      <h1>{t.session.title}</h1>
      <p className="meta">
        A conversation <a href={`/profile/${t.author.handle ?? t.author.did}`}>{author}</a> published · began{' '}
        <time dateTime={t.session.createdAt}>{utcDate(t.session.createdAt)}</time>
      </p>
      {t.session.agents?.length ? (
        <p className="meta agents">
          With{' '}
          {t.session.agents.map((a, i) => (
            <span key={i} className="agent">
              {i > 0 && ', '}
              <Avatar did={t.author.did} agent={a} size={32} />
              {`${a.name}${a.role ? ` (${a.role})` : ''}`}
            </span>
          ))}{' '}
          — AI characters.
        </p>
      ) : null}
      {at && at.pages > 1 && <Pages at={at} label="Pages of this conversation" />}
      {warned ? (
        <LabelNotice labels={t.labels!} onShow={() => setShownAnyway(t.uri)} />
      ) : (
        <ol className="thread" start={at ? at.first + 1 : undefined}>
          {shown.map((m) => (
            <Turn key={m.rkey} m={m} author={author} t={t} />
          ))}
        </ol>
      )}
      {!warned && t.messages.length > visible && (
        <button type="button" className="secondary" onClick={() => setVisible(visible + pageSize)}>
          Show {Math.min(pageSize, t.messages.length - visible)} more turns
        </button>
      )}
      {at && at.pages > 1 && <Pages at={at} label="Pages of this conversation, at its end" />}
    </>
  );
}

/** Which turns of a long thread this page holds, and links to the pages beside it (plain links: no script). */
function Pages({ at, label }: { at: ThreadWindow; label: string }) {
  return (
    <nav className="meta pages" aria-label={label}>
      {at.page > 1 && (
        <a href={`?page=${at.page - 1}`} rel="prev">
          ← Earlier turns
        </a>
      )}
      <span>{`Turns ${at.first + 1}–${at.end} of ${at.total} · page ${at.page} of ${at.pages}`}</span>
      {at.page < at.pages && (
        <a href={`?page=${at.page + 1}`} rel="next">
          Later turns →
        </a>
      )}
    </nav>
  );
}
