import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import {
  ConversationCreated,
  type ConversationListItem,
  ConversationListResponse,
  NpcListResponse,
} from '../../../src/wire/index.ts';
import { api, fetchAs } from '../api.ts';
import { ConversationImport } from '../components/ConversationImport.tsx';
import { useDialogs } from '../components/Dialog.tsx';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { SearchBox } from '../components/SearchBox.tsx';
import { useDocumentTitle } from '../title.ts';

const PUBLICATION_LABEL = {
  publishing: 'Publishing…',
  published: 'Published',
  unpublishing: 'Unpublishing…',
  failed: 'Publishing paused',
} as const;

type Item = ConversationListItem;

export function ConversationsPage() {
  const [dialogs, dialog] = useDialogs();
  useDocumentTitle('Conversations');
  const queryClient = useQueryClient();
  const list = useQuery({
    queryKey: ['conversations'],
    queryFn: () => fetchAs(ConversationListResponse, '/api/conversations?limit=100'),
  });
  const npcs = useQuery({ queryKey: ['npcs'], queryFn: () => fetchAs(NpcListResponse, '/api/npcs') });
  const rename = useMutation({
    mutationFn: ({ id, title }: { id: string; title: string }) =>
      api(`/api/conversations/${id}`, { method: 'PATCH', body: { title } }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['conversations'] }),
  });
  const remove = useMutation({
    mutationFn: (id: string) => api(`/api/conversations/${id}`, { method: 'DELETE' }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['conversations'] }),
  });
  const names = new Map((npcs.data?.npcs ?? []).map((n) => [n.id, n.name]));
  const askRename = async (c: Item) => {
    const title = await dialogs.prompt({
      title: 'Rename conversation',
      label: 'Title',
      value: c.title ?? '',
      action: 'Rename',
    });
    if (title?.trim()) rename.mutate({ id: c.id, title });
  };
  const askDelete = async (c: Item) => {
    const yes = await dialogs.confirm({
      title: `Delete “${c.title ?? 'this conversation'}”?`,
      body: 'Its Messages, branches and attachments are deleted. This cannot be undone.',
      action: 'Delete',
      danger: true,
    });
    if (yes) remove.mutate(c.id);
  };

  return (
    <div className="narrow">
      <h1>Conversations</h1>
      <SearchBox />
      <NewConversation npcs={npcs.data?.npcs} />
      <ErrorNote error={list.error ?? rename.error ?? remove.error} />
      <ul className="conversation-list">
        {list.data?.conversations.map((c) => (
          <li key={c.id}>
            <Link to={`/c/${c.id}`} className="title">
              {c.title ?? 'New conversation'}
            </Link>
            {c.publication && (
              <span className={`badge ${c.publication}`}>{PUBLICATION_LABEL[c.publication]}</span>
            )}
            <span className="meta">
              {(c.npcIds ?? []).map((id) => names.get(id) ?? '…').join(', ')} · {c.updatedAt.toLocaleString()}
            </span>
            <span className="actions">
              <button type="button" className="link" onClick={() => void askRename(c)}>
                Rename
              </button>
              <button type="button" className="link danger" onClick={() => void askDelete(c)}>
                Delete
              </button>
            </span>
          </li>
        ))}
      </ul>
      {list.data?.conversations.length === 0 && <p className="empty">No conversations yet.</p>}
      <ConversationImport />
      {dialog}
    </div>
  );
}

/** The NPCs to start a Conversation with, picked; starting it goes there. */
function NewConversation({ npcs }: { npcs: { id: string; name: string }[] | undefined }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [picked, setPicked] = useState<string[]>([]);
  const create = useMutation({
    mutationFn: () => fetchAs(ConversationCreated, '/api/conversations', { body: { npcIds: picked } }),
    onSuccess: ({ conversation }) => {
      queryClient.invalidateQueries({ queryKey: ['conversations'] });
      navigate(`/c/${conversation.id}`);
    },
  });
  const start = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <form onSubmit={start} className="card">
      <fieldset>
        <legend>New conversation with</legend>
        {npcs?.length === 0 && (
          <p>
            You have no NPCs yet. <Link to="/npcs">Create one</Link> first.
          </p>
        )}
        <div className="chips">
          {npcs?.map((n) => (
            <label key={n.id} className="chip">
              <input
                type="checkbox"
                checked={picked.includes(n.id)}
                onChange={(e) =>
                  setPicked(e.target.checked ? [...picked, n.id] : picked.filter((x) => x !== n.id))
                }
              />
              {n.name}
            </label>
          ))}
        </div>
      </fieldset>
      <button type="submit" disabled={picked.length === 0 || create.isPending}>
        Start conversation
      </button>
      <ErrorNote error={create.error} />
    </form>
  );
}
