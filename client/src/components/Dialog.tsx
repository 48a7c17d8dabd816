import { type FormEvent, type ReactNode, useCallback, useEffect, useId, useRef, useState } from 'react';

/**
 * A modal dialog on the platform's <dialog>: showModal() makes the rest of the page inert, traps focus and
 * closes on Escape; focus goes to the first field (or the safe button) on opening and back to what opened it on
 * closing. Used in place of window.prompt/confirm, which cannot be styled, read oddly, and block the page.
 */
export function Dialog({
  title,
  children,
  onClose,
  onSubmit,
  submitLabel,
  danger = false,
  cancelLabel = 'Cancel',
}: {
  title: string;
  children?: ReactNode;
  /** Cancel or Escape. */
  onClose: () => void;
  onSubmit: () => void;
  submitLabel: string;
  danger?: boolean;
  cancelLabel?: string;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const headingId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    dialog.showModal();
    // A field when there is one; else Cancel, so Enter on a destructive question does not do it.
    const first =
      dialog.querySelector<HTMLElement>('input, textarea, select') ?? dialog.querySelector('.cancel');
    first?.focus();
    if (first instanceof HTMLInputElement) first.select();
    return () => {
      dialog.close();
      if (opener?.isConnected) opener.focus();
    };
  }, []);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSubmit();
  };
  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={headingId}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <form method="dialog" onSubmit={submit}>
        <h2 id={headingId}>{title}</h2>
        {children}
        <div className="row dialog-actions">
          <button type="button" className="secondary cancel" onClick={onClose}>
            {cancelLabel}
          </button>
          <button type="submit" className={danger ? 'danger' : undefined}>
            {submitLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}

type Ask =
  | { kind: 'confirm'; title: string; body?: string; action: string; danger?: boolean }
  | { kind: 'prompt'; title: string; label: string; value: string; action: string; multiline?: boolean };

/**
 * `confirm` and `prompt` as promises, drawn in the page: `const [dialogs, dialog] = useDialogs()`, render
 * `dialog`, then `if (await dialogs.confirm({…}))` / `const text = await dialogs.prompt({…})` (null: cancelled).
 */
export function useDialogs() {
  const [open, setOpen] = useState<{ ask: Ask; answer: (v: string | boolean | null) => void } | null>(null);
  const [value, setValue] = useState('');
  const confirm = useCallback(
    (ask: Omit<Extract<Ask, { kind: 'confirm' }>, 'kind'>) =>
      new Promise<boolean>((resolve) =>
        setOpen({ ask: { kind: 'confirm', ...ask }, answer: (v) => resolve(v === true) }),
      ),
    [],
  );
  const prompt = useCallback(
    (ask: Omit<Extract<Ask, { kind: 'prompt' }>, 'kind'>) =>
      new Promise<string | null>((resolve) => {
        setValue(ask.value);
        setOpen({
          ask: { kind: 'prompt', ...ask },
          answer: (v) => resolve(typeof v === 'string' ? v : null),
        });
      }),
    [],
  );
  const finish = (v: string | boolean | null) => {
    open?.answer(v);
    setOpen(null);
  };
  const ask = open?.ask;
  const element = ask ? (
    <Dialog
      title={ask.title}
      submitLabel={ask.action}
      danger={ask.kind === 'confirm' && ask.danger}
      onClose={() => finish(ask.kind === 'confirm' ? false : null)}
      onSubmit={() => finish(ask.kind === 'confirm' ? true : value)}
    >
      {ask.kind === 'confirm' ? (
        ask.body && <p>{ask.body}</p>
      ) : (
        <>
          <label htmlFor="dialog-field">{ask.label}</label>
          {ask.multiline ? (
            <textarea id="dialog-field" value={value} onChange={(e) => setValue(e.target.value)} rows={5} />
          ) : (
            <input
              id="dialog-field"
              value={value}
              onChange={(e) => setValue(e.target.value)}
              maxLength={200}
            />
          )}
        </>
      )}
    </Dialog>
  ) : null;
  return [{ confirm, prompt }, element] as const;
}
