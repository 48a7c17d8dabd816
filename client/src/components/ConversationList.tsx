import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { ConversationListResponse } from '../../../src/wire/index.ts';
import { fetchAs } from '../api.ts';
import { ErrorNote } from './ErrorNote.tsx';

/**
 * The Player's Conversations, newest first, beside the chat (a drawer on a phone): the one open is marked.
 * The same query as the Conversations page, so a rename or a new turn shows in both.
 */
export function ConversationList({ currentId, onGo }: { currentId: string; onGo?: () => void }) {
  const list = useQuery({
    queryKey: ['conversations'],
    queryFn: () => fetchAs(ConversationListResponse, '/api/conversations?limit=100'),
  });
  return (
    <div className="chat-list">
      <Link to="/" className="chat-list-new" onClick={onGo}>
        Start a conversation
      </Link>
      <ErrorNote error={list.error} />
      <ul className="chat-items">
        {list.data?.conversations.map((c) => (
          <li key={c.id}>
            <Link
              to={`/c/${c.id}`}
              aria-current={c.id === currentId ? 'page' : undefined}
              onClick={onGo}
              title={c.title ?? 'New conversation'}
            >
              {c.title ?? 'New conversation'}
            </Link>
          </li>
        ))}
      </ul>
    </div>
  );
}
