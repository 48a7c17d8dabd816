import { useMutation, useQueryClient } from '@tanstack/react-query';
import { ImportedNpcResponse } from '../../../src/wire/index.ts';
import { ApiError, sendFile } from '../api.ts';
import { ImportBox } from './ImportBox.tsx';

/** What a 409 CARD_ALREADY_IMPORTED offers: the NPC made from this card before, to update instead. */
const alreadyImported = (e: unknown) =>
  e instanceof ApiError && e.code === 'CARD_ALREADY_IMPORTED'
    ? (e.details as { npcId: string } | undefined)
    : undefined;

/**
 * Makes an NPC of a character card file (SillyTavern V1/V2/V3, .png or .json), its lorebook the NPC's own. The
 * same card again is offered as an update of the NPC it made, or as a second NPC.
 */
export function CardImport() {
  const queryClient = useQueryClient();
  const upload = useMutation({
    mutationFn: ({ file, query = '' }: { file: File; query?: string }) =>
      sendFile(ImportedNpcResponse, `/api/npcs/import${query}`, file),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['npcs'] }),
  });
  const again = alreadyImported(upload.error);
  const file = upload.variables?.file;
  return (
    <ImportBox
      id="card-file"
      label="Import a character card"
      hint="A SillyTavern card (.png or .json, V1–V3): every field, its greeting and its lorebook come with it."
      accept=".png,.json,image/png,application/json"
      pending={upload.isPending}
      onFile={(f) => upload.mutate({ file: f })}
      error={again ? null : upload.error}
    >
      {again && file && (
        <div role="alert" className="card-again">
          <p>{(upload.error as Error).message}</p>
          <div className="row">
            <button type="button" onClick={() => upload.mutate({ file, query: `?update=${again.npcId}` })}>
              Update that NPC
            </button>
            <button
              type="button"
              className="secondary"
              onClick={() => upload.mutate({ file, query: '?duplicate=true' })}
            >
              Import as a new NPC
            </button>
          </div>
        </div>
      )}
      {upload.data && (
        <p role="status">
          {upload.data.updated ? 'Updated' : 'Imported'} {upload.data.npc.name}
          {upload.data.lorebookEntries
            ? ` with a lorebook of ${upload.data.lorebookEntries} ${upload.data.lorebookEntries === 1 ? 'entry' : 'entries'}`
            : ''}
          .{upload.data.notes.map((n) => ` ${n}`).join('')}
        </p>
      )}
    </ImportBox>
  );
}
