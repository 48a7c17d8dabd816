import {
  asRequest,
  checkProtocolPolicy,
  FetchRequestError,
  fetchMaxSizeProcessor,
  protocolCheckRequestTransform,
  timedFetch,
} from '@atproto-labs/fetch';
import { safeDispatchFetchWrap } from '@atproto-labs/fetch-node';
import { pipe } from '@atproto-labs/pipe';
import { ipLiteral, isPublicAddress, publicLookup, type Resolve, systemResolve } from './policy.ts';
import type { SocketPolicy } from './socket.ts';

export interface OutboundOptions {
  /** For the whole exchange, redirects and body included. */
  timeoutMs?: number;
  /** The most a response body may hold. */
  maxBytes?: number;
}

const PROTOCOLS = { 'http:': { allowCustomPort: true }, 'https:': { allowCustomPort: true } } as const;

/** Why a URL is refused before any connection, or undefined when it may be fetched. */
function refusal(url: URL, isPublic: ((a: string) => boolean) | null, socket = false): string | undefined {
  if (socket ? url.protocol !== 'ws:' && url.protocol !== 'wss:' : checkProtocolPolicy(url, PROTOCOLS))
    return socket ? 'only ws and wss URLs can be followed' : 'only http and https URLs can be fetched';
  const literal = ipLiteral(url);
  if (isPublic && literal && !isPublic(literal)) return `${literal} is not a public address`;
  return undefined;
}

export interface Outbound {
  /**
   * The one fetch for every URL a user or the network supplies (MCP Servers, sign-in identifiers, PDS
   * endpoints from DID documents, ref resolution, backfill). Built from @atproto-labs/fetch-node, made for
   * exactly this: every request and every redirect hop is checked before it is dispatched (IP literals are
   * never looked up, so they are checked by their bytes), every hostname is resolved by the policy's lookup
   * at connect time, and the exchange has a time and a size limit.
   */
  fetch(o?: OutboundOptions): typeof globalThis.fetch;
  /**
   * Refuses, at the moment a URL is saved, one that cannot be fetched: not http(s), credentials in it, or a
   * host that is (or resolves to) an address that is not public. A courtesy for the person typing it; the
   * connect-time check in `fetch` is what holds.
   */
  check(raw: string): Promise<URL>;
  /** The same policy for a WebSocket followed from the network (ws/wss): checked before, looked up at connect. */
  socket: SocketPolicy;
}

export class BlockedUrlError extends Error {}

/**
 * `allowPrivate` is the instance's explicit opt-in (ALLOW_PRIVATE_TOOL_URLS, or the offline network, whose PDS
 * and PLC are on loopback): no address policy then, the rest still holds.
 */
export function createOutbound(o: {
  allowPrivate: boolean;
  resolve?: Resolve;
  /** The address policy; tests narrow it to tell two loopback addresses apart. */
  isPublic?: (address: string) => boolean;
}): Outbound {
  const resolve = o.resolve ?? systemResolve;
  const policy = o.allowPrivate ? null : (o.isPublic ?? isPublicAddress);
  const dispatched = safeDispatchFetchWrap({
    fetch: globalThis.fetch,
    checkUrl: (url) => refusal(url, policy) as never,
    lookup: policy ? publicLookup(resolve, policy) : undefined,
  });
  return {
    socket: {
      check(url) {
        const reason = refusal(url, policy, true);
        if (reason) throw new BlockedUrlError(`${url.host}: ${reason}`);
      },
      lookup: policy ? publicLookup(resolve, policy) : undefined,
    },
    fetch(limits = {}) {
      const guarded = pipe(
        protocolCheckRequestTransform(PROTOCOLS),
        async (request: Request) => {
          const reason = refusal(new URL(request.url), policy);
          if (reason) {
            await request.body?.cancel();
            throw new TypeError('fetch failed', { cause: new FetchRequestError(request, 400, reason) });
          }
          return request;
        },
        timedFetch(limits.timeoutMs ?? 10_000, dispatched),
        fetchMaxSizeProcessor(limits.maxBytes ?? 1024 * 1024),
      );
      return ((input: Parameters<typeof fetch>[0], init?: RequestInit) =>
        guarded(asRequest(input as never, init))) as typeof globalThis.fetch;
    },
    async check(raw) {
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        throw new BlockedUrlError('That is not a URL.');
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:')
        throw new BlockedUrlError('Only http(s) URLs are allowed.');
      if (url.username || url.password)
        throw new BlockedUrlError('A URL with a user name or password is not allowed.');
      if (!policy) return url;
      const literal = ipLiteral(url);
      const addresses = literal
        ? [literal]
        : (await resolve(url.hostname).catch(() => [])).map((a) => a.address);
      // One answer for "does not resolve" and "resolves somewhere private": no probing of internal names.
      if (addresses.length === 0 || !addresses.every(policy)) {
        throw new BlockedUrlError(
          `${url.hostname} does not resolve to a public address, so this server cannot use it.`,
        );
      }
      return url;
    },
  };
}
