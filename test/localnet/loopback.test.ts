import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { nodeFlags } from '../../scripts/node-flags.mjs';
import { type LocalNetwork, startLocalNetwork } from '../../src/localnet/index.ts';
import { createDatabase, type TestDatabase } from '../support/database.ts';
import { freePort } from '../support/ports.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
let db: TestDatabase;
let dataDir: string;
let network: LocalNetwork;
let pdsPort: number;
let plcPort: number;

beforeAll(async () => {
  db = await createDatabase(process.env.TEST_DATABASE_URL!, { migrate: false });
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'av-loopback-'));
  pdsPort = await freePort();
  plcPort = await freePort();
  network = await startLocalNetwork({
    dataDir,
    databaseUrl: db.url,
    pdsPort,
    plcPort,
    demoAccounts: ['alice'],
  });
}, 120_000);
afterAll(async () => {
  await network?.close();
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

/** Whether a TCP connection to host:port is accepted (false: refused). */
function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(5_000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** This machine's addresses other than loopback (IPv4 and IPv6, link-local left out: it needs a scope). */
function outsideAddresses(): string[] {
  return Object.values(os.networkInterfaces())
    .flatMap((list) => list ?? [])
    .filter((a) => !a.internal && !a.address.startsWith('fe80'))
    .map((a) => a.address);
}

it('serves the PDS and the PLC on 127.0.0.1 and on no other address of this machine', async () => {
  // Reachable where the app reaches them (the demo account was created through the PDS, so it answers).
  expect(network.accounts[0]!.did).toMatch(/^did:plc:/);
  expect(await connects('127.0.0.1', pdsPort)).toBe(true);
  expect(await connects('127.0.0.1', plcPort)).toBe(true);
  const outside = outsideAddresses();
  if (outside.length === 0) {
    // Nothing to try from: this machine has loopback only, so "not on other interfaces" holds trivially.
    console.warn('no non-loopback interface on this machine: the outside-address assertion is skipped');
    return;
  }
  for (const address of outside) {
    expect(await connects(address, pdsPort), `PDS on ${address}`).toBe(false);
    expect(await connects(address, plcPort), `PLC on ${address}`).toBe(false);
  }
});

it('names the variable to change when a port is in use, and exits without a stack', async () => {
  const taken = net.createServer();
  const port = await freePort();
  await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
  try {
    const child = spawn(process.execPath, [...nodeFlags(), '--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        PORT: String(port),
        DATA_DIR: dataDir,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(1);
    expect(output).toContain(`Port ${port} on 127.0.0.1 is already in use`);
    expect(output).toContain(`PORT=${port + 1} npm start`);
    expect(output).not.toMatch(/EADDRINUSE|\n\s+at /);
    // Nothing was started before the check: no database line.
    expect(output).not.toContain('Embedded PostgreSQL');
  } finally {
    await new Promise<void>((resolve) => taken.close(() => resolve()));
  }
}, 60_000);
