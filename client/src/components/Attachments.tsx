import { useEffect, useRef } from 'react';
import type { AttachmentPart } from '../../../src/parts/index.ts';
import { attachmentUrl, formatSize } from '../attachments.ts';

/** A Message's attachments in the transcript: pictures inline (click to enlarge), files as chips, pages as cards. */
export function AttachmentList({ parts }: { parts: AttachmentPart[] }) {
  if (parts.length === 0) return null;
  return (
    <ul className="attachments" aria-label="Attachments">
      {parts.map((p) => (
        <li key={p.id}>
          <AttachmentItem part={p} />
        </li>
      ))}
    </ul>
  );
}

function AttachmentItem({ part }: { part: AttachmentPart }) {
  if (part.type === 'url') {
    let host = part.url;
    try {
      host = new URL(part.url).host;
    } catch {}
    return (
      <a className="link-card" href={part.url} target="_blank" rel="noopener noreferrer nofollow">
        <span className="link-title">{part.title ?? host}</span>
        <span className="meta">
          {host} · page text attached ({formatSize(part.size)})
        </span>
      </a>
    );
  }
  if (part.mediaType.startsWith('image/')) return <Picture part={part} />;
  return (
    <a className="file-chip" href={attachmentUrl(part.id)} download={part.name}>
      <span className="file-icon" aria-hidden="true">
        {part.mediaType === 'application/pdf' ? 'PDF' : 'TXT'}
      </span>
      <span className="file-name">{part.name}</span>
      <span className="meta">{formatSize(part.size)}</span>
    </a>
  );
}

function Picture({ part }: { part: Extract<AttachmentPart, { type: 'file' }> }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => () => dialog.current?.close(), []);
  return (
    <>
      <button
        type="button"
        className="thumb"
        onClick={() => dialog.current?.showModal()}
        aria-label={`Enlarge ${part.name}`}
      >
        <img src={attachmentUrl(part.id)} alt={part.name} loading="lazy" />
      </button>
      {/* biome-ignore lint/a11y/useKeyWithClickEvents: a dialog closes on Escape by itself; a click anywhere closes it too */}
      <dialog ref={dialog} className="lightbox" onClick={() => dialog.current?.close()}>
        <img src={attachmentUrl(part.id)} alt={part.name} />
        <p className="meta">
          {part.name} · {formatSize(part.size)}{' '}
          <a href={attachmentUrl(part.id)} download={part.name} onClick={(e) => e.stopPropagation()}>
            Download
          </a>
        </p>
      </dialog>
    </>
  );
}
