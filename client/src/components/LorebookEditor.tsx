import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { z } from 'zod';
import { LorebookProblemsResponse, type NpcLorebook } from '../../../src/wire/index.ts';
import { sendFile } from '../api.ts';
import { ErrorNote } from './ErrorNote.tsx';

type Book = z.output<typeof NpcLorebook>;
/** What a save answers: the keys that never match, in words. */
/** An entry as the editor shows it; `rest` is everything else the card gave the entry, sent back untouched. */
interface Draft {
  key: number;
  keys: string;
  content: string;
  constant: boolean;
  enabled: boolean;
  rest: Record<string, unknown>;
}

const entriesOf = (book: Record<string, unknown>): Draft[] =>
  (Array.isArray(book.entries) ? book.entries : []).map((raw, i) => {
    const e = (raw ?? {}) as Record<string, unknown>;
    return {
      key: i,
      // One key a line: a `/regex/` key may hold commas.
      keys: (Array.isArray(e.keys) ? e.keys : []).join('\n'),
      content: typeof e.content === 'string' ? e.content : '',
      constant: e.constant === true,
      enabled: e.enabled !== false,
      rest: e,
    };
  });

const toEntry = (d: Draft) => ({
  ...d.rest,
  keys: d.keys
    .split('\n')
    .map((k) => k.trim())
    .filter(Boolean),
  content: d.content,
  constant: d.constant,
  enabled: d.enabled,
});

/** The book's entries as edited, the keys that never match (as last saved), and saving the whole book. */
function useLorebookDraft(npcId: string, book: Book) {
  const queryClient = useQueryClient();
  const [entries, setEntries] = useState(() => entriesOf(book.book));
  const [problems, setProblems] = useState(book.problems);
  const [saved, setSaved] = useState(false);
  const change = (key: number, patch: Partial<Draft>) => {
    setSaved(false);
    setEntries(entries.map((e) => (e.key === key ? { ...e, ...patch } : e)));
  };
  const add = () => {
    setSaved(false);
    const key = Math.max(-1, ...entries.map((e) => e.key)) + 1;
    const ids = entries.map((e) => e.rest.id).filter((id): id is number => typeof id === 'number');
    setEntries([
      ...entries,
      {
        key,
        keys: '',
        content: '',
        constant: false,
        enabled: true,
        rest: {
          id: Math.max(-1, ...ids) + 1,
          secondary_keys: [],
          selective: false,
          insertion_order: 100,
          extensions: {},
        },
      },
    ]);
  };
  const remove = (key: number) => {
    setSaved(false);
    setEntries(entries.filter((x) => x.key !== key));
  };
  const save = useMutation({
    // As bytes, not a JSON body: a book may be as large as an import accepts (2 MB), past the API's 1 MB JSON.
    mutationFn: () =>
      sendFile(
        LorebookProblemsResponse,
        `/api/lorebooks/${book.id}`,
        new Blob([JSON.stringify({ book: { ...book.book, entries: entries.map(toEntry) } })]),
        undefined,
        'PUT',
      ),
    onSuccess: async (r) => {
      setProblems(r.problems);
      setSaved(true);
      await queryClient.invalidateQueries({ queryKey: ['npc-lorebooks', npcId] });
      await queryClient.invalidateQueries({ queryKey: ['lorebooks'] });
    },
  });
  return { entries, problems, saved, change, add, remove, save };
}

/**
 * One lorebook's entries, editable: keys (one a line; `/pattern/flags` for a regex), content, always on
 * (constant), enabled; entries added and deleted. Save sends the whole book back, every field the editor does not
 * show as it came (so the card exports as its author wrote it), and shows the keys that never match.
 */
export function LorebookEditor({ npcId, book }: { npcId: string; book: Book }) {
  const { entries, problems, saved, change, add, remove, save } = useLorebookDraft(npcId, book);
  const title = book.name || 'Lorebook';
  return (
    <section className="lorebook" aria-label={`Lorebook ${title}`}>
      <h3>
        {title} <span className="meta">· {book.embedded ? 'the card’s own' : 'World Info'}</span>
      </h3>
      {entries.length === 0 && <p className="meta">No entries.</p>}
      <ol className="lore-entries">
        {entries.map((e, i) => (
          <LoreEntry
            key={e.key}
            e={e}
            n={i + 1}
            change={(patch) => change(e.key, patch)}
            remove={() => remove(e.key)}
          />
        ))}
      </ol>
      {problems.length > 0 && (
        <ul className="lore-problems" role="note">
          {problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      )}
      <div className="row">
        <button type="button" className="secondary" onClick={add}>
          Add entry
        </button>
        <button type="button" onClick={() => save.mutate()} disabled={save.isPending}>
          Save lorebook
        </button>
        {saved && (
          <span className="meta" role="status">
            Saved.
          </span>
        )}
      </div>
      <ErrorNote error={save.error} />
    </section>
  );
}

function LoreEntry({
  e,
  n,
  change,
  remove,
}: {
  e: Draft;
  /** Its place in the list, counted from 1. */
  n: number;
  change: (patch: Partial<Draft>) => void;
  remove: () => void;
}) {
  return (
    <li className={e.enabled ? undefined : 'disabled'}>
      <label>
        Keys <span className="meta">(one a line; /pattern/flags for a regex)</span>
        <textarea
          rows={Math.min(8, Math.max(2, e.keys.split('\n').length))}
          value={e.keys}
          aria-label={`Entry ${n} keys`}
          onChange={(ev) => change({ keys: ev.target.value })}
        />
      </label>
      <label>
        Content
        <textarea
          rows={3}
          value={e.content}
          aria-label={`Entry ${n} content`}
          onChange={(ev) => change({ content: ev.target.value })}
        />
      </label>
      <div className="row lore-flags">
        <label className="check">
          <input
            type="checkbox"
            checked={e.constant}
            onChange={(ev) => change({ constant: ev.target.checked })}
          />
          Always on
        </label>
        <label className="check">
          <input
            type="checkbox"
            checked={e.enabled}
            onChange={(ev) => change({ enabled: ev.target.checked })}
          />
          Enabled
        </label>
        <button type="button" className="link danger" aria-label={`Delete entry ${n}`} onClick={remove}>
          Delete entry
        </button>
      </div>
    </li>
  );
}
