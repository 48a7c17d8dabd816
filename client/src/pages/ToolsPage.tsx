import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { McpServerListResponse, MemoryListResponse, SkillListResponse } from '../../../src/wire/index.ts';
import { api, fetchAs } from '../api.ts';
import { useDialogs } from '../components/Dialog.tsx';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { useDocumentTitle } from '../title.ts';

/** What NPCs can be granted (Skills, MCP Servers) and what they remember (Memory). */
export function ToolsPage() {
  useDocumentTitle('Tools, Skills and Memory');
  return (
    <div className="narrow">
      <h1>Tools, Skills and Memory</h1>
      <p>Create Skills and register MCP Servers here, then grant them to an NPC in its editor.</p>
      <Skills />
      <McpServers />
      <Memories />
    </div>
  );
}

function Skills() {
  const queryClient = useQueryClient();
  const skills = useQuery({
    queryKey: ['skills'],
    queryFn: () => fetchAs(SkillListResponse, '/api/skills'),
  });
  const [draft, setDraft] = useState({ name: '', description: '', instructions: '' });
  const add = useMutation({
    mutationFn: () => api('/api/skills', { body: draft }),
    onSuccess: () => {
      setDraft({ name: '', description: '', instructions: '' });
      queryClient.invalidateQueries({ queryKey: ['skills'] });
    },
  });
  const remove = useMutation({
    mutationFn: (id: string) => api(`/api/skills/${id}`, { method: 'DELETE' }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['skills'] }),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate();
  };
  return (
    <section className="card" aria-labelledby="skills-h">
      <h2 id="skills-h">Skills</h2>
      <ul>
        {skills.data?.skills.map((s) => (
          <li key={s.id}>
            <strong>{s.name}</strong> — {s.description}{' '}
            <button type="button" className="link danger" onClick={() => remove.mutate(s.id)}>
              Delete
            </button>
          </li>
        ))}
      </ul>
      <form onSubmit={submit}>
        <div className="row">
          <label>
            Skill name
            <input
              value={draft.name}
              onChange={(e) => setDraft({ ...draft, name: e.target.value })}
              placeholder="map-reading"
            />
          </label>
          <label>
            Description
            <input
              value={draft.description}
              onChange={(e) => setDraft({ ...draft, description: e.target.value })}
            />
          </label>
        </div>
        <label>
          Instructions
          <textarea
            rows={3}
            value={draft.instructions}
            onChange={(e) => setDraft({ ...draft, instructions: e.target.value })}
          />
        </label>
        <button type="submit">Add Skill</button>
      </form>
      <ErrorNote error={add.error ?? remove.error} />
    </section>
  );
}

/** The Player's MCP servers, the form adding one (its header's secret sent once), and deleting. */
function useMcpServers() {
  const queryClient = useQueryClient();
  const servers = useQuery({
    queryKey: ['mcp'],
    queryFn: () => fetchAs(McpServerListResponse, '/api/mcp-servers'),
  });
  const [draft, setDraft] = useState({ name: '', url: '', header: '', secret: '' });
  const add = useMutation({
    mutationFn: () =>
      api('/api/mcp-servers', {
        body: {
          name: draft.name,
          url: draft.url,
          headers: draft.header ? { [draft.header]: draft.secret } : {},
        },
      }),
    onSuccess: () => {
      setDraft({ name: '', url: '', header: '', secret: '' });
      queryClient.invalidateQueries({ queryKey: ['mcp'] });
    },
  });
  const remove = useMutation({
    mutationFn: (id: string) => api(`/api/mcp-servers/${id}`, { method: 'DELETE' }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['mcp'] }),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate();
  };
  return { servers, draft, setDraft, add, remove, submit };
}

function McpServers() {
  const { servers, draft, setDraft, add, remove, submit } = useMcpServers();
  return (
    <section className="card" aria-labelledby="mcp-h">
      <h2 id="mcp-h">MCP Servers</h2>
      <ul>
        {servers.data?.servers.map((s) => (
          <li key={s.id}>
            <strong>{s.name}</strong> <code>{s.url}</code>
            {s.headerNames.length > 0 && <span className="meta"> · sends {s.headerNames.join(', ')}</span>}{' '}
            <button type="button" className="link danger" onClick={() => remove.mutate(s.id)}>
              Delete
            </button>
          </li>
        ))}
      </ul>
      <form onSubmit={submit}>
        <div className="row">
          <label>
            Server name
            <input value={draft.name} onChange={(e) => setDraft({ ...draft, name: e.target.value })} />
          </label>
          <label>
            URL
            <input
              value={draft.url}
              onChange={(e) => setDraft({ ...draft, url: e.target.value })}
              placeholder="https://…/mcp"
            />
          </label>
        </div>
        <div className="row">
          <label>
            Header (optional)
            <input
              value={draft.header}
              onChange={(e) => setDraft({ ...draft, header: e.target.value })}
              placeholder="Authorization"
            />
          </label>
          <label>
            Secret value
            <input
              type="password"
              value={draft.secret}
              onChange={(e) => setDraft({ ...draft, secret: e.target.value })}
            />
          </label>
        </div>
        <button type="submit">Add server</button>
      </form>
      <ErrorNote error={add.error ?? remove.error} />
    </section>
  );
}

function Memories() {
  const [dialogs, dialog] = useDialogs();
  const queryClient = useQueryClient();
  const memories = useQuery({
    queryKey: ['memories'],
    queryFn: () => fetchAs(MemoryListResponse, '/api/memories'),
  });
  const [text, setText] = useState('');
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['memories'] });
  const add = useMutation({
    mutationFn: () => api('/api/memories', { body: { text } }),
    onSuccess: () => {
      setText('');
      refresh();
    },
  });
  const edit = useMutation({
    mutationFn: ({ id, text }: { id: string; text: string }) =>
      api(`/api/memories/${id}`, { method: 'PATCH', body: { text } }),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: (id: string) => api(`/api/memories/${id}`, { method: 'DELETE' }),
    onSuccess: refresh,
  });
  return (
    <section className="card" aria-labelledby="memory-h">
      <h2 id="memory-h">Memory</h2>
      {dialog}
      <p className="meta">What NPCs with the Memory grant remember about you, across Conversations.</p>
      <ul>
        {memories.data?.memories.map((m) => (
          <li key={m.id}>
            {m.text} {m.npcName && <span className="meta">· saved by {m.npcName}</span>}{' '}
            <button
              type="button"
              className="link"
              onClick={async () => {
                const next = await dialogs.prompt({
                  title: 'Edit memory',
                  label: 'What NPCs remember',
                  value: m.text,
                  action: 'Save',
                  multiline: true,
                });
                if (next?.trim()) edit.mutate({ id: m.id, text: next });
              }}
            >
              Edit
            </button>
            <button type="button" className="link danger" onClick={() => remove.mutate(m.id)}>
              Delete
            </button>
          </li>
        ))}
      </ul>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          add.mutate();
        }}
        className="row"
      >
        <label>
          New memory
          <input value={text} onChange={(e) => setText(e.target.value)} />
        </label>
        <button type="submit" disabled={!text.trim()}>
          Remember
        </button>
      </form>
      <ErrorNote error={add.error ?? edit.error ?? remove.error} />
    </section>
  );
}
