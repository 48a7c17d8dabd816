import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState } from 'react';
import type { z } from 'zod';
import { flattenText, readParts } from '../../../src/parts/index.ts';
import { type AgentChoices, type Choices, coverOf, type TurnChoice } from '../../../src/redaction/index.ts';
import {
  ConversationPage,
  CoveredDetails,
  MessagePage,
  PublicationResponse,
  PublishPreview,
  PublishResult,
} from '../../../src/wire/index.ts';
import { ApiError, api, fetchAs } from '../api.ts';
import type { Preview, Problem } from '../components/PublishPreview.tsx';

type Draft = NonNullable<z.output<typeof PublicationResponse>['draft']>;

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

/** The Player's choices, filled once from the kept draft (choices and title survive an unpublish). */
function useDraft(stored: { draft: Draft | null } | undefined) {
  const [choices, setChoices] = useState<Choices>({});
  const [agents, setAgents] = useState<AgentChoices>({});
  const [title, setTitle] = useState('');
  const [forgetRemoved, setForgetRemoved] = useState(false);
  const [loaded, setLoaded] = useState(false);
  useEffect(() => {
    if (!stored || loaded) return;
    const draft = stored.draft;
    if (draft) {
      setChoices(draft.choices);
      setAgents(draft.agents ?? {});
      setTitle(draft.title ?? '');
    }
    setLoaded(true);
  }, [stored, loaded]);

  return { choices, setChoices, agents, setAgents, title, setTitle, forgetRemoved, setForgetRemoved, loaded };
}

/** The stored publication, read every 300 ms while publishing: how many turns are still to be written. */
function usePublishProgress(id: string) {
  // While publishing, the stored plan is read every 300 ms: how many turns are still to be written.
  const [publishing, setPublishing] = useState(false);
  const publication = useQuery({
    queryKey: ['publication', id],
    queryFn: () => fetchAs(PublicationResponse, `/api/conversations/${id}/publication`),
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
  return { publication, plan, remaining, planned, setPlanned, setPublishing };
}

/** Publishing: what it wrote is what is shown next, and the outcome gets the focus. */
function usePublish(
  id: string,
  body: () => object,
  texts: { id: string }[],
  shown: Preview | null,
  setShown: (p: Preview) => void,
  { setPlanned, setPublishing }: ReturnType<typeof usePublishProgress>,
  /** Turns a refused publish made holes in what was out (ADR 0090): withheld in the draft, so here too. */
  heldBack: (ids: string[]) => void,
) {
  const queryClient = useQueryClient();
  const publish = useMutation({
    mutationFn: () =>
      fetchAs(PublishResult, `/api/conversations/${id}/publication`, {
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
      const covered =
        e instanceof ApiError
          ? CoveredDetails.safeParse((e.details as { covered?: unknown } | undefined)?.covered)
          : undefined;
      if (covered?.success && covered.data.withheld.length) heldBack(covered.data.withheld);
    },
  });
  // The outcome is said at the top of the page, where the eye (and a screen reader) is sent.
  const outcomeRef = useRef<HTMLParagraphElement>(null);
  useEffect(() => {
    if (publish.data) outcomeRef.current?.focus();
  }, [publish.data]);
  return { publish, outcomeRef };
}

/** What the editor shows beside each turn: links not yet checked, problems, the default step summaries. */
function turnLookups(shown: Preview | null, publishError: unknown, choices: Choices) {
  const uncheckedOf = (messageId: string) =>
    shown?.unchecked?.find((u) => u.messageId === messageId)?.links ?? [];

  // A refused publish's problems, less those of turns withheld since (by the Player, or by the refusal itself when
  // covering at once made them holes): a withheld turn goes out as a hole, whatever its text.
  const publishProblems =
    publishError instanceof ApiError && publishError.code === 'PUBLISH_PROBLEMS'
      ? ((publishError.details as { problems?: Problem[] } | undefined)?.problems?.filter(
          (p) => !p.messageId || !choices[p.messageId]?.withheld,
        ) ?? null)
      : null;
  const problemsOf = (messageId: string) =>
    (publishProblems ?? shown?.problems ?? []).filter((p) => p.messageId === messageId);
  const stepDefaults = (messageId: string) =>
    (
      shown?.records.find((r) => r.messageId === messageId)?.record as {
        steps?: { name: string; summary: string }[];
      }
    )?.steps;

  return { uncheckedOf, publishProblems, problemsOf, stepDefaults };
}

/** Every turn's text, and the cover over it: the Player's redactions, and words covered from before. */
function useCover(
  messages: { id: string; parts: unknown }[] | undefined,
  draft: Draft | null | undefined,
  choices: Choices,
  forgetRemoved: boolean,
) {
  const texts = useMemo(
    () => (messages ?? []).map((m) => ({ id: m.id, text: flattenText(readParts(m.parts)) })),
    [messages],
  );
  const removed = useMemo(() => (forgetRemoved ? [] : (draft?.removedWords ?? [])), [forgetRemoved, draft]);
  // The same covering pass the server runs: what the editor marks is what the records will cover.
  const cover = useMemo(() => coverOf(texts, choices, removed), [texts, choices, removed]);

  return { texts, removed, cover };
}

/**
 * The server's preview of the choices (its projection is the truth), asked for 400 ms after the last change once
 * the Messages and the draft are loaded, or at once by `previewNow`.
 */
function usePreview(
  id: string,
  request: () => object,
  /** Changes with every change to what is previewed. */
  signature: string,
  source: unknown,
  loaded: boolean,
) {
  const [shown, setShown] = useState<Preview | null>(null);
  // Only the latest preview asked for is shown: an earlier one answering late would show choices since changed.
  const asked = useRef(0);
  const preview = useMutation({
    mutationFn: async () => {
      const mine = ++asked.current;
      const answer = await fetchAs(PublishPreview, `/api/conversations/${id}/publication/preview`, {
        body: request(),
      });
      return { answer, latest: mine === asked.current };
    },
    onSuccess: ({ answer, latest }) => {
      if (latest) setShown(answer);
    },
  });
  // The preview follows the editor: every change is previewed by the server.
  const previewNow = preview.mutate;
  useEffect(() => {
    if (!source || !loaded || !signature) return;
    const timer = setTimeout(() => previewNow(), 400);
    return () => clearTimeout(timer);
  }, [signature, source, loaded, previewNow]);
  return { shown, setShown, preview, previewNow };
}

/**
 * The Publish page's state: the Conversation's Messages, the stored publication and draft, the Player's
 * choices, the server's preview of them (following every change), and publishing and unpublishing.
 */
export function usePublication(id: string) {
  const queryClient = useQueryClient();
  const data = useQuery({ queryKey: ['publish-source', id], queryFn: () => allMessages(id) });
  const progress = usePublishProgress(id);
  const { publication, plan, remaining, planned } = progress;
  const { choices, setChoices, agents, setAgents, title, setTitle, forgetRemoved, setForgetRemoved, loaded } =
    useDraft(publication.data);
  const { texts, removed, cover } = useCover(
    data.data?.messages,
    publication.data?.draft,
    choices,
    forgetRemoved,
  );

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
  const { shown, setShown, preview, previewNow } = usePreview(
    id,
    () => ({ ...body(), ...(check.length ? { check } : {}) }),
    JSON.stringify([body(), check]),
    data.data,
    loaded,
  );

  const { publish, outcomeRef } = usePublish(id, body, texts, shown, setShown, progress, (ids) =>
    setChoices((c) => ({
      ...c,
      ...Object.fromEntries(ids.map((m) => [m, { ...c[m], withheld: true }])),
    })),
  );
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
  return {
    data,
    publication,
    plan,
    remaining,
    planned,
    choices,
    agents,
    setAgents,
    title,
    setTitle,
    forgetRemoved: () => setForgetRemoved(true),
    removed,
    texts,
    cover,
    shown,
    preview,
    publish,
    outcomeRef,
    unpublish,
    set,
    checkLinks,
    ...turnLookups(shown, publish.error, choices),
  };
}

export type Publication = ReturnType<typeof usePublication>;
