import type { BlobReference } from '../../attachments/index.ts';

/**
 * A sandbox file refers to the blob `blobId` (a column of the caller's statement): attachments/ collects a blob
 * only once nothing refers to it, and is handed this at assembly (context.ts: attachments/ may not import tools/).
 */
export const sandboxFileRefersTo: BlobReference = (sql, blobId) =>
  sql`exists (select 1 from sandbox_files s where s.blob_id = ${blobId})`;
