import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { ConversationImported } from '../../../src/wire/index.ts';
import { sendFile } from '../api.ts';
import { ErrorNote } from './ErrorNote.tsx';

/** Brings back a Conversation exported as JSON (from here or another AgentsVille). */
export function ConversationImport() {
  const queryClient = useQueryClient();
  const upload = useMutation({
    mutationFn: (file: File) => sendFile(ConversationImported, '/api/conversations/import', file),
    onSuccess: () => {
      queryClient.invalidateQueries({ queryKey: ['conversations'] });
      queryClient.invalidateQueries({ queryKey: ['npcs'] });
    },
  });
  const done = upload.data;
  return (
    <div className="card card-import">
      <label htmlFor="conversation-file">Import a conversation</label>
      <p className="meta">A JSON export of a conversation. Attached files come back as their names only.</p>
      <input
        id="conversation-file"
        type="file"
        accept=".json,application/json"
        disabled={upload.isPending}
        onChange={(e) => {
          const file = e.target.files?.[0];
          if (file) upload.mutate(file);
          e.target.value = '';
        }}
      />
      {done && (
        <p role="status">
          Imported{' '}
          <Link to={`/c/${done.conversation.id}`}>{done.conversation.title ?? 'the conversation'}</Link> (
          {done.messages} messages)
          {done.createdNpcs.length ? `, with new NPCs: ${done.createdNpcs.join(', ')}` : ''}.
        </p>
      )}
      <ErrorNote error={upload.error} />
    </div>
  );
}
