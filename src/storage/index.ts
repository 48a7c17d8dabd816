// storage/: what each Player makes us store (Messages, attachments, sandbox files, Memory), against one quota
// (ADR 0053). The totals are kept by triggers (migrations/033); this folder reads them and refuses past the quota.

export {
  assertStorageRoom,
  formatStorage,
  type StorageUse,
  storageFull,
  storageQuotaSql,
  storageRoom,
  storageUse,
  storedSql,
  withMessagesCountedAtEnd,
} from './quota.ts';
