import { adoptBlob, writeBlob } from '../../src/attachments/index.ts';
import type { Sql } from '../../src/db/index.ts';

/** An NPC's avatar as a card import stores it: a blob the NPC refers to. */
export async function giveAvatar(sql: Sql, npcId: string, image: Uint8Array): Promise<void> {
  const written = await writeBlob(
    sql,
    (async function* () {
      yield image;
    })(),
    2_000_000,
  );
  await adoptBlob(sql, written, async (tx, blobId) => {
    await tx`update npcs set avatar_blob_id = ${blobId} where id = ${npcId}`;
  });
}
