import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { api } from '../api.ts';
import type { McpView, SkillView } from '../pages/ToolsPage.tsx';
import { ErrorNote } from './ErrorNote.tsx';

type Grant =
  | { kind: 'sandbox' }
  | { kind: 'memory' }
  | { kind: 'skill'; skillId: string }
  | { kind: 'mcp'; mcpServerId: string };
const key = (g: Grant) =>
  g.kind === 'skill' ? `skill:${g.skillId}` : g.kind === 'mcp' ? `mcp:${g.mcpServerId}` : g.kind;

/** Which Tools one NPC may use: every capability is a grant. */
export function GrantsEditor({ npcId }: { npcId: string }) {
  const queryClient = useQueryClient();
  const grants = useQuery({
    queryKey: ['grants', npcId],
    queryFn: () =>
      api<{ grants: { kind: string; skillId: string | null; mcpServerId: string | null }[] }>(
        `/api/npcs/${npcId}/grants`,
      ),
  });
  const skills = useQuery({
    queryKey: ['skills'],
    queryFn: () => api<{ skills: SkillView[] }>('/api/skills'),
  });
  const servers = useQuery({
    queryKey: ['mcp'],
    queryFn: () => api<{ servers: McpView[] }>('/api/mcp-servers'),
  });
  const [on, setOn] = useState<Set<string>>(new Set());
  useEffect(() => {
    if (grants.data) {
      setOn(
        new Set(
          grants.data.grants.map((g) =>
            g.skillId ? `skill:${g.skillId}` : g.mcpServerId ? `mcp:${g.mcpServerId}` : g.kind,
          ),
        ),
      );
    }
  }, [grants.data]);
  const options: { grant: Grant; label: string }[] = [
    { grant: { kind: 'sandbox' }, label: 'Sandbox (a shell of its own for this Conversation)' },
    { grant: { kind: 'memory' }, label: 'Memory (remember and recall)' },
    ...(skills.data?.skills ?? []).map((s) => ({
      grant: { kind: 'skill', skillId: s.id } as Grant,
      label: `Skill: ${s.name}`,
    })),
    ...(servers.data?.servers ?? []).map((s) => ({
      grant: { kind: 'mcp', mcpServerId: s.id } as Grant,
      label: `MCP: ${s.name}`,
    })),
  ];
  const save = useMutation({
    mutationFn: (next: Set<string>) =>
      api(`/api/npcs/${npcId}/grants`, {
        method: 'PUT',
        body: { grants: options.filter((o) => next.has(key(o.grant))).map((o) => o.grant) },
      }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['grants', npcId] }),
  });
  return (
    <fieldset className="grants">
      <legend>Tools this NPC may use</legend>
      {options.map((o) => (
        <label key={key(o.grant)} className="check">
          <input
            type="checkbox"
            checked={on.has(key(o.grant))}
            onChange={(e) => {
              const next = new Set(on);
              if (e.target.checked) next.add(key(o.grant));
              else next.delete(key(o.grant));
              setOn(next);
              save.mutate(next);
            }}
          />
          {o.label}
        </label>
      ))}
      <ErrorNote error={save.error} />
    </fieldset>
  );
}
