// Another server process, as far as leases go: takes the lease named in LEASE on the shared database, says
// "held", and keeps working until it is killed (kill -9 leaves the row behind, to expire).
import { connect, Leases } from '../../src/db/index.ts';

const env = (k: string) => process.env[k] ?? (process.exit(2) as never);
const sql = connect(env('DATABASE_URL'), { max: 2 });
const leases = new Leases(sql);
await leases.hold(env('LEASE'), { ttlMs: Number(env('TTL_MS')), waitMs: 10_000 }, async () => {
  process.stdout.write('held\n');
  await new Promise(() => {});
});
