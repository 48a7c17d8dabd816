import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import type { z } from 'zod';
import { type GrantView, McpServerListResponse, SkillListResponse } from '../../../src/wire/index.ts';
import { fetchAs } from '../api.ts';

export type Grant =
  | { kind: 'sandbox' }
  | { kind: 'memory' }
  | { kind: 'skill'; skillId: string }
  | { kind: 'mcp'; mcpServerId: string };
export type GrantRow = z.output<typeof GrantView>;

/** One string per grant, so a set of them is the form's state. */
export const grantKey = (g: GrantRow) =>
  g.skillId ? `skill:${g.skillId}` : g.mcpServerId ? `mcp:${g.mcpServerId}` : g.kind;
export function grantOf(key: string): Grant {
  if (key.startsWith('skill:')) return { kind: 'skill', skillId: key.slice(6) };
  if (key.startsWith('mcp:')) return { kind: 'mcp', mcpServerId: key.slice(4) };
  return { kind: key as 'sandbox' | 'memory' };
}

/**
 * Which Tools one NPC may use: every capability is a grant. A part of the NPC form (saved with it by the
 * form's one Save), so it holds no state of its own.
 */
export function GrantsEditor({
  value,
  onChange,
}: {
  value: Set<string>;
  onChange: (next: Set<string>) => void;
}) {
  const skills = useQuery({
    queryKey: ['skills'],
    queryFn: () => fetchAs(SkillListResponse, '/api/skills'),
  });
  const servers = useQuery({
    queryKey: ['mcp'],
    queryFn: () => fetchAs(McpServerListResponse, '/api/mcp-servers'),
  });
  const options: { key: string; label: string }[] = [
    { key: 'sandbox', label: 'Sandbox (a shell of its own for this Conversation)' },
    { key: 'memory', label: 'Memory (remember and recall)' },
    ...(skills.data?.skills ?? []).map((s) => ({ key: `skill:${s.id}`, label: `Skill: ${s.name}` })),
    ...(servers.data?.servers ?? []).map((s) => ({ key: `mcp:${s.id}`, label: `MCP: ${s.name}` })),
  ];
  return (
    <fieldset className="grants">
      <legend>Tools this NPC may use</legend>
      {options.map((o) => (
        <label key={o.key} className="check">
          <input
            type="checkbox"
            checked={value.has(o.key)}
            onChange={(e) => {
              const next = new Set(value);
              if (e.target.checked) next.add(o.key);
              else next.delete(o.key);
              onChange(next);
            }}
          />
          {o.label}
        </label>
      ))}
      <p className="meta">
        Skills and MCP Servers are added on the <Link to="/tools">Tools</Link> page.
      </p>
    </fieldset>
  );
}
