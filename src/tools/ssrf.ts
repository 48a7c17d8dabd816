import { lookup } from 'node:dns/promises';
import net from 'node:net';

/** Whether an address is loopback, private, link-local or otherwise not the public internet. */
export function isPrivateAddress(address: string): boolean {
  if (net.isIPv4(address)) {
    const [a, b] = address.split('.').map(Number) as [number, number];
    return (
      a === 10 ||
      a === 127 ||
      a === 0 ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 100 && b >= 64 && b <= 127) ||
      a >= 224
    );
  }
  const v6 = address.toLowerCase();
  if (v6.startsWith('::ffff:')) return isPrivateAddress(v6.slice(7));
  return v6 === '::1' || v6 === '::' || v6.startsWith('fc') || v6.startsWith('fd') || v6.startsWith('fe80');
}

export class BlockedUrlError extends Error {}

/**
 * Refuses outbound URLs that resolve to loopback or private ranges (SSRF), unless the instance allows them
 * (tests and a trusted LAN do). Checked when a server is registered and again before each connection.
 */
export async function assertPublicUrl(raw: string, allowPrivate: boolean): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new BlockedUrlError('That is not a URL.');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new BlockedUrlError('Only http(s) URLs are allowed.');
  if (allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = net.isIP(host)
    ? [host]
    : (await lookup(host, { all: true }).catch(() => [])).map((a) => a.address);
  if (addresses.length === 0) throw new BlockedUrlError(`${url.hostname} does not resolve.`);
  if (addresses.some(isPrivateAddress)) {
    throw new BlockedUrlError(
      `${url.hostname} is a private or loopback address, which this instance does not allow.`,
    );
  }
  return url;
}
