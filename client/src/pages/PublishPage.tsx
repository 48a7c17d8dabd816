import { Link, useParams } from 'react-router';
import { CoveredDetails, coveredSentences } from '../../../src/wire/index.ts';
import { ApiError } from '../api.ts';
import { useDialogs } from '../components/Dialog.tsx';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { LivePausedNote, LiveSettings } from '../components/LivePublishing.tsx';
import { Barred, PreviewView, type Problem, ProblemList } from '../components/PublishPreview.tsx';
import { ShareLinks } from '../components/ShareLinks.tsx';
import { TurnEditor } from '../components/TurnEditor.tsx';
import { type Publication, usePublication } from '../hooks/usePublication.ts';
import { useDocumentTitle } from '../title.ts';

/** The reader's page for a session at-uri. */
const readerPath = (uri: string) => {
  const [, , did, , rkey] = uri.split('/');
  return `/profile/${did}/thread/${rkey}`;
};

/** What the publication's state means to the Player, as the sentence before the link to the thread. */
const PUBLICATION_STATE: Record<string, string> = {
  published: 'Published.',
  publishing: 'Publishing is under way (it resumes by itself if interrupted).',
  unpublishing: 'Unpublishing is under way.',
  failed: 'Publishing stopped part-way.',
};

type Current = NonNullable<NonNullable<Publication['publication']['data']>['publication']>;

/**
 * Where the publication stands, said once: a failure by its own message (which names the cause), then what
 * finishes it — a live one is tried again by itself (ADR 0077), and so is one the PDS failed (ADR 0091).
 */
function stateLine(c: Current): string {
  const retry = c.retryDueAt
    ? `The server tries again by itself at ${new Date(c.retryDueAt).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}`
    : null;
  if (c.status === 'unpublishing' && retry)
    return `${PUBLICATION_STATE.unpublishing} ${retry}, or unpublish again to finish now. `;
  if (c.status !== 'failed') return `${PUBLICATION_STATE[c.status]} `;
  const next =
    c.live && c.liveDueAt
      ? 'Live publishing tries again by itself, or publish again to finish now.'
      : retry
        ? `${retry}, or publish again to finish now.`
        : 'Publish again to finish.';
  return `${c.error ?? PUBLICATION_STATE.failed} ${next} `;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

export function PublishPage() {
  const [dialogs, dialog] = useDialogs();
  const { id } = useParams() as { id: string };
  useDocumentTitle('Publish');
  const p = usePublication(id);
  const { data, publication, shown, publish, preview, unpublish } = p;
  if (!data.data) return <ErrorNote error={data.error} />;
  const current = publication.data?.publication;
  const confirmUnpublish = async () => {
    const yes = await dialogs.confirm({
      title: 'Unpublish this Conversation?',
      body: 'Every published record of it is deleted from your repo; readers will no longer find it. Your choices are kept for publishing again.',
      action: 'Unpublish',
      danger: true,
    });
    if (yes) unpublish.mutate();
  };
  return (
    <div className="narrow publish">
      {dialog}
      <p>
        <Link to={`/c/${id}`}>← Back to the conversation</Link>
      </p>
      <h1>Publish</h1>
      <PublishStatus p={p} />
      {current?.livePaused && <LivePausedNote />}
      <label>
        Title
        <input
          value={p.title}
          onChange={(e) => p.setTitle(e.target.value)}
          maxLength={200}
          placeholder={shown ? `Default: ${shown.defaultTitle}` : 'Default: the first published words'}
        />
      </label>
      {p.removed.length > 0 && (
        <p className="notice covered-note">
          Still covered everywhere, from replies you redacted before they were regenerated:{' '}
          {p.removed.map((w) => `“${w}”`).join(', ')}.{' '}
          <button type="button" className="link" onClick={p.forgetRemoved}>
            Stop covering these
          </button>
        </p>
      )}
      {shown && (
        <p className="meta" data-testid="published-title">
          Published as: <Barred text={shown.title} />
        </p>
      )}
      {(shown?.agents.length ?? 0) > 0 && <PublishAgents p={p} />}
      <ol className="publish-turns">
        {data.data.messages.map((m, i) => (
          <TurnEditor
            key={m.id}
            message={m}
            text={p.texts[i]!.text}
            cover={p.cover}
            choice={p.choices[m.id] ?? {}}
            defaults={p.stepDefaults(m.id)}
            problems={p.problemsOf(m.id)}
            unchecked={p.uncheckedOf(m.id)}
            onCheck={() => p.checkLinks([m.id])}
            onChange={(patch) => p.set(m.id, patch)}
          />
        ))}
      </ol>
      <PublishActions p={p} onUnpublish={() => void confirmUnpublish()} />
      {current && p.plan && <LiveSettings conversationId={id} publication={p.plan} />}
      {publish.isPending && <PublishProgress planned={p.planned} remaining={p.remaining} />}
      <Refusal problems={p.publishProblems} error={publish.error ?? unpublish.error ?? preview.error} />
      {shown && <PreviewView preview={shown} />}
    </div>
  );
}

/** Why the last publish was refused: its problems, each by its turn, or its error. */
function Refusal({ problems, error }: { problems: Problem[] | null; error: unknown }) {
  if (!problems) return <ErrorNote error={error} />;
  return (
    <>
      <ProblemList problems={problems} />
      <CoveredNote error={error} />
    </>
  );
}

/**
 * A refused publish still covered the words just covered in what was already out (ADR 0090): said beside the
 * problems (other refusals say it in their message).
 */
function CoveredNote({ error }: { error: unknown }) {
  const parsed =
    error instanceof ApiError
      ? CoveredDetails.safeParse((error.details as { covered?: unknown } | undefined)?.covered)
      : undefined;
  const covered = parsed?.success ? parsed.data : undefined;
  if (!covered?.records && !covered?.tooMany) return null;
  const { rewritten, tooMany } = coveredSentences(covered);
  const done = covered.written
    ? rewritten
    : covered.covering && covered.held.length
      ? 'Covering the words you just covered and withholding the turns you just withheld, in what was published, did not finish. Publish again to finish it.'
      : covered.covering
        ? 'Covering the words you just covered in what was published did not finish. Publish again to finish it.'
        : 'Making the turns you just withheld holes in what was published did not finish. Publish again to finish it.';
  return (
    <p className="notice" role="status" data-testid="covered-at-once">
      {[covered.records ? done : '', tooMany].filter(Boolean).join(' ')}
    </p>
  );
}

/** What was just written, where the publication stands and the link to it (or what publishing does). */
function PublishStatus({ p }: { p: Publication }) {
  const { publish, shown } = p;
  const current = p.publication.data?.publication;
  return (
    <>
      {publish.data && !publish.isPending && (
        <p role="status" className="notice" id="publish-outcome" tabIndex={-1} ref={p.outcomeRef}>
          {publish.context?.writes === 0
            ? 'Nothing had changed since you last published, so nothing was written.'
            : `Published: ${plural(publish.context?.writes ?? publish.data.records.length, 'record')} written to your repo.`}
        </p>
      )}
      {current ? (
        <p className="notice" role="status">
          {/* Just published: the outcome above already says so, this line only leads to the thread. */}
          {publish.data && !publish.isPending && current.status === 'published' ? '' : stateLine(current)}
          <Link to={readerPath(current.uri)}>Read it as readers will</Link>
          {current.error && current.status !== 'failed' ? ` — ${current.error}` : ''}{' '}
          <small>
            (<code>{current.uri}</code>)
          </small>
        </p>
      ) : (
        <p>
          Publishing writes this Conversation to your own repo: one session record and one record per turn.
          Withheld turns stay visible as holes. A word you redact is covered everywhere it appears — every
          turn, the title, step summaries — and never leaves this server.
          {p.publication.data?.draft && ' Your choices from before are kept.'}
        </p>
      )}
      {current?.status === 'published' && (
        <ShareLinks title={shown?.title ?? p.title} path={readerPath(current.uri)} />
      )}
    </>
  );
}

/** Who readers are told each NPC is: its name and Job Title, and a description in the Player's words. */
function PublishAgents({ p }: { p: Publication }) {
  const { agents, setAgents } = p;
  return (
    <fieldset className="publish-agents">
      <legend>Who readers are told they talked to</legend>
      <p className="meta">
        Each NPC is published by its name and Job Title. Its own description stays private (for an imported
        card it is the whole character) unless you write one here.
      </p>
      {p.shown!.agents.map((a) => (
        <div key={a.npcId} className="publish-agent" data-npc-id={a.npcId}>
          {a.avatarUrl && <AvatarTick p={p} npcId={a.npcId} name={a.name} src={a.avatarUrl} />}
          <label>
            About {a.name}
            {a.jobTitle ? ` (${a.jobTitle})` : ''}, in your words (published)
            <textarea
              value={agents[a.npcId]?.description ?? ''}
              maxLength={300}
              rows={2}
              placeholder="Nothing: readers see only the name and Job Title"
              onChange={(e) =>
                setAgents((c) => ({
                  ...c,
                  [a.npcId]: { ...c[a.npcId], description: e.target.value || undefined },
                }))
              }
            />
          </label>
          {a.description && !agents[a.npcId]?.description && (
            <button
              type="button"
              className="link"
              onClick={() =>
                setAgents((c) => ({
                  ...c,
                  [a.npcId]: { ...c[a.npcId], description: a.description.slice(0, 300) },
                }))
              }
            >
              Start from {a.name}’s own description
            </button>
          )}
        </div>
      ))}
    </fieldset>
  );
}

/** Off unless ticked: a card's picture is often someone else's art (ADR 0065). */
function AvatarTick({ p, npcId, name, src }: { p: Publication; npcId: string; name: string; src: string }) {
  const { agents, setAgents } = p;
  return (
    <label className="check publish-avatar">
      <img src={src} alt={name} width={48} height={48} />
      <input
        type="checkbox"
        checked={agents[npcId]?.avatar ?? false}
        onChange={(e) =>
          setAgents((c) => ({ ...c, [npcId]: { ...c[npcId], avatar: e.target.checked || undefined } }))
        }
      />
      Publish {name}’s picture
    </label>
  );
}

function PublishActions({ p, onUnpublish }: { p: Publication; onUnpublish: () => void }) {
  const { preview, publish, shown } = p;
  const current = p.publication.data?.publication;
  return (
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
          onClick={() => p.checkLinks(shown!.unchecked.map((u) => u.messageId))}
        >
          Check links of published turns
        </button>
      )}
      <button type="button" onClick={() => publish.mutate()} disabled={publish.isPending}>
        {publish.isPending ? 'Publishing…' : current ? 'Update publication' : 'Publish'}
      </button>
      {current && (
        <button type="button" className="danger secondary" onClick={onUnpublish}>
          Unpublish
        </button>
      )}
    </div>
  );
}

function PublishProgress({ planned, remaining }: { planned: number; remaining: number | undefined }) {
  return (
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
  );
}
