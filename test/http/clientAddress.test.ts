import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { trustOnly } from '../../src/http/index.ts';
import { createLogger } from '../../src/log/index.ts';
import { startTestApp } from '../support/app.ts';

// Issue 25, item 3: the client's address is the socket's, unless the socket is a configured proxy.
const hit = (url: string, forwardedFor: string) =>
  fetch(`${url}/xrpc/click.aligned.chat.listSessions`, { headers: { 'x-forwarded-for': forwardedFor } });

describe('the per-address limit', () => {
  it('with no trusted proxies, X-Forwarded-For is ignored: a new one per request does not evade the limit', async () => {
    const app = await startTestApp({ publicRequestsPerMinute: 5 });
    try {
      const statuses = [];
      for (let i = 0; i < 7; i++) statuses.push((await hit(app.running.listenUrl, `203.0.113.${i}`)).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    } finally {
      await app.close();
    }
  });

  it('with 127.0.0.1 trusted, the client address the proxy forwards is the one counted', async () => {
    const app = await startTestApp({ publicRequestsPerMinute: 5, trustedProxies: ['127.0.0.1/32'] });
    try {
      const statuses = [];
      for (let i = 0; i < 6; i++) statuses.push((await hit(app.running.listenUrl, '203.0.113.7')).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
      // Another client behind the same proxy has its own count …
      expect((await hit(app.running.listenUrl, '203.0.113.8')).status).toBe(200);
      // … and a client cannot pose as another by putting an address in front: the proxy appends, the last wins.
      expect((await hit(app.running.listenUrl, '198.51.100.1, 203.0.113.7')).status).toBe(429);
    } finally {
      await app.close();
    }
  });
});

describe('TRUSTED_PROXIES', () => {
  it('is read as CIDRs (a bare address is itself), and anything else is refused at start', () => {
    expect(loadConfig({ TRUSTED_PROXIES: '172.28.0.10, fd00::/8,10.0.0.0/8' }).trustedProxies).toEqual([
      '172.28.0.10/32',
      'fd00::/8',
      '10.0.0.0/8',
    ]);
    expect(loadConfig({}).trustedProxies).toEqual([]);
    expect(() => loadConfig({ TRUSTED_PROXIES: 'caddy' })).toThrow(ConfigError);
    expect(() => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/33' })).toThrow(/not an address or CIDR/);
  });

  it('trusts exactly the addresses in its ranges, an IPv4-mapped IPv6 spelling as its IPv4', () => {
    const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((b) => b.join('.'));
    fc.assert(
      fc.property(v4, v4, fc.integer({ min: 8, max: 32 }), (net, other, bits) => {
        const trusted = trustOnly([`${net}/32`]);
        expect(trusted(net)).toBe(true);
        expect(trusted(`::ffff:${net}`)).toBe(true);
        expect(trusted(other)).toBe(other === net);
        const toBits = (a: string) =>
          a
            .split('.')
            .map((x) => Number(x).toString(2).padStart(8, '0'))
            .join('');
        const inRange = toBits(other).slice(0, bits) === toBits(net).slice(0, bits);
        // A range written from any address in it (host bits set) is still that range.
        expect(trustOnly([`${net}/${bits}`])(other)).toBe(inRange);
      }),
      { numRuns: 500 },
    );
    expect(trustOnly([])('127.0.0.1')).toBe(false);
    expect(trustOnly(['::1/128'])('::1')).toBe(true);
    expect(trustOnly(['::1/128'])('127.0.0.1')).toBe(false);
  });
});

describe('a reverse proxy TRUSTED_PROXIES leaves out', () => {
  const warnings = (logged: string[]) =>
    logged
      .map((l) => JSON.parse(l) as { level: number; msg: string; peer?: string })
      .filter((l) => l.level === 40);

  it('is named once in the log, at warn, with the address to trust; a named proxy is not', async () => {
    const logged: string[] = [];
    const logger = createLogger({ level: 'info', destination: { write: (l: string) => logged.push(l) } });
    const app = await startTestApp({}, {}, { logger });
    try {
      // Without the header nothing is said: a site reached directly has nothing to set.
      await fetch(`${app.running.listenUrl}/healthz`);
      expect(warnings(logged)).toEqual([]);
      for (let i = 0; i < 3; i++) await hit(app.running.listenUrl, `203.0.113.${i}`);
      const said = warnings(logged);
      expect(said).toHaveLength(1);
      expect(said[0]!.peer).toMatch(/127\.0\.0\.1$/);
      expect(said[0]!.msg).toContain('TRUSTED_PROXIES');
      // What the header said is the client's to write: it never reaches the log.
      expect(logged.join('\n')).not.toContain('203.0.113.');
    } finally {
      await app.close();
    }
    logged.length = 0;
    const trusted = await startTestApp({ trustedProxies: ['127.0.0.1/32'] }, {}, { logger });
    try {
      await hit(trusted.running.listenUrl, '203.0.113.9');
      expect(warnings(logged)).toEqual([]);
    } finally {
      await trusted.close();
    }
  });
});
