import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import {
  ImportedLorebookResponse,
  LorebookListResponse,
  NpcLorebooksResponse,
} from '../../../src/wire/index.ts';
import { api, fetchAs, sendFile } from '../api.ts';
import { ErrorNote } from './ErrorNote.tsx';
import { ImportBox } from './ImportBox.tsx';
import { LorebookEditor } from './LorebookEditor.tsx';

/** Besides its own book, the World Info an NPC may have attached (store.ts MAX_BOOKS_PER_NPC, less one). */
const MAX_ATTACHED = 7;
const entriesText = (n: number) => `${n} ${n === 1 ? 'entry' : 'entries'}`;

/** The NPC's own books, the Player's World Info and which are attached, attaching, and importing one. */
function useNpcLorebooks(npcId: string) {
  const queryClient = useQueryClient();
  const mine = useQuery({
    queryKey: ['npc-lorebooks', npcId],
    queryFn: () => fetchAs(NpcLorebooksResponse, `/api/npcs/${npcId}/lorebooks`),
  });
  const all = useQuery({
    queryKey: ['lorebooks'],
    queryFn: () => fetchAs(LorebookListResponse, '/api/lorebooks'),
  });
  const worldInfo = all.data?.lorebooks.filter((b) => !b.embedded) ?? [];
  const attached = worldInfo.filter((b) => b.npcIds.includes(npcId)).map((b) => b.id);
  const refresh = async () => {
    await queryClient.invalidateQueries({ queryKey: ['npc-lorebooks', npcId] });
    await queryClient.invalidateQueries({ queryKey: ['lorebooks'] });
  };
  const attach = useMutation({
    mutationFn: (ids: string[]) =>
      api(`/api/npcs/${npcId}/lorebooks`, { method: 'PUT', body: { lorebookIds: ids } }),
    onSuccess: refresh,
  });
  const upload = useMutation({
    mutationFn: async (file: File) => {
      const name = file.name.replace(/\.json$/i, '');
      const { lorebook } = await sendFile(
        ImportedLorebookResponse,
        `/api/lorebooks/import?name=${encodeURIComponent(name)}`,
        file,
      );
      await api(`/api/npcs/${npcId}/lorebooks`, {
        method: 'PUT',
        body: { lorebookIds: [...attached, lorebook.id].slice(-MAX_ATTACHED) },
      });
      return lorebook;
    },
    onSuccess: refresh,
  });
  return { mine, all, worldInfo, attached, attach, upload };
}

/**
 * An NPC's lorebooks on its page: each one's entries, editable; the Player's World Info lorebooks, attached to
 * this NPC or not with a tick; and a World Info file imported and attached at once. A lorebook enters only the
 * prompts of the NPCs it is attached to.
 */
export function Lorebooks({ npcId, npcName }: { npcId: string; npcName: string }) {
  const { mine, all, worldInfo, attached, attach, upload } = useNpcLorebooks(npcId);
  return (
    <section className="card lorebooks" aria-labelledby="lorebooks-heading">
      <h2 id="lorebooks-heading">{npcName}’s lorebooks</h2>
      <p className="meta">
        An entry enters {npcName}’s prompt when one of its keys is in the last messages (always, when it is
        always on), and only {npcName}’s.
      </p>
      <ErrorNote error={mine.error ?? all.error} />
      {mine.data?.lorebooks.length === 0 && <p className="meta">{npcName} has no lorebook.</p>}
      {mine.data?.lorebooks.map((b) => (
        <LorebookEditor key={b.id} npcId={npcId} book={b} />
      ))}
      {worldInfo.length > 0 && (
        <fieldset className="lore-attach">
          <legend>World Info attached to {npcName}</legend>
          {worldInfo.map((b) => (
            <label key={b.id} className="check">
              <input
                type="checkbox"
                checked={attached.includes(b.id)}
                disabled={attach.isPending}
                onChange={(e) =>
                  attach.mutate(e.target.checked ? [...attached, b.id] : attached.filter((id) => id !== b.id))
                }
              />
              {b.name || 'Lorebook'} <span className="meta">({entriesText(b.entries)})</span>
            </label>
          ))}
        </fieldset>
      )}
      <ErrorNote error={attach.error} />
      <ImportBox
        id={`world-info-${npcId}`}
        label="Import World Info"
        hint={`A SillyTavern World Info file (.json): it becomes a lorebook attached to ${npcName}.`}
        accept=".json,application/json"
        pending={upload.isPending}
        onFile={(f) => upload.mutate(f)}
        error={upload.error}
      >
        {upload.data && (
          <p role="status">
            Imported {upload.data.name} ({entriesText(upload.data.entries)}), attached to {npcName}.
          </p>
        )}
      </ImportBox>
    </section>
  );
}
