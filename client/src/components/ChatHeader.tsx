import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useEffect, useId, useRef, useState } from 'react';
import { Link } from 'react-router';
import { api } from '../api.ts';
import { ConversationList } from './ConversationList.tsx';
import { ErrorNote } from './ErrorNote.tsx';

/** The header's open parts: the Actions panel (Escape or a click outside closes it), renaming, the drawer. */
function useHeaderMenu(id: string) {
  const [menuOpen, setMenuOpen] = useState(false);
  const [renaming, setRenaming] = useState(false);
  const menu = useRef<HTMLDivElement>(null);
  const drawer = useRef<HTMLDialogElement>(null);
  // Escape or a click outside closes the panel.
  useEffect(() => {
    if (!menuOpen) return;
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && setMenuOpen(false);
    const onDown = (e: PointerEvent) => {
      if (!menu.current?.contains(e.target as Node)) setMenuOpen(false);
    };
    window.addEventListener('keydown', onKey);
    window.addEventListener('pointerdown', onDown);
    return () => {
      window.removeEventListener('keydown', onKey);
      window.removeEventListener('pointerdown', onDown);
    };
  }, [menuOpen]);
  // Going to another Conversation closes what was open.
  useEffect(() => {
    setMenuOpen(false);
    setRenaming(false);
    drawer.current?.close();
  }, [id]);
  useEffect(() => () => drawer.current?.close(), []);
  return { menuOpen, setMenuOpen, renaming, setRenaming, menu, drawer };
}

type HeaderProps = {
  conversationId: string;
  title: string | null;
  names: string[];
  /** More settings of the Conversation, shown in the Actions panel (a Party's "Who answers"). */
  settings?: ReactNode;
};

/**
 * The chat's one-line header: on a phone a button for the Conversation list (a drawer), the title (one line,
 * cut with an ellipsis), and one Actions button whose panel holds the rest — who is in it, rename, export,
 * publish — so the transcript keeps the screen.
 */
export function ChatHeader(props: HeaderProps) {
  const { conversationId: id } = props;
  const m = useHeaderMenu(id);
  const title = props.title ?? 'New conversation';
  return (
    <header className="conversation-head">
      <button
        type="button"
        className="secondary drawer-toggle"
        aria-label="Your conversations"
        aria-haspopup="dialog"
        onClick={() => m.drawer.current?.showModal()}
      >
        <span aria-hidden="true">☰</span>
      </button>
      {m.renaming ? (
        <RenameForm id={id} title={props.title ?? ''} onDone={() => m.setRenaming(false)} />
      ) : (
        <div className="head-title">
          <h1 title={title}>{title}</h1>
          <span className="meta head-names">{props.names.join(', ')}</span>
        </div>
      )}
      <ActionsMenu props={props} m={m} />
      {/* biome-ignore lint/a11y/useKeyWithClickEvents: a dialog closes on Escape by itself; a click on the backdrop closes it too */}
      <dialog
        ref={m.drawer}
        className="chat-drawer"
        aria-label="Your conversations"
        onClick={(e) => e.target === m.drawer.current && m.drawer.current.close()}
      >
        <div className="drawer-head">
          <h2>Conversations</h2>
          <button type="button" className="link" onClick={() => m.drawer.current?.close()}>
            Close
          </button>
        </div>
        <ConversationList currentId={id} onGo={() => m.drawer.current?.close()} />
      </dialog>
    </header>
  );
}

function ActionsMenu({ props, m }: { props: HeaderProps; m: ReturnType<typeof useHeaderMenu> }) {
  const { conversationId: id } = props;
  const { menuOpen, setMenuOpen } = m;
  const panelId = useId();
  return (
    <div className="head-menu" ref={m.menu}>
      <button
        type="button"
        className="secondary"
        aria-expanded={menuOpen}
        aria-controls={panelId}
        onClick={() => setMenuOpen((o) => !o)}
      >
        Actions
      </button>
      <div id={panelId} className="head-actions" hidden={!menuOpen}>
        {props.names.length > 0 && <p className="meta">With {props.names.join(', ')}</p>}
        {props.settings}
        <button
          type="button"
          className="link"
          onClick={() => {
            setMenuOpen(false);
            m.setRenaming(true);
          }}
        >
          Rename
        </button>
        <a href={`/api/conversations/${id}/export?format=md`} download onClick={() => setMenuOpen(false)}>
          Export Markdown
        </a>
        <a href={`/api/conversations/${id}/export`} download onClick={() => setMenuOpen(false)}>
          Export JSON
        </a>
        <Link to={`/c/${id}/publish`} className="publish-link">
          Publish…
        </Link>
      </div>
    </div>
  );
}

/** The title, edited in place: Enter saves, Escape or Cancel leaves it as it was. */
function RenameForm({ id, title, onDone }: { id: string; title: string; onDone: () => void }) {
  const queryClient = useQueryClient();
  const [value, setValue] = useState(title);
  const rename = useMutation({
    mutationFn: (t: string) => api(`/api/conversations/${id}`, { method: 'PATCH', body: { title: t } }),
    onSuccess: async () => {
      await Promise.all([
        queryClient.invalidateQueries({ queryKey: ['conversation', id] }),
        queryClient.invalidateQueries({ queryKey: ['conversations'] }),
      ]);
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (value.trim()) rename.mutate(value.trim());
  };
  return (
    <form className="rename-form" onSubmit={submit}>
      <label className="visually-hidden" htmlFor={`rename-${id}`}>
        Title
      </label>
      <input
        id={`rename-${id}`}
        className="rename-input"
        value={value}
        maxLength={200}
        // biome-ignore lint/a11y/noAutofocus: the Player asked to rename; the box is where they type
        autoFocus
        onChange={(e) => setValue(e.target.value)}
        onKeyDown={(e) => e.key === 'Escape' && onDone()}
      />
      <button type="submit" disabled={!value.trim() || rename.isPending}>
        Save
      </button>
      <button type="button" className="secondary" onClick={onDone}>
        Cancel
      </button>
      <ErrorNote error={rename.error} />
    </form>
  );
}
