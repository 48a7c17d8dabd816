import { REDACTION_BAR } from '../../../src/redaction/index.ts';
import type { PublishPreview as Preview, PublishProblem as Problem } from '../../../src/wire/index.ts';

export type { Preview, Problem };

/** What must be fixed before publishing, each linked to its turn (which takes the focus). */
export function ProblemList({ problems }: { problems: Problem[] }) {
  if (!problems.length) return null;
  return (
    <div className="error problems" role="alert">
      <p>{problems.length === 1 ? 'One thing' : `${problems.length} things`} to fix before publishing:</p>
      <ul>
        {problems.map((p) => (
          <li key={`${p.messageId}-${p.code}-${p.message}`}>
            {p.messageId ? (
              <a
                href={`#turn-${p.messageId}`}
                onClick={(e) => {
                  e.preventDefault();
                  const turn = document.getElementById(`turn-${p.messageId}`);
                  turn?.scrollIntoView({ block: 'center' });
                  turn?.focus();
                }}
              >
                {p.turn != null ? `Turn ${p.turn}` : 'A turn'}
              </a>
            ) : (
              'The session'
            )}
            : {p.message}
          </li>
        ))}
      </ul>
    </div>
  );
}

interface SessionValue {
  title: string;
  agents?: { name: string; role?: string; description?: string; model?: string; avatar?: unknown }[];
}
interface MessageValue {
  role: 'user' | 'assistant';
  text?: string;
  withheld?: boolean;
  model?: string;
  steps?: { name: string; summary?: string; failed?: boolean }[];
  refs?: { uri: string }[];
  mentions?: string[];
}

/** Published text with each bar marked, so every covered place stands out. */
export function Barred({ text }: { text: string }) {
  const pieces = text.split(REDACTION_BAR);
  return (
    <>
      {pieces.map((piece, i) => (
        <span key={i}>
          {piece}
          {i < pieces.length - 1 && (
            <mark className="bar" title="Covered: these words are not published">
              {REDACTION_BAR}
            </mark>
          )}
        </span>
      ))}
    </>
  );
}

const WRITE = { create: 'new', update: 'changed', delete: 'deleted' } as Record<string, string>;

/** Every field of every record, as it will be written, read like the thread it becomes; the JSON beneath. */
export function PreviewView({ preview }: { preview: Preview }) {
  const [session, ...turns] = preview.records;
  const s = session?.record as SessionValue | undefined;
  const unchecked = (messageId: string | null) =>
    preview.unchecked?.find((u) => u.messageId === messageId)?.links.length ?? 0;
  return (
    <section aria-labelledby="preview-heading" className="card preview">
      <h2 id="preview-heading">Exactly what will be written ({preview.records.length} records)</h2>
      <ProblemList problems={preview.problems} />
      <p className="meta">
        {preview.points > 0
          ? `About ${preview.points} of your PDS's write points. `
          : 'Nothing left to write. '}
        Each <mark className="bar">{REDACTION_BAR}</mark> covers words that are never published.
      </p>
      {s && <PreviewSession s={s} avatars={preview.agents.map((a) => a.avatarUrl)} />}
      <ol className="preview-turns">
        {turns.map((r) => (
          <PreviewTurn key={r.rkey} r={r} unchecked={unchecked(r.messageId)} />
        ))}
      </ol>
      <details>
        <summary>The records as JSON</summary>
        <pre className="records">{JSON.stringify(preview.records, null, 2)}</pre>
      </details>
    </section>
  );
}

/** One turn's record, read as the thread shows it: a hole, or its words, steps, links and mentions. */
function PreviewTurn({ r, unchecked }: { r: Preview['records'][number]; unchecked: number }) {
  const m = r.record as MessageValue;
  return (
    <li data-message-id={r.messageId ?? ''} className={m.withheld ? 'preview-turn hole' : 'preview-turn'}>
      <span className="meta">
        {m.role === 'user' ? 'You' : (m.model ?? 'NPC')}
        {r.write ? ` · ${WRITE[r.write] ?? r.write}` : ' · unchanged'}
      </span>
      {m.withheld ? (
        <p>Withheld: a turn happened here and was not published.</p>
      ) : (
        <>
          {m.text && (
            <p className="turn-text">
              <Barred text={m.text} />
            </p>
          )}
          {m.steps && (
            <ul className="steps">
              {m.steps.map((step, i) => (
                <li key={i} className={step.failed ? 'failed' : ''}>
                  <code>
                    <Barred text={step.name} />
                  </code>
                  {step.summary && (
                    <>
                      {' — '}
                      <Barred text={step.summary} />
                    </>
                  )}
                  {step.failed && ' (failed)'}
                </li>
              ))}
            </ul>
          )}
          {(m.refs?.length || m.mentions?.length) && (
            <p className="meta">
              {plural(m.refs?.length ?? 0, 'record link')}, {plural(m.mentions?.length ?? 0, 'account')}{' '}
              mentioned
            </p>
          )}
          {unchecked > 0 && (
            <p className="meta">
              {unchecked === 1 ? 'A link or mention is' : `${unchecked} links or mentions are`} not checked
              yet
            </p>
          )}
        </>
      )}
    </li>
  );
}

/** The session record: its title and who the readers are told they talked to. */
/** The session record as a reader meets it; `avatars`: each named NPC's picture in the app (the same order). */
function PreviewSession({ s, avatars }: { s: SessionValue; avatars: (string | null)[] }) {
  return (
    <div className="preview-session" data-testid="preview-session">
      <h3>
        <Barred text={s.title} />
      </h3>
      <ul className="preview-agents">
        {(s.agents ?? []).map((a, i) => (
          <li key={a.name}>
            {/* The picture the record carries (ADR 0065): the same NPCs, in the same order, as `agents`. */}
            {a.avatar && avatars[i] ? (
              <img className="avatar" src={avatars[i]} alt={a.name} width={32} height={32} />
            ) : null}
            <strong>
              <Barred text={a.name} />
            </strong>
            {a.role && (
              <>
                {' — '}
                <Barred text={a.role} />
              </>
            )}
            {a.description && (
              <>
                : <Barred text={a.description} />
              </>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
