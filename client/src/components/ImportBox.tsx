import type { ReactNode } from 'react';
import { ErrorNote } from './ErrorNote.tsx';

/** A card with one file picker: what to import, a hint, then what came of it (or why not). */
export function ImportBox(props: {
  id: string;
  label: string;
  hint: string;
  accept: string;
  pending: boolean;
  onFile: (file: File) => void;
  error: unknown;
  children?: ReactNode;
}) {
  return (
    <div className="card card-import">
      <label htmlFor={props.id}>{props.label}</label>
      <p className="meta">{props.hint}</p>
      <input
        id={props.id}
        type="file"
        accept={props.accept}
        disabled={props.pending}
        onChange={(e) => {
          const file = e.target.files?.[0];
          if (file) props.onFile(file);
          // The same file may be picked again (after fixing it).
          e.target.value = '';
        }}
      />
      {props.children}
      <ErrorNote error={props.error} />
    </div>
  );
}
