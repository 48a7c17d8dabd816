import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
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
export const systemResolve: Resolve = (hostname) => dnsLookup(hostname, { all: true });

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
