import {
  buildAtprotoLoopbackClientMetadata,
  JoseKey,
  NodeOAuthClient,
  type NodeSavedSessionStore,
} from '@atproto/oauth-client-node';
import { Leases, type Sql } from '../db/index.ts';
import { PLAYER_CALL_LIMITS, type PlayerCallLimits, playerCallFetch } from './playerCalls.ts';
import { endedGrant, leaseRequestLock, sessionStore, stateStore } from './stores.ts';

/**
 * What the app may do in a Player's repo: write its two collections and nothing else, and upload images (an
 * NPC's avatar the Player chose to publish: ADR 0065). Declared in the client metadata word for word (a wildcard
 * `repo:` scope is silently dropped by PDSes).
 */
export const OAUTH_SCOPE =
  'atproto repo:click.aligned.chat.session repo:click.aligned.chat.message blob:image/*';

export interface OAuthOptions {
  /** The URL a browser reaches this server at: https for a confidential client, http://127.0.0.1:PORT locally. */
  baseUrl: string;
  /** Private JWKs: present means a confidential client (private_key_jwt), absent the loopback dev client. */
  privateKeys: Record<string, unknown>[];
  handleResolver: string;
  plcUrl: string;
  /** Only for the local network, whose PDS and PLC speak plain http. */
  allowHttp: boolean;
  /** Under the per-Player cap below: the client's every request for a Player goes through it. */
  fetch?: typeof globalThis.fetch;
  /** The leases the request lock is held with (see leaseRequestLock); new ones on `sql` when not given. */
  leases?: Leases;
  /** Calls to one Player's servers at once and their time limits (playerCalls.ts). */
  playerCalls?: PlayerCallLimits;
  /** Replaces the PostgreSQL stores (a test uses this to act as another device of the same Player). */
  sessionStore?: NodeSavedSessionStore;
}

export async function createOAuthClient(sql: Sql, o: OAuthOptions): Promise<NodeOAuthClient> {
  const redirect = `${o.baseUrl}/oauth/callback` as const;
  const keyset = await Promise.all(
    o.privateKeys.map((jwk, i) =>
      JoseKey.fromImportable(jwk as never, (jwk.kid as string | undefined) ?? `key-${i + 1}`),
    ),
  );
  const clientMetadata = keyset.length
    ? {
        client_id: `${o.baseUrl}/oauth-client-metadata.json`,
        client_name: 'AgentsVille',
        client_uri: o.baseUrl,
        redirect_uris: [redirect] as [`https://${string}`],
        scope: OAUTH_SCOPE,
        grant_types: ['authorization_code', 'refresh_token'] as ['authorization_code', 'refresh_token'],
        response_types: ['code'] as ['code'],
        application_type: 'web' as const,
        token_endpoint_auth_method: 'private_key_jwt' as const,
        token_endpoint_auth_signing_alg: 'ES256',
        dpop_bound_access_tokens: true,
        jwks_uri: `${o.baseUrl}/.well-known/jwks.json`,
      }
    : buildAtprotoLoopbackClientMetadata({
        scope: OAUTH_SCOPE,
        redirect_uris: [redirect as `http://127.0.0.1:${string}`],
      });
  return new NodeOAuthClient({
    clientMetadata,
    keyset: keyset.length ? keyset : undefined,
    allowHttp: o.allowHttp,
    handleResolver: o.handleResolver,
    plcDirectoryUrl: o.plcUrl,
    stateStore: stateStore(sql),
    sessionStore: o.sessionStore ?? sessionStore(sql),
    requestLock: leaseRequestLock(o.leases ?? new Leases(sql)),
    onSessionDeleted: endedGrant(sql),
    fetch: playerCallFetch(o.fetch ?? globalThis.fetch, o.playerCalls ?? PLAYER_CALL_LIMITS),
  });
}
