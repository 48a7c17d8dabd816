import { useMutation, useQueryClient } from '@tanstack/react-query';
import { ImportedNpcResponse } from '../../../src/wire/index.ts';
import { sendFile } from '../api.ts';
import { ImportBox } from './ImportBox.tsx';

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
    <ImportBox
      id="card-file"
      label="Import a character card"
      hint="A SillyTavern card (.png or .json, V1–V3): its lorebook becomes the NPC's Memory."
      accept=".png,.json,image/png,application/json"
      pending={upload.isPending}
      onFile={(file) => upload.mutate(file)}
      error={upload.error}
    >
      {upload.data && (
        <p role="status">
          Imported {upload.data.npc.name}
          {upload.data.lorebookEntries
            ? ` with ${upload.data.lorebookEntries} lorebook ${upload.data.lorebookEntries === 1 ? 'entry' : 'entries'} in Memory`
            : ''}
          .{upload.data.notes.map((n) => ` ${n}`).join('')}
        </p>
      )}
    </ImportBox>
  );
}
