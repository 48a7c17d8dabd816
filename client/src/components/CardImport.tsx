import { useMutation, useQueryClient } from '@tanstack/react-query';
import { ImportedNpcResponse } from '../../../src/wire/index.ts';
import { sendFile } from '../api.ts';
import { ErrorNote } from './ErrorNote.tsx';

/** Makes an NPC of a character card file (SillyTavern V1/V2/V3, .png or .json), its lorebook as Memory. */
export function CardImport() {
  const queryClient = useQueryClient();
  const upload = useMutation({
    mutationFn: (file: File) => sendFile(ImportedNpcResponse, '/api/npcs/import', file),
    onSuccess: () => {
      queryClient.invalidateQueries({ queryKey: ['npcs'] });
      queryClient.invalidateQueries({ queryKey: ['memories'] });
    },
  });
  return (
    <div className="card card-import">
      <label htmlFor="card-file">Import a character card</label>
      <p className="meta">
        A SillyTavern card (.png or .json, V1–V3): its lorebook becomes the NPC's Memory.
      </p>
      <input
        id="card-file"
        type="file"
        accept=".png,.json,image/png,application/json"
        disabled={upload.isPending}
        onChange={(e) => {
          const file = e.target.files?.[0];
          if (file) upload.mutate(file);
          e.target.value = '';
        }}
      />
      {upload.data && (
        <p role="status">
          Imported {upload.data.npc.name}
          {upload.data.lorebookEntries
            ? ` with ${upload.data.lorebookEntries} lorebook ${upload.data.lorebookEntries === 1 ? 'entry' : 'entries'} in Memory`
            : ''}
          .{upload.data.notes.map((n) => ` ${n}`).join('')}
        </p>
      )}
      <ErrorNote error={upload.error} />
    </div>
  );
}
