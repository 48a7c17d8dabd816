import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { UsageResponse } from '../../../src/wire/index.ts';
import { fetchAs } from '../api.ts';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { useDocumentTitle } from '../title.ts';

type Storage = UsageResponse['storage'];

const KINDS = [
  ['messages', 'Messages'],
  ['attachments', 'Attachments'],
  ['sandbox', 'Sandbox files'],
  ['memory', 'Memory'],
] as const;

function bytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${n} bytes`;
}

/** What the Player stores of the quota, by kind: what to delete when it is full. */
function StorageUse({ storage: s }: { storage: Storage }) {
  const full = s.used >= s.quota;
  return (
    <section className="storage" aria-labelledby="storage-title">
      <h2 id="storage-title">Storage</h2>
      <p>
        You store <strong>{bytes(s.used)}</strong> of {bytes(s.quota)}
        {full ? ': full. New Messages, uploads and imports are refused until you delete something.' : '.'}
      </p>
      <meter
        min={0}
        max={s.quota}
        value={Math.min(s.used, s.quota)}
        low={s.quota * 0.75}
        high={s.quota * 0.9}
        optimum={0}
      >
        {Math.round((100 * s.used) / s.quota)}%
      </meter>
      <table>
        <caption className="visually-hidden">Storage by kind</caption>
        <tbody>
          {KINDS.map(([k, label]) => (
            <tr key={k}>
              <th scope="row">{label}</th>
              <td>{bytes(s[k])}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

const COLORS = ['#1d4ed8', '#b45309', '#047857', '#9d174d', '#6d28d9', '#0e7490', '#4d7c0f', '#be123c'];

export function UsagePage() {
  useDocumentTitle('Usage');
  const [by, setBy] = useState<'npc' | 'conversation'>('npc');
  const usage = useQuery({
    queryKey: ['usage', by],
    queryFn: () => fetchAs(UsageResponse, `/api/usage?by=${by}&days=30`),
  });
  const points = usage.data?.points ?? [];
  const series = [...new Map(points.map((p) => [p.key, p.label])).entries()];
  const days = [...new Set(points.map((p) => p.day))].map((day) => {
    const row: Record<string, string | number> = { day };
    for (const p of points.filter((x) => x.day === day)) row[p.key] = p.inputTokens + p.outputTokens;
    return row;
  });
  const t = usage.data?.totals;
  return (
    <div className="narrow">
      <h1>Usage</h1>
      {usage.data && <StorageUse storage={usage.data.storage} />}
      <h2>Tokens</h2>
      <div className="row" role="radiogroup" aria-label="Group by">
        {(['npc', 'conversation'] as const).map((b) => (
          <label key={b} className="chip">
            <input type="radio" name="by" checked={by === b} onChange={() => setBy(b)} />
            Per {b === 'npc' ? 'NPC' : 'Conversation'}
          </label>
        ))}
      </div>
      <ErrorNote error={usage.error} />
      {t && (
        <p className="totals">
          Last 30 days: {t.replies} replies · {t.inputTokens.toLocaleString()} tokens in ·{' '}
          {t.outputTokens.toLocaleString()} out{t.costUsd != null ? ` · $${t.costUsd.toFixed(4)}` : ''}
        </p>
      )}
      <figure className="chart" aria-label="Tokens per day">
        <ResponsiveContainer width="100%" height={280}>
          <BarChart data={days}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis dataKey="day" />
            <YAxis />
            <Tooltip />
            <Legend />
            {series.map(([key, label], i) => (
              <Bar key={key} dataKey={key} name={label} stackId="tokens" fill={COLORS[i % COLORS.length]} />
            ))}
          </BarChart>
        </ResponsiveContainer>
      </figure>
      <UsageTable by={by} series={series} points={points} />
    </div>
  );
}

/** Each NPC's (or Conversation's) replies, tokens and cost over the 30 days. */
function UsageTable({
  by,
  series,
  points,
}: {
  by: 'npc' | 'conversation';
  series: [string, string][];
  points: UsageResponse['points'];
}) {
  return (
    <table>
      <caption className="visually-hidden">Usage per {by}</caption>
      <thead>
        <tr>
          <th>{by === 'npc' ? 'NPC' : 'Conversation'}</th>
          <th>Replies</th>
          <th>Tokens in</th>
          <th>Tokens out</th>
          <th>Cost</th>
        </tr>
      </thead>
      <tbody>
        {series.map(([key, label]) => {
          const mine = points.filter((p) => p.key === key);
          const cost = mine.some((p) => p.costUsd != null)
            ? mine.reduce((s, p) => s + (p.costUsd ?? 0), 0)
            : null;
          return (
            <tr key={key}>
              <td>{label}</td>
              <td>{mine.reduce((s, p) => s + p.replies, 0)}</td>
              <td>{mine.reduce((s, p) => s + p.inputTokens, 0).toLocaleString()}</td>
              <td>{mine.reduce((s, p) => s + p.outputTokens, 0).toLocaleString()}</td>
              <td>{cost == null ? '—' : `$${cost.toFixed(4)}`}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
