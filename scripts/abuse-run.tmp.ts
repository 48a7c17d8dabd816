import { abuseRatio, median, runAbuse } from '../test/load/abuse.ts';
const r = await runAbuse({ adminDatabaseUrl: process.env.TEST_DATABASE_URL, samples: 3, progress: (l) => console.error(l) });
for (const [m, s] of Object.entries(r.samples)) console.log(m, Math.round(median(s.unloaded)), Math.round(median(s.loaded)), abuseRatio(s).toFixed(2), JSON.stringify(s.loaded.map(Math.round)));
console.log(JSON.stringify(r.attackers));
process.exit(0);
