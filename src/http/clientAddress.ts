import type { Request, RequestHandler } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import ipaddr from 'ipaddr.js';

/**
 * Express's `trust proxy` as a function: a hop is believed about the address before it only when the hop's own
 * address is in one of `cidrs` (normalised by config.ts). With none, the socket's address is the client's —
 * every client looked like Caddy's container before, and over loopback a new X-Forwarded-For per request evaded
 * the per-address limit (issue 25). IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) compare as IPv4.
 */
export function trustOnly(cidrs: readonly string[]): (address: string) => boolean {
  const ranges = cidrs.map((c) => ipaddr.parseCIDR(c));
  return (address) => {
    if (!ranges.length || !ipaddr.isValid(address)) return false;
    const ip = ipaddr.process(address);
    return ranges.some((range) => ip.kind() === range[0].kind() && ip.match(range));
  };
}

/**
 * Who an anonymous request comes from, for sharing a pool fairly between readers: its address as the per-address
 * limit counts it (an IPv6 address by its /56, one customer's block, as express-rate-limit does).
 */
export const requesterKey = (req: Request): string => ipKeyGenerator(req.ip ?? 'unknown');

/**
 * Says once, in the log, that a request came with `X-Forwarded-For` from an address TRUSTED_PROXIES does not
 * name. Behind a reverse proxy left out of it, every reader is the proxy's one address: the per-address limit and
 * the per-reader shares (ADR 0106) then count the whole site as one client, and nothing else would tell the
 * operator. Once, not per request: a client can send the header itself, and a log line per request would be its
 * to write.
 */
export function untrustedForwarding(cidrs: readonly string[], warn: (peer: string) => void): RequestHandler {
  const trusted = trustOnly(cidrs);
  let told = false;
  return (req, _res, next) => {
    if (!told && req.headers['x-forwarded-for'] !== undefined) {
      const peer = req.socket.remoteAddress ?? 'unknown';
      if (!trusted(peer)) {
        told = true;
        warn(peer);
      }
    }
    next();
  };
}
