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
  // Imported (the file carried its name only), or a file a Model made that was not kept: nothing to show or download.
  if (part.missing) return <MissingItem part={part} />;
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

function MissingItem({ part }: { part: AttachmentPart }) {
  const name = part.type === 'url' ? (part.title ?? part.url) : part.name;
  return (
    <span className="file-chip missing" data-missing="true">
      <span className="file-icon" aria-hidden="true">
        {part.type === 'url' ? 'WEB' : part.mediaType.startsWith('image/') ? 'IMG' : 'FILE'}
      </span>
      <span className="file-name">{name}</span>
      {part.type === 'file' && part.reason ? (
        <span className="meta reason">Not kept. {part.reason}</span>
      ) : (
        <span className="meta">not included in the import</span>
      )}
    </span>
  );
}

/** The thumbnail's box: the picture scaled to fit THUMB, known before it loads (the transcript does not jump). */
const THUMB = { width: 240, height: 180 };
export function thumbSize(part: { width?: number; height?: number }): { width: number; height: number } {
  if (!part.width || !part.height) return THUMB; // uploaded before sizes were kept: a fixed box
  const scale = Math.min(1, THUMB.width / part.width, THUMB.height / part.height);
  return {
    width: Math.max(1, Math.round(part.width * scale)),
    height: Math.max(1, Math.round(part.height * scale)),
  };
}

function Picture({ part }: { part: Extract<AttachmentPart, { type: 'file' }> }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => () => dialog.current?.close(), []);
  const box = thumbSize(part);
  return (
    <>
      <button
        type="button"
        className="thumb"
        onClick={() => dialog.current?.showModal()}
        aria-label={`Enlarge ${part.name}`}
      >
        <img
          src={attachmentUrl(part.id)}
          alt={part.name}
          loading="lazy"
          width={box.width}
          height={box.height}
          className={part.width ? undefined : 'unsized'}
        />
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
