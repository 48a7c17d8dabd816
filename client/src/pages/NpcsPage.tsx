import type { Npc } from '../api.ts';
import { Avatar } from '../components/Avatar.tsx';
import { CardImport } from '../components/CardImport.tsx';
import { CharacterFields } from '../components/CharacterFields.tsx';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { GrantsEditor } from '../components/GrantsEditor.tsx';
import { Lorebooks } from '../components/Lorebooks.tsx';
import { type NpcsState, useNpcModel, useNpcs } from '../hooks/useNpcs.ts';
import { useDocumentTitle } from '../title.ts';

export function NpcsPage() {
  useDocumentTitle('NPCs');
  const s = useNpcs();
  const { editing, draft } = s.form;
  return (
    <div className="narrow npcs-page">
      <h1>NPCs</h1>
      <div className="npcs-layout">
        <section aria-labelledby="npc-list-heading">
          <h2 id="npc-list-heading">Your NPCs</h2>
          <ErrorNote error={s.npcs.error ?? s.remove.error} />
          {s.npcs.data && s.npcs.data.npcs.length === 0 && (
            <p className="meta">No NPCs yet: make one with the form, or import a character card.</p>
          )}
          <ul className="npc-list">
            {s.npcs.data?.npcs.map((n) => (
              <NpcItem key={n.id} n={n} s={s} />
            ))}
          </ul>
          <CardImport />
        </section>
        <div className="npc-side">
          <NpcForm s={s} />
          {editing && <Lorebooks npcId={editing} npcName={draft.name || 'This NPC'} />}
        </div>
      </div>
      {s.toastElement}
      {s.dialog}
    </div>
  );
}

function NpcItem({ n, s }: { n: Npc; s: NpcsState }) {
  const { editing } = s.form;
  const settings = s.village.data?.settings;
  return (
    <li
      id={`npc-${n.id}`}
      tabIndex={-1}
      className={
        [s.landed === n.id && 'just-saved', editing === n.id && 'editing'].filter(Boolean).join(' ') ||
        undefined
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
          onClick={() => s.form.startEdit(n)}
        >
          Edit
        </button>
        <a className="link" href={`/api/npcs/${n.id}/card`} download>
          Export card
        </a>
        <button type="button" className="link danger" onClick={() => void s.askDelete(n)}>
          Delete
        </button>
      </span>
    </li>
  );
}

function NpcForm({ s }: { s: NpcsState }) {
  const { editing, draft, set, setDraft, grants } = s.form;
  return (
    <form
      className="card npc-form"
      ref={s.form.formRef}
      onSubmit={s.submit}
      aria-label={editing ? 'Edit NPC' : 'New NPC'}
    >
      <h2>{editing ? `Edit ${draft.name}` : 'New NPC'}</h2>
      <label>
        Name
        <input
          ref={s.form.nameRef}
          value={draft.name}
          onChange={(e) => set('name', e.target.value)}
          required
          maxLength={100}
        />
      </label>
      <label>
        Job Title
        <input value={draft.jobTitle} onChange={(e) => set('jobTitle', e.target.value)} maxLength={100} />
      </label>
      <label>
        Description
        <textarea value={draft.description} onChange={(e) => set('description', e.target.value)} rows={2} />
      </label>
      <label>
        Prompt
        <textarea value={draft.prompt} onChange={(e) => set('prompt', e.target.value)} rows={4} />
      </label>
      <CharacterFields value={draft} prompt={draft.prompt} onChange={(c) => setDraft({ ...draft, ...c })} />
      <NpcModelFields s={s} />
      {grants ? (
        <GrantsEditor value={grants} onChange={s.form.setGrants} />
      ) : (
        <p className="meta" aria-live="polite">
          Loading this NPC’s Tools…
        </p>
      )}
      <ErrorNote error={s.form.loadError} />
      <div className="row">
        <button type="submit" disabled={s.save.isPending}>
          {editing ? 'Save' : 'Create NPC'}
        </button>
        {editing && (
          <button type="button" className="secondary" onClick={s.form.reset}>
            Cancel
          </button>
        )}
      </div>
      <ErrorNote error={s.save.error} />
    </form>
  );
}

/** Provider, Model and thinking, with what the resolved Model says about thinking. */
function NpcModelFields({ s }: { s: NpcsState }) {
  const { draft, set } = s.form;
  const settings = s.village.data?.settings;
  const { model, thinking } = useNpcModel(draft, settings);
  return (
    <>
      <div className="row">
        <label>
          Provider
          <select value={draft.provider ?? ''} onChange={(e) => set('provider', e.target.value || null)}>
            <option value="">Village default ({settings?.defaultProvider ?? 'none'})</option>
            {s.village.data?.providers.map((p) => (
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
        <input type="checkbox" checked={draft.thinking} onChange={(e) => set('thinking', e.target.checked)} />
        Thinking (show reasoning)
      </label>
      {model && thinking && thinking !== 'supported' && (
        <p className="meta thinking-note" role="note">
          {thinking === 'unsupported'
            ? `${model} cannot think: with it, this NPC answers without reasoning, whatever this setting says.`
            : `Whether ${model} can think is not known here; if it cannot, this setting has no effect.`}
        </p>
      )}
    </>
  );
}
