import type { ReactNode } from 'react';
import { useVisibleViewport } from '../viewport.ts';
import { ConversationList } from './ConversationList.tsx';

/**
 * The chat's frame: on a wide screen the Conversation list beside it; on a phone the chat alone (the list is a
 * drawer in its header). The frame is exactly the visible screen (keyboard excluded) and does not scroll: the
 * transcript inside is the one scroller, and the composer stays at the bottom.
 */
export function ChatLayout({ currentId, children }: { currentId: string; children: ReactNode }) {
  useVisibleViewport();
  return (
    <div className="chat-layout">
      <nav className="chat-side" aria-label="Your conversations">
        <ConversationList currentId={currentId} />
      </nav>
      <div className="conversation">{children}</div>
    </div>
  );
}
