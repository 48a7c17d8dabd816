import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useState } from 'react';
import { VillageView } from '../../../src/wire/index.ts';
import { api, fetchAs } from '../api.ts';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { ModerationPanel } from '../components/ModerationPanel.tsx';
import { PlayersPanel } from '../components/PlayersPanel.tsx';
import { ProviderKeys } from '../components/ProviderKeys.tsx';
import { useDocumentTitle } from '../title.ts';

/** The Village's settings as a form, filled from the server and saved whole. */
function useVillageSettings() {
  const queryClient = useQueryClient();
  const village = useQuery({ queryKey: ['village'], queryFn: () => fetchAs(VillageView, '/api/village') });
  const [form, setForm] = useState<VillageView['settings'] | null>(null);
  useEffect(() => {
    if (village.data) setForm(village.data.settings);
  }, [village.data]);
  const save = useMutation({
    mutationFn: (s: VillageView['settings']) => api('/api/village', { method: 'PUT', body: s }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['village'] }),
  });
  return { village, form, setForm, save };
}

type Settings = VillageView['settings'];

export function VillagePage() {
  useDocumentTitle('Village');
  const { village, form, setForm, save } = useVillageSettings();
  if (!village.data || !form) return <ErrorNote error={village.error} />;
  const admin = village.data.isAdmin;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate(form);
  };
  return (
    <div className="narrow">
      <h1>Village</h1>
      {!admin && <p className="notice">Only a Village admin can change these settings.</p>}
      {admin && <ProviderKeys />}
      <form className="card" onSubmit={submit}>
        <fieldset disabled={!admin}>
          <label>
            Default Provider
            <select
              value={form.defaultProvider ?? ''}
              onChange={(e) => setForm({ ...form, defaultProvider: e.target.value || null })}
            >
              <option value="">none</option>
              {village.data.providers.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.id} ({p.kind})
                </option>
              ))}
            </select>
          </label>
          <label>
            Default Model
            <input
              value={form.defaultModel ?? ''}
              onChange={(e) => setForm({ ...form, defaultModel: e.target.value || null })}
            />
          </label>
          <LimitFields form={form} setForm={setForm} />
          <AttachmentKinds form={form} setForm={setForm} />
          <button type="submit">Save</button>
        </fieldset>
        <ErrorNote error={save.error} />
        {save.isSuccess && <p role="status">Saved.</p>}
      </form>
      {admin && <ModerationPanel />}
      {admin && <PlayersPanel />}
    </div>
  );
}

type FormProps = { form: Settings; setForm: (s: Settings) => void };

/** Hand-overs, history, spending limits, sandbox space and output tokens: the numbers an admin sets. */
function LimitFields({ form, setForm }: FormProps) {
  return (
    <>
      <label>
        Hop limit (Party hand-overs per Message)
        <input
          type="number"
          min={0}
          max={100}
          value={form.hopLimit}
          onChange={(e) => setForm({ ...form, hopLimit: Number(e.target.value) })}
        />
      </label>
      <label>
        History budget (tokens)
        <input
          type="number"
          min={1000}
          value={form.historyBudget}
          onChange={(e) => setForm({ ...form, historyBudget: Number(e.target.value) })}
        />
      </label>
      {LIMITS.map(([key, label]) => (
        <label key={key}>
          {label}
          <input
            type="number"
            min={1}
            value={form[key]}
            onChange={(e) => setForm({ ...form, [key]: Number(e.target.value) })}
          />
        </label>
      ))}
      <label>
        Sandbox space per Conversation (MB)
        <input
          type="number"
          min={1}
          max={10000}
          value={form.sandboxQuotaMb}
          onChange={(e) => setForm({ ...form, sandboxQuotaMb: Number(e.target.value) })}
        />
      </label>
      <label>
        Most output tokens per reply (empty: each Model's own limit)
        <input
          type="number"
          min={1}
          value={form.maxOutputTokens ?? ''}
          onChange={(e) =>
            setForm({ ...form, maxOutputTokens: e.target.value ? Number(e.target.value) : null })
          }
        />
      </label>
    </>
  );
}

function AttachmentKinds({ form, setForm }: FormProps) {
  return (
    <fieldset className="kinds">
      <legend>Attachments accepted (judged by their contents)</legend>
      {ATTACHMENT_KINDS.map(([type, label]) => (
        <label key={type} className="check">
          <input
            type="checkbox"
            checked={form.attachmentTypes.includes(type)}
            onChange={(e) =>
              setForm({
                ...form,
                attachmentTypes: e.target.checked
                  ? [...form.attachmentTypes, type]
                  : form.attachmentTypes.filter((t) => t !== type),
              })
            }
          />
          {label}
        </label>
      ))}
    </fieldset>
  );
}

/** The spending limits an admin sets (what each Player may use; see the HTTP API doc). */
const LIMITS = [
  ['turnsPerMinute', 'Messages per Player per minute'],
  ['concurrentStreams', 'Replies streaming at once per Player'],
  ['playerDailyTokens', 'Tokens per Player per day'],
  ['villageDailyTokens', 'Tokens for the whole Village per day'],
  ['maxMessageChars', 'Longest Message (characters)'],
  ['maxNpcs', 'NPCs per Player'],
  ['maxConversations', 'Conversations per Player'],
  ['maxAttachmentMb', 'Largest attachment (MB)'],
  ['maxAttachmentsPerMessage', 'Attachments per Message'],
  ['playerAttachmentMb', 'Attachment space per Player (MB)'],
  ['playerStorageMb', 'Storage per Player, everything counted (MB)'],
] as const;

/** The kinds of attachment the server recognises (see ATTACHMENT_TYPES on the server). */
const ATTACHMENT_KINDS = [
  ['image/png', 'PNG'],
  ['image/jpeg', 'JPEG'],
  ['image/gif', 'GIF'],
  ['image/webp', 'WebP'],
  ['application/pdf', 'PDF'],
  ['text/plain', 'Text'],
  ['text/markdown', 'Markdown'],
  ['text/csv', 'CSV'],
  ['application/json', 'JSON'],
] as const;
