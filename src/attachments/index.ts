// attachments/: files and pages a Player attaches and files an NPC shares. Bytes stored once per content in
// PostgreSQL, streamed in and out in chunks (ADR 0035); the Message carries them as Parts.

export {
  adoptBlob,
  avatarBlobBySha256,
  type BlobReference,
  blobFacts,
  CHUNK_BYTES,
  collectBlobs,
  readBlob,
  readBlobBytes,
  referBlobsFrom,
  storeSmallBlobs,
  sweepOrphans,
  sweepStaging,
  writeBlob,
} from './blobs.ts';
export { type Dimensions, ImageHead, imageDimensions } from './dimensions.ts';
export { attachmentTokens } from './estimate.ts';
export { type KeepLimits, keepFile, NotKept, tooLargeToKeep } from './keep.ts';
export { type AttachmentDeps, attachmentRoutes, MAX_PENDING } from './routes.ts';
export { isTextType, SNIFF_BYTES, sniffMediaType } from './sniff.ts';
export {
  type AttachmentRow,
  blobsOf,
  conversationBlobsSql,
  insertAttachment,
  linkShared,
  linkToMessageSql,
  pendingAttachments,
  QuotaFullError,
  storedBytes,
  sweepAbandoned,
  toPart,
} from './store.ts';
