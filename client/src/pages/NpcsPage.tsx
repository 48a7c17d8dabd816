import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useRef, useState } from 'react';
import { GrantListResponse, ModelInfo, NpcListResponse, VillageView } from '../../../src/wire/index.ts';
import { api, fetchAs, type Npc } from '../api.ts';
import { Avatar } from '../components/Avatar.tsx';
import { CardImport } from '../components/CardImport.tsx';
import { CharacterFields, characterOf, emptyCharacter } from '../components/CharacterFields.tsx';
import { useDialogs } from '../components/Dialog.tsx';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { type Grant, GrantsEditor, grantKey, grantOf } from '../components/GrantsEditor.tsx';
import { Lorebooks } from '../components/Lorebooks.tsx';
import { useToast } from '../components/Toast.tsx';
import { useDocumentTitle } from '../title.ts';

type Draft = Omit<Npc, 'id' | 'createdAt' | 'updatedAt' | 'extensions' | 'avatarUrl'>;
const empty: Draft = {
  ...emptyCharacter,
  name: '',
  jobTitle: '',
  description: '',
  prompt: '',
  provider: null,
  model: null,
  thinking: false,
};

export function NpcsPage() {
  useDocumentTitle('NPCs');
  const queryClient = useQueryClient();
  const npcs = useQuery({ queryKey: ['npcs'], queryFn: () => fetchAs(NpcListResponse, '/api/npcs') });
  const village = useQuery({ queryKey: ['village'], queryFn: () => fetchAs(VillageView, '/api/village') });
  const [editing, setEditing] = useState<string | null>(null);
  const [draft, setDraft] = useState<Draft>(empty);
  // The NPC's grants as form state; undefined while an edited NPC's are loading (then Save leaves them as
  // they are). One Save writes the fields and the grants together.
  const [grants, setGrants] = useState<Set<string> | undefined>(new Set());
  const editingRef = useRef<string | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [toast, toastElement] = useToast();
  const [dialogs, dialog] = useDialogs();
  // The NPC just created or saved: once the list has it, scrolled into view and focused (then forgotten).
  const [landed, setLanded] = useState<string | null>(null);
  const formRef = useRef<HTMLFormElement>(null);
  const nameRef = useRef<HTMLInputElement>(null);
  const [shouldFocusForm, setShouldFocusForm] = useState(false);
  const reset = () => {
    editingRef.current = null;
    setEditing(null);
    setDraft(empty);
    setGrants(new Set());
  };
  const startEdit = (n: Npc) => {
    const { id, extensions: _, avatarUrl: __, ...rest } = n;
    editingRef.current = id;
    setEditing(id);
    setDraft(rest);
    setGrants(undefined);
    setLoadError(null);
    setShouldFocusForm(true);
    fetchAs(GrantListResponse, `/api/npcs/${id}/grants`).then(
      (r) => editingRef.current === id && setGrants(new Set(r.grants.map(grantKey))),
      (e: unknown) => editingRef.current === id && setLoadError(e),
    );
  };
  const save = useMutation({
    mutationFn: (d: Draft) => {
      // Only the fields a Player edits: the server refuses any other key (the NPC as listed carries more).
      const body: Draft & { grants?: Grant[] } = {
        name: d.name,
        jobTitle: d.jobTitle,
        description: d.description,
        prompt: d.prompt,
        provider: d.provider,
        model: d.model,
        thinking: d.thinking,
        ...characterOf(d),
        ...(grants ? { grants: [...grants].map(grantOf) } : {}),
      };
      return editing ? api(`/api/npcs/${editing}`, { method: 'PATCH', body }) : api('/api/npcs', { body });
    },
    onSuccess: async (answer, d) => {
      const id = editing ?? (answer as { npc?: { id?: string } } | undefined)?.npc?.id ?? null;
      toast(
        editing ? `Saved ${d.name}.` : `Created ${d.name}. It is in your list; add it to a Conversation.`,
      );
      reset();
      await queryClient.invalidateQueries({ queryKey: ['npcs'] });
      setLanded(id);
    },
  });
  const remove = useMutation({
    mutationFn: (n: Npc) => api(`/api/npcs/${n.id}`, { method: 'DELETE' }),
    onSuccess: (_r, n) => {
      toast(`Deleted ${n.name}.`);
      if (editingRef.current === n.id) reset();
      return queryClient.invalidateQueries({ queryKey: ['npcs'] });
    },
  });
  const askDelete = async (n: Npc) => {
    const yes = await dialogs.confirm({
      title: `Delete ${n.name}?`,
      body: 'Conversations with this NPC keep what it said. The NPC itself, its prompt and its Tools are gone.',
      action: 'Delete',
      danger: true,
    });
    if (yes) remove.mutate(n);
  };
  // Edit: the form comes into view with its first field focused, wherever the list was scrolled.
  useEffect(() => {
    if (!shouldFocusForm) return;
    setShouldFocusForm(false);
    formRef.current?.scrollIntoView({ block: 'start' });
    nameRef.current?.focus({ preventScroll: true });
  }, [shouldFocusForm]);
  // Saved or created: the NPC in the list, in view and focused, so the Player sees what changed.
  useEffect(() => {
    if (!landed) return;
    const item = document.getElementById(`npc-${landed}`);
    if (!item) return;
    item.scrollIntoView({ block: 'center' });
    item.focus({ preventScroll: true });
    const t = setTimeout(() => setLanded(null), 4000);
    return () => clearTimeout(t);
  }, [landed, npcs.data]);
  const settings = village.data?.settings;
  // The Model this NPC will use (its own, else the Village's, as the server resolves it), and whether it thinks.
  const provider = draft.provider ?? settings?.defaultProvider ?? null;
  const model =
    draft.model ?? (provider === settings?.defaultProvider ? (settings?.defaultModel ?? null) : null);
  const modelInfo = useQuery({
    queryKey: ['model', provider, model],
    queryFn: () =>
      fetchAs(
        ModelInfo,
        `/api/models?provider=${encodeURIComponent(provider!)}&model=${encodeURIComponent(model!)}`,
      ),
    enabled: Boolean(provider && model),
    staleTime: Number.POSITIVE_INFINITY,
  });
  const thinking = modelInfo.data?.thinking;
  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => setDraft({ ...draft, [k]: v });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate(draft);
  };

  return (
    <div className="narrow npcs-page">
      <h1>NPCs</h1>
      <div className="npcs-layout">
        <section aria-labelledby="npc-list-heading">
          <h2 id="npc-list-heading">Your NPCs</h2>
          <ErrorNote error={npcs.error ?? remove.error} />
          {npcs.data && npcs.data.npcs.length === 0 && (
            <p className="meta">No NPCs yet: make one with the form, or import a character card.</p>
          )}
          <ul className="npc-list">
            {npcs.data?.npcs.map((n) => (
              <li
                key={n.id}
                id={`npc-${n.id}`}
                tabIndex={-1}
                className={
                  [landed === n.id && 'just-saved', editing === n.id && 'editing']
                    .filter(Boolean)
                    .join(' ') || undefined
                }
                aria-current={editing === n.id ? 'true' : undefined}
              >
                <div>
                  <Avatar url={n.avatarUrl} /> <strong>{n.name}</strong>{' '}
                  {n.jobTitle && <span className="meta">· {n.jobTitle}</span>}
                  <div className="meta">
                    {n.provider ?? `${settings?.defaultProvider ?? '—'} (default)`}/
                    {n.model ?? `${settings?.defaultModel ?? '—'} (default)`}
                    {n.thinking ? ' · thinking' : ''}
                  </div>
                </div>
                <span className="actions">
                  <button
                    type="button"
                    className="link"
                    aria-label={`Edit ${n.name}`}
                    onClick={() => startEdit(n)}
                  >
                    Edit
                  </button>
                  <a className="link" href={`/api/npcs/${n.id}/card`} download>
                    Export card
                  </a>
                  <button type="button" className="link danger" onClick={() => void askDelete(n)}>
                    Delete
                  </button>
                </span>
              </li>
            ))}
          </ul>
          <CardImport />
        </section>
        <div className="npc-side">
          <form
            className="card npc-form"
            ref={formRef}
            onSubmit={submit}
            aria-label={editing ? 'Edit NPC' : 'New NPC'}
          >
            <h2>{editing ? `Edit ${draft.name}` : 'New NPC'}</h2>
            <label>
              Name
              <input
                ref={nameRef}
                value={draft.name}
                onChange={(e) => set('name', e.target.value)}
                required
                maxLength={100}
              />
            </label>
            <label>
              Job Title
              <input
                value={draft.jobTitle}
                onChange={(e) => set('jobTitle', e.target.value)}
                maxLength={100}
              />
            </label>
            <label>
              Description
              <textarea
                value={draft.description}
                onChange={(e) => set('description', e.target.value)}
                rows={2}
              />
            </label>
            <label>
              Prompt
              <textarea value={draft.prompt} onChange={(e) => set('prompt', e.target.value)} rows={4} />
            </label>
            <CharacterFields
              value={draft}
              prompt={draft.prompt}
              onChange={(c) => setDraft({ ...draft, ...c })}
            />
            <div className="row">
              <label>
                Provider
                <select
                  value={draft.provider ?? ''}
                  onChange={(e) => set('provider', e.target.value || null)}
                >
                  <option value="">Village default ({settings?.defaultProvider ?? 'none'})</option>
                  {village.data?.providers.map((p) => (
                    <option key={p.id} value={p.id}>
                      {p.id}
                    </option>
                  ))}
                </select>
              </label>
              <label>
                Model
                <input
                  value={draft.model ?? ''}
                  placeholder={`Village default (${settings?.defaultModel ?? 'none'})`}
                  onChange={(e) => set('model', e.target.value || null)}
                />
              </label>
            </div>
            <label className="check">
              <input
                type="checkbox"
                checked={draft.thinking}
                onChange={(e) => set('thinking', e.target.checked)}
              />
              Thinking (show reasoning)
            </label>
            {model && thinking && thinking !== 'supported' && (
              <p className="meta thinking-note" role="note">
                {thinking === 'unsupported'
                  ? `${model} cannot think: with it, this NPC answers without reasoning, whatever this setting says.`
                  : `Whether ${model} can think is not known here; if it cannot, this setting has no effect.`}
              </p>
            )}
            {grants ? (
              <GrantsEditor value={grants} onChange={setGrants} />
            ) : (
              <p className="meta" aria-live="polite">
                Loading this NPC’s Tools…
              </p>
            )}
            <ErrorNote error={loadError} />
            <div className="row">
              <button type="submit" disabled={save.isPending}>
                {editing ? 'Save' : 'Create NPC'}
              </button>
              {editing && (
                <button type="button" className="secondary" onClick={reset}>
                  Cancel
                </button>
              )}
            </div>
            <ErrorNote error={save.error} />
          </form>
          {editing && <Lorebooks npcId={editing} npcName={draft.name || 'This NPC'} />}
        </div>
      </div>
      {toastElement}
      {dialog}
    </div>
  );
}
