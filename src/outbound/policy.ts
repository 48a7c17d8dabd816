import type { LookupAddress, LookupOptions } from 'node:dns';
import { Resolver } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which addresses the server may connect to on behalf of a URL a user or the network supplied: public unicast
 * only. ipaddr.js classifies by the address's bytes, so every spelling of one address is one answer:
 * IPv4-mapped IPv6, NAT64 (64:ff9b::/96), 6to4, Teredo, link-local, unique-local, CGNAT, benchmarking,
 * multicast and reserved ranges are all "not unicast". IPv6 must also be global unicast (2000::/3): that
 * excludes what ipaddr.js still calls unicast outside it, such as IPv4-compatible ::a.b.c.d (the URL parser
 * writes [::127.0.0.1] as ::7f00:1) and RFC 8215's local-use NAT64 64:ff9b:1::/48.
 */
const GLOBAL_UNICAST: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse('2000::'), 3];

export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const ip = ipaddr.parse(address);
  if (ip.range() !== 'unicast') return false;
  if (ip.kind() === 'ipv6') {
    if (!(ip as ipaddr.IPv6).match(GLOBAL_UNICAST)) return false;
  }
  return true;
}

/** A URL's host when it is an IP literal (brackets removed), else null. */
export function ipLiteral(url: URL): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return ipaddr.isValid(host) && (host.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(host))
    ? host
    : null;
}

export class RefusedAddressError extends Error {
  readonly code = 'EREFUSED_ADDRESS';
}

/** Resolves a hostname to every address it has (the system resolver; tests inject their own). */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

const LOOPBACK: LookupAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

/**
 * The resolver for names users and the network supply: DNS queries over c-ares, on the event loop, each given
 * up after a few seconds. Not `dns.lookup`: that runs getaddrinfo on libuv's four shared threads with no time
 * limit, so a handful of names whose servers never answer held every thread, and with them every file read,
 * hash and zip of the server. (`localhost` is answered here, as /etc/hosts would; the policy refuses it.)
 */
export function makeSystemResolve(servers?: string[]): Resolve {
  const resolver = new Resolver({ timeout: 2500, tries: 2 });
  if (servers) resolver.setServers(servers);
  return async (hostname) => {
    const name = hostname.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost')) return LOOPBACK;
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
    const found: LookupAddress[] = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (found.length) return found;
    const failed = [v4, v6].map((r) =>
      r.status === 'rejected' ? (r.reason as NodeJS.ErrnoException) : null,
    );
    const code = failed.some((e) => e?.code === 'ETIMEOUT') ? 'ETIMEDOUT' : 'ENOTFOUND';
    throw Object.assign(
      new Error(code === 'ETIMEDOUT' ? `DNS lookup for ${name} timed out` : `getaddrinfo ENOTFOUND ${name}`),
      { code, hostname: name },
    );
  };
}
export const systemResolve: Resolve = makeSystemResolve();

/**
 * The lookup every outbound connection makes: resolve, then the policy on every answer. The connection is
 * made to the address checked here, in the same call, so a DNS answer that changes between a check and the
 * connect (rebinding) cannot switch it.
 */
export function publicLookup(
  resolve: Resolve = systemResolve,
  isPublic: (address: string) => boolean = isPublicAddress,
): LookupFunction {
  return (hostname, options, callback) => {
    const done = callback as (e: Error | null, a?: string | LookupAddress[], f?: number) => void;
    resolve(hostname).then(
      (addresses) => {
        const refused = addresses.find((a) => !isPublic(a.address));
        if (refused || addresses.length === 0) {
          done(
            new RefusedAddressError(
              `${hostname} resolves to ${refused?.address ?? 'nothing'}, which is not a public address`,
            ),
          );
        } else if ((options as LookupOptions).all) done(null, addresses);
        else done(null, addresses[0]!.address, addresses[0]!.family);
      },
      (e: Error) => done(e),
    );
  };
}
