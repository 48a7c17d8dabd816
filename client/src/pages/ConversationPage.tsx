import { useQuery } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useMemo, useRef } from 'react';
import { useParams } from 'react-router';
import { VillageView } from '../../../src/wire/index.ts';
import { fetchAs } from '../api.ts';
import { AvatarContext } from '../components/Avatar.tsx';
import { ChatHeader } from '../components/ChatHeader.tsx';
import { ChatLayout } from '../components/ChatLayout.tsx';
import { Composer } from '../components/Composer.tsx';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { LiveBanner } from '../components/LivePublishing.tsx';
import { BranchContext, ContinueContext, MessageView, type ViewMessage } from '../components/MessageView.tsx';
import { ReplyMode } from '../components/ReplyMode.tsx';
import { type Live, useConversation } from '../hooks/useConversation.ts';
import { useLiveHeights, usePinnedToBottom } from '../pinned.ts';
import { useDocumentTitle } from '../title.ts';

export function ConversationPage() {
  const { id } = useParams() as { id: string };
  const c = useConversation(id);
  const { query, first, stored, live, streaming } = c;
  const avatars = useMemo(
    () => new Map((first?.participants ?? []).flatMap((p) => (p.avatarUrl ? [[p.name, p.avatarUrl]] : []))),
    [first?.participants],
  );
  // The Village's default Model, for NPCs that have none of their own (the composer's capability note).
  const village = useQuery({ queryKey: ['village'], queryFn: () => fetchAs(VillageView, '/api/village') });
  useDocumentTitle(first?.conversation?.title ?? 'Conversation');
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
        <BranchContext.Provider value={c.actions}>
          <ContinueContext.Provider value={c.continueAction}>
            <Transcript
              rows={c.rows}
              live={live}
              hasOlder={Boolean(query.hasNextPage)}
              loadOlder={() => query.fetchNextPage()}
              loadingOlder={query.isFetchingNextPage}
              focusId={c.focusId}
            />
          </ContinueContext.Provider>
        </BranchContext.Provider>
      </AvatarContext.Provider>
      {live?.error && (
        <p role="alert" className="error">
          {live.error}
        </p>
      )}
      <ErrorNote error={c.error} />
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
        canRegenerate={!streaming && c.last?.role === 'npc'}
        onSend={c.send}
        onStop={c.stop}
        onRegenerate={c.regenerate}
        branch={c.branch}
        onCancelBranch={() => c.setBranch(null)}
        returned={c.returned}
      />
    </ChatLayout>
  );
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
