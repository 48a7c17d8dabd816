import { useInfiniteQuery, useQuery, useQueryClient } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useMemo, useRef, useState } from 'react';
import { useParams, useSearchParams } from 'react-router';
import type { z } from 'zod';
import { type AttachmentPart, applyFrame, type Frame, type LiveTurn } from '../../../src/parts/index.ts';
import { ConversationPage as FirstPage, MessagePage, VillageView } from '../../../src/wire/index.ts';
import { api, fetchAs } from '../api.ts';
import { AvatarContext } from '../components/Avatar.tsx';
import { ChatHeader } from '../components/ChatHeader.tsx';
import { ChatLayout } from '../components/ChatLayout.tsx';
import { Composer } from '../components/Composer.tsx';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { LiveBanner } from '../components/LivePublishing.tsx';
import {
  type BranchActions,
  BranchContext,
  type ContinueAction,
  ContinueContext,
  MessageView,
  type ViewMessage,
} from '../components/MessageView.tsx';
import { ReplyMode } from '../components/ReplyMode.tsx';
import { useLiveHeights, usePinnedToBottom } from '../pinned.ts';
import { streamTurn } from '../stream.ts';
import { useDocumentTitle } from '../title.ts';

/** A page of Messages; the first also carries the Conversation and its NPCs. */
type Page = z.output<typeof MessagePage> & Partial<z.output<typeof FirstPage>>;

/** What is streaming right now: the optimistic Player Message and the replies as their frames arrive. */
type Live = LiveTurn<ViewMessage>;

const PAGE = 50;

/** What Continue sends after a reply cut at the output limit: the cut reply is in the history it reads. */
export const CONTINUE_TEXT = 'Continue from where you were cut off.';

export function ConversationPage() {
  const liveRef = useRef<Live | null>(null);
  const { id } = useParams() as { id: string };
  const queryClient = useQueryClient();
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
  const first = query.data?.pages[0];
  const avatars = useMemo(
    () => new Map((first?.participants ?? []).flatMap((p) => (p.avatarUrl ? [[p.name, p.avatarUrl]] : []))),
    [first?.participants],
  );
  // The Village's default Model, for NPCs that have none of their own (the composer's capability note).
  const village = useQuery({ queryKey: ['village'], queryFn: () => fetchAs(VillageView, '/api/village') });
  useDocumentTitle(first?.conversation?.title ?? 'Conversation');
  const stored = (query.data?.pages ?? [])
    .slice()
    .reverse()
    .flatMap((p) => p.messages);
  const [live, setLive] = useState<Live | null>(null);
  liveRef.current = live;
  // Opened at a turn (a search result): earlier pages are loaded until it is there, then it is shown.
  const at = useSearchParams()[0].get('at');
  const found = at !== null && stored.some((m) => m.id === at);
  const pagesLoaded = query.data?.pages.length ?? 0;
  useEffect(() => {
    if (at && !found && query.hasNextPage && !query.isFetchingNextPage && pagesLoaded < 100)
      void query.fetchNextPage();
  }, [at, found, query.hasNextPage, query.isFetchingNextPage, pagesLoaded, query.fetchNextPage]);
  const [error, setError] = useState<unknown>(null);
  const abortRef = useRef<AbortController | null>(null);
  // Stop pressed before the reply's start frame arrived: sent as soon as its id is known.
  const stopAsked = useRef(false);
  // Replies this page has followed already (a failed follow falls back to polling, not to a loop).
  const followed = useRef(new Set<string>());

  const liveIds = new Set(live?.replies.map((r) => r.id));
  const visible = (
    live?.hideAfterSeq ? stored.filter((m) => BigInt(m.seq) <= BigInt(live.hideAfterSeq!)) : stored
  ).filter((m) => !liveIds.has(m.id));
  const rows: ViewMessage[] = [...visible, ...(live?.player ? [live.player] : [])];
  const streaming = live !== null;

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
  ) {
    let accepted = false;
    const controller = new AbortController();
    abortRef.current = controller;
    stopAsked.current = false;
    setError(null);
    setLive({ player, replies: [], hideAfterSeq });
    const onFrame = (frame: Frame) => {
      if (frame.type === 'start' && stopAsked.current) void stopReply(frame.messageId);
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

  // A branch to start with the next send: an edit of a Player Message, or a fork from a reply (ADR 0042).
  const [branch, setBranch] = useState<{
    key: string;
    parentId: string | null;
    label: string;
    text: string;
  } | null>(null);
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
      );
    });
  };
  // The memoized actions call the newest `send` (it reads this render's transcript).
  const sendRef = useRef(send);
  sendRef.current = send;
  const streamingRef = useRef(false);
  streamingRef.current = live !== null;
  const actions: BranchActions = useMemo(
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

  // Opened (or reloaded) while a reply is being written, here or anywhere: follow it live to its end.
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

  // Stop: the reply is stopped wherever it is written; this page reads on to its end.
  const stop = () => {
    const current = live?.replies.findLast((r) => r.status === 'streaming');
    if (current) void stopReply(current.id);
    else stopAsked.current = true;
  };

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
  return (
    <ChatLayout currentId={id}>
      <ChatHeader
        conversationId={id}
        title={first?.conversation?.title ?? null}
        names={first?.participants?.map((n) => n.name) ?? []}
        settings={
          (first?.participants?.length ?? 0) > 1 && first?.conversation ? (
            <ReplyMode id={id} value={first.conversation.replyMode} />
          ) : undefined
        }
      />
      <ErrorNote error={query.error} />
      <AvatarContext.Provider value={avatars}>
        <BranchContext.Provider value={actions}>
          <ContinueContext.Provider value={continueAction}>
            <Transcript
              rows={rows}
              live={live}
              hasOlder={Boolean(query.hasNextPage)}
              loadOlder={() => query.fetchNextPage()}
              loadingOlder={query.isFetchingNextPage}
              focusId={found ? at : null}
            />
          </ContinueContext.Provider>
        </BranchContext.Provider>
      </AvatarContext.Provider>
      {live?.error && (
        <p role="alert" className="error">
          {live.error}
        </p>
      )}
      <ErrorNote error={error} />
      <LiveBanner
        conversationId={id}
        path={stored
          .filter((m) => m.status !== 'streaming')
          .map((m) => ({ id: m.id, who: m.role === 'player' ? 'You' : (m.npcName ?? 'NPC'), text: m.text }))}
      />
      <Composer
        conversationId={id}
        defaults={{
          provider: village.data?.settings.defaultProvider ?? null,
          model: village.data?.settings.defaultModel ?? null,
        }}
        participants={first?.participants ?? []}
        streaming={streaming}
        canRegenerate={!streaming && last?.role === 'npc'}
        onSend={send}
        onStop={stop}
        onRegenerate={regenerate}
        branch={branch}
        onCancelBranch={() => setBranch(null)}
      />
    </ChatLayout>
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

function Transcript(props: {
  rows: ViewMessage[];
  live: Live | null;
  hasOlder: boolean;
  loadOlder: () => void;
  loadingOlder: boolean;
  /** A turn to bring into view and mark (opened from a search result). */
  focusId: string | null;
}) {
  const { rows, live, focusId } = props;
  const scrollRef = useRef<HTMLDivElement>(null);
  const liveRef = useRef<HTMLDivElement>(null);
  const liveHeights = useLiveHeights(liveRef);
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: (i) => liveHeights.get(rows[i]?.id ?? '') ?? 140,
    overscan: 6,
    getItemKey: (i) => rows[i]?.id ?? i,
  });
  // The newest turn stays in view while the Player is at the end (pinned.ts); sending goes back there.
  const pinned = usePinnedToBottom(scrollRef);
  const sentId = live?.player?.id;
  useEffect(() => {
    if (sentId) pinned.pin();
  }, [sentId, pinned]);
  const focusIndex = focusId ? rows.findIndex((r) => r.id === focusId) : -1;
  useEffect(() => {
    if (focusIndex < 0) return;
    pinned.release();
    virtualizer.scrollToIndex(focusIndex, { align: 'center' });
  }, [focusIndex, virtualizer, pinned]);

  return (
    <div className="transcript" data-count={rows.length} ref={scrollRef}>
      {props.hasOlder && (
        <button type="button" className="older" onClick={props.loadOlder} disabled={props.loadingOlder}>
          {props.loadingOlder ? 'Loading…' : 'Load earlier messages'}
        </button>
      )}
      <div className="virtual" style={{ height: virtualizer.getTotalSize() }}>
        {virtualizer.getVirtualItems().map((item) => (
          <div
            key={item.key}
            data-index={item.index}
            ref={virtualizer.measureElement}
            className={item.index === focusIndex ? 'virtual-row focused' : 'virtual-row'}
            style={{ transform: `translateY(${item.start}px)` }}
          >
            <MessageView message={rows[item.index]!} />
          </div>
        ))}
      </div>
      {/* The reply being written: announced to screen readers as it arrives. */}
      <div className="live" aria-live="polite" aria-busy={live ? 'true' : 'false'} ref={liveRef}>
        {live?.replies.map((r) => (
          <MessageView key={r.id} message={r} />
        ))}
      </div>
    </div>
  );
}
