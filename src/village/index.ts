// village/: instance settings, NPCs, and which Providers and Models this instance can call.

export {
  type InputSupport,
  inputSupport,
  outputLimit,
  type ThinkingSupport,
  thinkingSupport,
} from './capabilities.ts';
export { costUsd } from './cost.ts';
export { DEMO_MODEL, DEMO_PROVIDER, demoModel } from './demo.ts';
export { type GrantKind, type GrantTargets, listGrants } from './grants.ts';
export { providerKeyRoutes } from './keyRoutes.ts';
export {
  avatarBlobIds,
  avatarRefersTo,
  CARD_DEFAULTS,
  COUNT_LOCK,
  createNpc,
  getNpc,
  getNpcs,
  insertNpc,
  listNpcs,
  NPC_LIMITS,
  type Npc,
  NpcInput,
  type NpcWrite,
  npcFromJson,
  npcRowSql,
  replaceAvatar,
  type TurnColumns,
  updateNpc,
} from './npcs.ts';
export { refreshProviderKeys } from './providerKeys.ts';
export {
  type ProviderConfig,
  type ProviderKind,
  ProviderRegistry,
  type ResolvedModel,
  resolveModel,
} from './providers.ts';
export { villageRoutes } from './routes.ts';
export { localSecretsKey, parseSecretsKey, SecretBox } from './secrets.ts';
export {
  ATTACHMENT_TYPES,
  getVillageSettings,
  playerStorageQuotaSql,
  seedVillageDefaults,
  type VillageSettings,
  villageSettingsJsonSql,
} from './settings.ts';
