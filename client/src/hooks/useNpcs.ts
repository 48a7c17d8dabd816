import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useRef, useState } from 'react';
import {
  GrantListResponse,
  ModelInfo,
  NpcListResponse,
  NpcResponse,
  VillageView,
} from '../../../src/wire/index.ts';
import { api, fetchAs, type Npc } from '../api.ts';
import { characterOf, emptyCharacter } from '../components/CharacterFields.tsx';
import { useDialogs } from '../components/Dialog.tsx';
import { type Grant, grantKey, grantOf } from '../components/GrantsEditor.tsx';
import { useToast } from '../components/Toast.tsx';

export type NpcDraft = Omit<Npc, 'id' | 'createdAt' | 'updatedAt' | 'extensions' | 'avatarUrl'>;
const empty: NpcDraft = {
  ...emptyCharacter,
  name: '',
  jobTitle: '',
  description: '',
  prompt: '',
  provider: null,
  model: null,
  thinking: false,
};

/** The NPC form: which NPC is edited (none: a new one), its fields and grants, and the form's focus. */
function useNpcForm() {
  const [editing, setEditing] = useState<string | null>(null);
  const [draft, setDraft] = useState<NpcDraft>(empty);
  // The NPC's grants as form state; undefined while an edited NPC's are loading (then Save leaves them as
  // they are). One Save writes the fields and the grants together.
  const [grants, setGrants] = useState<Set<string> | undefined>(new Set());
  const editingRef = useRef<string | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
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
  // Edit: the form comes into view with its first field focused, wherever the list was scrolled.
  useEffect(() => {
    if (!shouldFocusForm) return;
    setShouldFocusForm(false);
    formRef.current?.scrollIntoView({ block: 'start' });
    nameRef.current?.focus({ preventScroll: true });
  }, [shouldFocusForm]);
  const set = <K extends keyof NpcDraft>(k: K, v: NpcDraft[K]) => setDraft({ ...draft, [k]: v });
  return {
    editing,
    editingRef,
    draft,
    setDraft,
    set,
    grants,
    setGrants,
    loadError,
    formRef,
    nameRef,
    reset,
    startEdit,
  };
}

/** The NPCs page's state: the list, the form, saving and deleting, and the NPC just saved. */
export function useNpcs() {
  const queryClient = useQueryClient();
  const npcs = useQuery({ queryKey: ['npcs'], queryFn: () => fetchAs(NpcListResponse, '/api/npcs') });
  const village = useQuery({ queryKey: ['village'], queryFn: () => fetchAs(VillageView, '/api/village') });
  const form = useNpcForm();
  const { editing, editingRef, grants, reset } = form;
  const [toast, toastElement] = useToast();
  const [dialogs, dialog] = useDialogs();
  // The NPC just created or saved: once the list has it, scrolled into view and focused (then forgotten).
  const [landed, setLanded] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (d: NpcDraft) => {
      // Only the fields a Player edits: the server refuses any other key (the NPC as listed carries more).
      const body: NpcDraft & { grants?: Grant[] } = {
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
      return fetchAs(NpcResponse, editing ? `/api/npcs/${editing}` : '/api/npcs', {
        method: editing ? 'PATCH' : 'POST',
        body,
      });
    },
    // The NPC saved or made lands in view and focused.
    onSuccess: async ({ npc }, d) => {
      const id = npc.id;
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
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate(form.draft);
  };
  return { npcs, village, form, save, remove, askDelete, submit, landed, toastElement, dialog };
}

/** The Model this NPC will use (its own, else the Village's, as the server resolves it), and whether it thinks. */
export function useNpcModel(
  draft: NpcDraft,
  settings: { defaultProvider: string | null; defaultModel: string | null } | undefined,
) {
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
  return { model, thinking: modelInfo.data?.thinking };
}

export type NpcsState = ReturnType<typeof useNpcs>;
