import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api } from '../api.ts';
import { ErrorNote } from './ErrorNote.tsx';

/**
 * In a Party: whether one NPC answers each Message (the one named, else the last to speak) or each NPC in turn,
 * as SillyTavern's group chats can. Saved with the Conversation.
 */
export function ReplyMode({ id, value }: { id: string; value: 'one' | 'each' }) {
  const queryClient = useQueryClient();
  const save = useMutation({
    mutationFn: (replyMode: 'one' | 'each') =>
      api(`/api/conversations/${id}`, { method: 'PATCH', body: { replyMode } }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['conversation', id] }),
  });
  return (
    <label className="reply-mode meta">
      Who answers
      <select
        value={save.variables ?? value}
        disabled={save.isPending}
        onChange={(e) => save.mutate(e.target.value as 'one' | 'each')}
      >
        <option value="one">the NPC you name</option>
        <option value="each">each NPC in turn</option>
      </select>
      <ErrorNote error={save.error} />
    </label>
  );
}
