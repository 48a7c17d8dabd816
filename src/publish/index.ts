// publish/: a Conversation to the Player's PDS. The projection (the one chokepoint that makes records),
// the stored plan, the batched writer with resume, reference resolution, and the routes.
export { batches, MAX_BYTES, MAX_WRITES, POINTS_PER_HOUR } from './batches.ts';
export { executePending } from './execute.ts';
export { liveTurnEnd, turnEnded } from './hold.ts';
export { startLiveAppends } from './live.ts';
export { defaultTitle, projectSession, projectTurn, publishedTexts } from './projection.ts';
export { readerCover } from './readerCover.ts';
export { agentRepo, type Repo, type RepoWrite } from './repo.ts';
export { startPublishRetries } from './retry.ts';
export { publishRoutes } from './routes.ts';
export { type PublishDeps, resume } from './service.ts';
export {
  PUBLICATION_LEASE,
  publicationLease,
  publicationStatusSql,
  unfinishedPublications,
  withPublicationLock,
} from './store.ts';
