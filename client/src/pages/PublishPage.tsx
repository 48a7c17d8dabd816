import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState } from 'react';
import { Link, useParams } from 'react-router';
import { flattenText, readParts } from '../../../src/parts/index.ts';
import { type AgentChoices, type Choices, coverOf, type TurnChoice } from '../../../src/redaction/index.ts';
import { ConversationPage, MessagePage } from '../../../src/wire/index.ts';
import { ApiError, api, fetchAs } from '../api.ts';
import { useDialogs } from '../components/Dialog.tsx';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { LivePausedNote, LiveSettings, type LiveView } from '../components/LivePublishing.tsx';
import {
  Barred,
  type Preview,
  PreviewView,
  type Problem,
  ProblemList,
} from '../components/PublishPreview.tsx';
import { ShareLinks } from '../components/ShareLinks.tsx';
import { TurnEditor } from '../components/TurnEditor.tsx';
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

/** What the publication's state means to the Player, as the sentence before the link to the thread. */
const PUBLICATION_STATE: Record<string, string> = {
  published: 'Published.',
  publishing: 'Publishing is under way (it resumes by itself if interrupted).',
  unpublishing: 'Unpublishing is under way.',
  failed: 'Publishing stopped part-way; publish again to finish.',
};

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

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
  const [dialogs, dialog] = useDialogs();
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
      {dialog}
      <p>
        <Link to={`/c/${id}`}>← Back to the conversation</Link>
      </p>
      <h1>Publish</h1>
      {publish.data && !publish.isPending && (
        <p role="status" className="notice" id="publish-outcome" tabIndex={-1} ref={outcomeRef}>
          {publish.context?.writes === 0
            ? 'Nothing had changed since you last published, so nothing was written.'
            : `Published: ${plural(publish.context?.writes ?? publish.data.records.length, 'record')} written to your repo.`}
        </p>
      )}
      {current ? (
        <p className="notice" role="status">
          {/* Just published: the outcome above already says so, this line only leads to the thread. */}
          {publish.data && !publish.isPending && current.status === 'published'
            ? ''
            : `${PUBLICATION_STATE[current.status]} `}
          <Link to={readerPath(current.uri)}>Read it as readers will</Link>
          {current.error ? ` — ${current.error}` : ''}{' '}
          <small>
            (<code>{current.uri}</code>)
          </small>
        </p>
      ) : (
        <p>
          Publishing writes this Conversation to your own repo: one session record and one record per turn.
          Withheld turns stay visible as holes. A word you redact is covered everywhere it appears — every
          turn, the title, step summaries — and never leaves this server.
          {publication.data?.draft && ' Your choices from before are kept.'}
        </p>
      )}
      {current?.status === 'published' && (
        <ShareLinks title={shown?.title ?? title} path={readerPath(current.uri)} />
      )}
      {current?.livePaused && <LivePausedNote />}
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
              {a.avatarUrl && (
                // Off unless ticked: a card's picture is often someone else's art (ADR 0065).
                <label className="check publish-avatar">
                  <img src={a.avatarUrl} alt={a.name} width={48} height={48} />
                  <input
                    type="checkbox"
                    checked={agents[a.npcId]?.avatar ?? false}
                    onChange={(e) =>
                      setAgents((c) => ({
                        ...c,
                        [a.npcId]: { ...c[a.npcId], avatar: e.target.checked || undefined },
                      }))
                    }
                  />
                  Publish {a.name}’s picture
                </label>
              )}
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
            onClick={async () => {
              const yes = await dialogs.confirm({
                title: 'Unpublish this Conversation?',
                body: 'Every published record of it is deleted from your repo; readers will no longer find it. Your choices are kept for publishing again.',
                action: 'Unpublish',
                danger: true,
              });
              if (yes) unpublish.mutate();
            }}
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
