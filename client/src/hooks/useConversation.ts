import { useInfiniteQuery, useQueryClient } from '@tanstack/react-query';
import { type RefObject, useEffect, useMemo, useRef, useState } from 'react';
import { useSearchParams } from 'react-router';
import type { z } from 'zod';
import { type AttachmentPart, applyFrame, type Frame, type LiveTurn } from '../../../src/parts/index.ts';
import { ConversationPage as FirstPage, MessagePage } from '../../../src/wire/index.ts';
import { api, fetchAs } from '../api.ts';
import type { BranchActions, ContinueAction, ViewMessage } from '../components/MessageView.tsx';
import { streamTurn } from '../stream.ts';

/** A page of Messages; the first also carries the Conversation and its NPCs. */
type Page = z.output<typeof MessagePage> & Partial<z.output<typeof FirstPage>>;

/** What is streaming right now: the optimistic Player Message and the replies as their frames arrive. */
export type Live = LiveTurn<ViewMessage>;

const PAGE = 50;

/** What Continue sends after a reply cut at the output limit: the cut reply is in the history it reads. */
export const CONTINUE_TEXT = 'Continue from where you were cut off.';

/** The stored transcript, page by page, oldest first; opened at a turn, earlier pages load until it is there. */
function useStoredTranscript(id: string, liveRef: RefObject<Live | null>) {
  const query = useInfiniteQuery({
    queryKey: ['conversation', id],
    queryFn: ({ pageParam }): Promise<Page> =>
      pageParam
        ? fetchAs(MessagePage, `/api/conversations/${id}/messages?before=${pageParam}&limit=${PAGE}`)
        : fetchAs(FirstPage, `/api/conversations/${id}?limit=${PAGE}`),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.before,
    // A reply still being written is followed live (below); should following fail, it is polled until it settles.
    refetchInterval: (q) =>
      !liveRef.current && q.state.data?.pages.some((p) => p.messages.some((m) => m.status === 'streaming'))
        ? 1000
        : false,
  });
  const stored = (query.data?.pages ?? [])
    .slice()
    .reverse()
    .flatMap((p) => p.messages);
  // Opened at a turn (a search result): earlier pages are loaded until it is there, then it is shown.
  const at = useSearchParams()[0].get('at');
  const found = at !== null && stored.some((m) => m.id === at);
  const pagesLoaded = query.data?.pages.length ?? 0;
  useEffect(() => {
    if (at && !found && query.hasNextPage && !query.isFetchingNextPage && pagesLoaded < 100)
      void query.fetchNextPage();
  }, [at, found, query.hasNextPage, query.isFetchingNextPage, pagesLoaded, query.fetchNextPage]);
  return { query, first: query.data?.pages[0], stored, focusId: found ? at : null };
}

/** A turn's stream: the live replies as their frames arrive, Stop, and the error it ended with. */
function useTurnStream(id: string, liveRef: RefObject<Live | null>) {
  const queryClient = useQueryClient();
  const [live, setLive] = useState<Live | null>(null);
  liveRef.current = live;
  const [error, setError] = useState<unknown>(null);
  const abortRef = useRef<AbortController | null>(null);
  // Stop pressed before the reply's start frame arrived: sent as soon as its id is known.
  const stopAsked = useRef(false);

  const stopReply = (replyId: string) =>
    api(`/api/conversations/${id}/messages/${replyId}/stop`, { method: 'POST' }).catch(setError);

  async function run(
    path: string,
    body: unknown,
    player?: ViewMessage,
    hideAfterSeq?: string,
    method: 'GET' | 'POST' = 'POST',
    /** Told whether the server accepted the turn: true as its stream opens, false if it was refused. */
    onAccepted?: (accepted: boolean) => void,
    /** Told when the turn, accepted, then could not be stored (ADR 0099): nothing of it was kept. */
    onNotStored?: () => void,
  ) {
    let accepted = false;
    const controller = new AbortController();
    abortRef.current = controller;
    stopAsked.current = false;
    setError(null);
    setLive({ player, replies: [], hideAfterSeq });
    const onFrame = (frame: Frame) => {
      if (frame.type === 'start' && stopAsked.current) void stopReply(frame.messageId);
      // Said where it stays once the stream has ended (the live reply goes, and nothing stored replaces it).
      if (frame.type === 'error' && frame.code === 'NOT_STORED') {
        setError(new Error(frame.message));
        onNotStored?.();
      }
      setLive((l) => (l ? applyFrame(l, frame) : l));
    };
    try {
      await streamTurn(path, body, onFrame, controller.signal, method, () => {
        accepted = true;
        onAccepted?.(true);
      });
    } catch (e) {
      setError(e);
    } finally {
      if (!accepted) onAccepted?.(false);
      abortRef.current = null;
      await queryClient.invalidateQueries({ queryKey: ['conversation', id] });
      queryClient.invalidateQueries({ queryKey: ['conversations'] });
      setLive(null);
    }
  }

  // Stop: the reply is stopped wherever it is written; this page reads on to its end.
  const stop = () => {
    const current = live?.replies.findLast((r) => r.status === 'streaming');
    if (current) void stopReply(current.id);
    else stopAsked.current = true;
  };
  return { live, error, setError, run, stop };
}

type Branch = { key: string; parentId: string | null; label: string; text: string };
/** Words and attachments given back to the composer, each time with a new key. */
export type Returned = { key: number; conversationId: string; text: string; attachments: AttachmentPart[] };
let returns = 0;

/**
 * The Conversation page's state: the stored transcript, the turn streaming now (sent here, or followed when
 * opened while a reply is written), the branch the next send starts, and the actions on Messages.
 */
export function useConversation(id: string) {
  const liveRef = useRef<Live | null>(null);
  const { query, first, stored, focusId } = useStoredTranscript(id, liveRef);
  const { live, error, setError, run, stop } = useTurnStream(id, liveRef);
  const rows = rowsOf(stored, live);
  useFollow(id, stored, live, run);
  const streaming = live !== null;

  // A branch to start with the next send: an edit of a Player Message, or a fork from a reply (ADR 0042).
  const [branch, setBranch] = useState<Branch | null>(null);
  const { send, returned } = useSend(id, stored, run, branch, setBranch);
  const actions = useBranchActions(id, live, send, setBranch, setError);
  const regenerate = () => {
    const lastPlayer = [...stored].reverse().find((m) => m.role === 'player');
    if (lastPlayer) run(`/api/conversations/${id}/regenerate`, {}, undefined, lastPlayer.seq);
  };
  const last = stored.at(-1);
  const continueAction: ContinueAction = {
    lastId: live ? null : (last?.id ?? null),
    enabled: !streaming,
    // The same NPC goes on, in a Party too.
    go: (m) => void send(CONTINUE_TEXT, [], first?.participants?.find((p) => p.name === m.npcName)?.id),
  };
  return {
    query,
    first,
    stored,
    focusId,
    live,
    error,
    rows,
    streaming,
    last,
    branch,
    setBranch,
    returned,
    send,
    stop,
    regenerate,
    actions,
    continueAction,
  };
}

/**
 * Sending a Message, from the composer or an edit in place, and what comes back to the composer: a Message
 * accepted and then not stored (ADR 0099).
 */
function useSend(
  id: string,
  stored: { id: string; seq: string }[],
  run: ReturnType<typeof useTurnStream>['run'],
  branch: Branch | null,
  setBranch: (b: Branch | null) => void,
) {
  const [returned, setReturned] = useState<Returned | null>(null);
  // Resolves true once the server has accepted the turn (the composer lets go of the words then), false
  // when it was refused (they stay in the box, beside the reason).
  // `edit`: a branch started from a Message edited in place, which does not touch the composer's own.
  const send = (
    text: string,
    attachments: AttachmentPart[],
    npcId?: string,
    edit?: { parentId: string | null },
  ): Promise<boolean> => {
    const from = edit ? { key: '', label: '', text: '', ...edit } : branch;
    if (!edit) setBranch(null);
    // Until the new branch is stored, what follows the branch point is hidden.
    const hideAfter = from
      ? from.parentId
        ? (stored.find((m) => m.id === from.parentId)?.seq ?? '0')
        : '0'
      : undefined;
    return new Promise<boolean>((accepted) => {
      void run(
        `/api/conversations/${id}/messages`,
        {
          text,
          ...(attachments.length ? { attachments: attachments.map((a) => a.id) } : {}),
          ...(npcId ? { npcId } : {}),
          ...(from ? { branchFrom: { parentId: from.parentId } } : {}),
        },
        optimisticPlayer(text, attachments),
        hideAfter,
        'POST',
        (ok) => {
          // A refused edit keeps its branch: sending again still starts it.
          if (!ok && from && !edit) setBranch(from);
          accepted(ok);
        },
        () => {
          // Accepted, then not stored: the composer's words (and the branch they started) come back, to be sent
          // again. An edit made in place is made again there.
          if (edit) return;
          if (from) setBranch(from);
          setReturned({ key: ++returns, conversationId: id, text, attachments });
        },
      );
    });
  };
  return { send, returned };
}

/** What the transcript shows: the stored Messages (less what a new branch replaces, and the live replies). */
function rowsOf(stored: Page['messages'], live: Live | null): ViewMessage[] {
  const liveIds = new Set(live?.replies.map((r) => r.id));
  const visible = (
    live?.hideAfterSeq ? stored.filter((m) => BigInt(m.seq) <= BigInt(live.hideAfterSeq!)) : stored
  ).filter((m) => !liveIds.has(m.id));
  return [...visible, ...(live?.player ? [live.player] : [])];
}

/** Opened (or reloaded) while a reply is being written, here or anywhere: follow it live to its end. */
function useFollow(
  id: string,
  stored: { id: string; role: string; status: string }[],
  live: Live | null,
  run: ReturnType<typeof useTurnStream>['run'],
) {
  // Replies this page has followed already (a failed follow falls back to polling, not to a loop).
  const followed = useRef(new Set<string>());

  const streamingReply = stored.findLast((m) => m.role === 'npc' && m.status === 'streaming');
  useEffect(() => {
    if (!streamingReply || live || followed.current.has(streamingReply.id)) return;
    followed.current.add(streamingReply.id);
    void run(
      `/api/conversations/${id}/messages/${streamingReply.id}/stream`,
      undefined,
      undefined,
      undefined,
      'GET',
    );
  });
}

/** Show, edit and fork, memoized for the transcript's rows; they call the newest `send`. */
function useBranchActions(
  id: string,
  live: Live | null,
  send: (
    text: string,
    a: AttachmentPart[],
    npcId?: string,
    edit?: { parentId: string | null },
  ) => Promise<boolean>,
  setBranch: (b: Branch) => void,
  setError: (e: unknown) => void,
): BranchActions {
  const queryClient = useQueryClient();
  // The memoized actions call the newest `send` (it reads this render's transcript).
  const sendRef = useRef(send);
  sendRef.current = send;
  const streamingRef = useRef(false);
  streamingRef.current = live !== null;
  return useMemo(
    () => ({
      enabled: live === null,
      show: (messageId) => {
        if (streamingRef.current) return;
        api(`/api/conversations/${id}/branch`, { body: { messageId } })
          .then(() => queryClient.invalidateQueries({ queryKey: ['conversation', id] }))
          .catch(setError);
      },
      edit: (m, text) => sendRef.current(text, [], undefined, { parentId: m.parentId ?? null }),
      fork: (m) =>
        setBranch({
          key: `fork-${m.id}`,
          parentId: m.id,
          label: `Branching from ${m.npcName ?? 'this'} reply: what you send next starts a new branch.`,
          text: '',
        }),
    }),
    [id, live === null, queryClient],
  );
}

function optimisticPlayer(text: string, attachments: AttachmentPart[]): ViewMessage {
  return {
    id: `pending-${Date.now()}`,
    role: 'player',
    npcName: null,
    // What the server stores: the trimmed text (when there is any), then the attachments in order.
    parts: [...(text.trim() ? [{ type: 'text', text: text.trim() }] : []), ...attachments],
    status: 'complete',
    error: null,
    provider: null,
    model: null,
    usage: null,
    costUsd: null,
  };
}

export type ConversationState = ReturnType<typeof useConversation>;
