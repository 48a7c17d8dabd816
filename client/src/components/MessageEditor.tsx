import { type FormEvent, type KeyboardEvent, useEffect, useId, useRef, useState } from 'react';

/**
 * A Player Message edited where it stands (ADR 0042): Save sends the new words as a new branch from the same
 * point, and the original stays one click away (‹ 1/2 ›). Escape or Cancel leaves it as it was. While Save is
 * on its way the words stay here; a refused Save keeps them (the page shows why).
 */
export function MessageEditor({
  initial,
  hadAttachments,
  onSave,
  onCancel,
}: {
  initial: string;
  hadAttachments: boolean;
  /** Resolves true once the server accepted the new turn. */
  onSave: (text: string) => Promise<boolean>;
  onCancel: () => void;
}) {
  const [text, setText] = useState(initial);
  const [saving, setSaving] = useState(false);
  const ref = useRef<HTMLTextAreaElement>(null);
  const hintId = useId();
  useEffect(() => {
    const box = ref.current;
    if (!box) return;
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  }, []);
  const save = async (e?: FormEvent) => {
    e?.preventDefault();
    if (!text.trim() || saving) return;
    setSaving(true);
    const ok = await onSave(text);
    setSaving(false);
    if (ok) onCancel();
  };
  const keys = (e: KeyboardEvent) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      onCancel();
    } else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void save();
  };
  return (
    <form className="message-editor" onSubmit={save} aria-label="Edit your message">
      <label htmlFor={`${hintId}-text`} className="visually-hidden">
        Your message
      </label>
      <textarea
        id={`${hintId}-text`}
        ref={ref}
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={keys}
        aria-describedby={hintId}
        rows={Math.min(10, Math.max(3, text.split('\n').length + 1))}
      />
      <p className="meta" id={hintId}>
        Saving starts a new branch from here; the original stays one click away.
        {hadAttachments && ' Its attached files are not sent again.'}
      </p>
      <div className="row">
        <button type="button" className="secondary" onClick={onCancel} disabled={saving}>
          Cancel
        </button>
        <button type="submit" disabled={saving || !text.trim()}>
          {saving ? 'Saving…' : 'Save'}
        </button>
      </div>
    </form>
  );
}
