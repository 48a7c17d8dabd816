import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { ConversationImported } from '../../../src/wire/index.ts';
import { sendFile } from '../api.ts';
import { ImportBox } from './ImportBox.tsx';

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
    <ImportBox
      id="conversation-file"
      label="Import a conversation"
      hint="A JSON export of a conversation. Attached files come back as their names only."
      accept=".json,application/json"
      pending={upload.isPending}
      onFile={(file) => upload.mutate(file)}
      error={upload.error}
    >
      {done && (
        <p role="status">
          Imported{' '}
          <Link to={`/c/${done.conversation.id}`}>{done.conversation.title ?? 'the conversation'}</Link> (
          {done.messages} messages)
          {done.createdNpcs.length ? `, with new NPCs: ${done.createdNpcs.join(', ')}` : ''}.
        </p>
      )}
    </ImportBox>
  );
}
