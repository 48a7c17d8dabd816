import { formatSize } from '../attachments.ts';
import { type Chip, type ComposerProps, type ComposerState, useComposer } from '../hooks/useComposer.ts';

export function Composer(props: ComposerProps) {
  const c = useComposer(props);
  const { npcId, setNpcId, setDragging } = c;
  return (
    <form
      className={`composer ${c.dragging ? 'dragging' : ''}`}
      onSubmit={c.submit}
      onDragOver={(e) => {
        if (e.dataTransfer.types.includes('Files')) {
          e.preventDefault();
          setDragging(true);
        }
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={c.onDrop}
    >
      {props.branch && (
        <p className="branch-note" role="status">
          {props.branch.label}{' '}
          <button type="button" className="link" onClick={props.onCancelBranch}>
            Cancel
          </button>
        </p>
      )}
      {props.participants.length > 1 && (
        <label className="address">
          Ask{' '}
          <select value={npcId} onChange={(e) => setNpcId(e.target.value)}>
            <option value="">whoever fits</option>
            {props.participants.map((n) => (
              <option key={n.id} value={n.id}>
                {n.name}
              </option>
            ))}
          </select>
        </label>
      )}
      {c.chips.length > 0 && <Chips chips={c.chips} onRemove={c.remove} />}
      {c.cannot.map((note) => (
        <p key={note} className="meta capability-note" role="status">
          {note}
        </p>
      ))}
      {c.linking && <LinkRow c={c} />}
      <label htmlFor="composer-text" className="visually-hidden">
        Message
      </label>
      <textarea
        id="composer-text"
        rows={2}
        placeholder="Message… Enter sends, Shift+Enter new line; paste or drop files"
        value={c.text}
        onChange={(e) => c.setText(e.target.value)}
        onKeyDown={c.onKeyDown}
        onPaste={c.onPaste}
      />
      <ComposerActions props={props} c={c} />
    </form>
  );
}

function Chips({ chips, onRemove }: { chips: Chip[]; onRemove: (chip: Chip) => void }) {
  return (
    <ul className="chips composer-chips" aria-label="Attached to this message">
      {chips.map((c) => (
        <li
          key={c.key}
          className={`chip attachment-chip ${c.error ? 'refused' : c.part ? 'ready' : 'uploading'}`}
        >
          {c.preview && !c.error && <img src={c.preview} alt="" className="chip-thumb" />}
          <span className="chip-name">{c.name}</span>
          {c.size !== undefined && <span className="meta chip-size">{formatSize(c.size)}</span>}
          {!c.part && !c.error && <span className="meta">uploading…</span>}
          {c.error && (
            <span className="error" role="alert">
              {c.error}
            </span>
          )}
          <button type="button" className="link" aria-label={`Remove ${c.name}`} onClick={() => onRemove(c)}>
            ×
          </button>
        </li>
      ))}
    </ul>
  );
}

function LinkRow({ c }: { c: ComposerState }) {
  return (
    <div className="row link-row">
      <label className="inline">
        <span className="visually-hidden">Address of the page to attach</span>
        <input
          type="url"
          className="link-input"
          value={c.link}
          placeholder="https://… (the page’s text is attached)"
          onChange={(e) => c.setLink(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter') {
              e.preventDefault();
              c.addLink();
            }
          }}
        />
      </label>
      <button type="button" className="secondary" onClick={c.addLink} disabled={!c.link.trim()}>
        Attach page
      </button>
    </div>
  );
}

function ComposerActions({ props, c }: { props: ComposerProps; c: ComposerState }) {
  return (
    <div className="composer-actions">
      <input
        ref={c.picker}
        type="file"
        multiple
        hidden
        data-testid="attach-input"
        onChange={(e) => {
          c.addFiles([...(e.target.files ?? [])]);
          e.target.value = '';
        }}
      />
      <button
        type="button"
        className="secondary"
        onClick={() => c.picker.current?.click()}
        aria-label="Attach files"
      >
        Attach
      </button>
      <button
        type="button"
        className="secondary"
        onClick={() => c.setLinking((l) => !l)}
        aria-expanded={c.linking}
      >
        Link
      </button>
      {props.streaming ? (
        <button type="button" onClick={props.onStop} className="stop">
          Stop
        </button>
      ) : (
        <button type="submit" disabled={!c.canSend}>
          Send
        </button>
      )}
      {props.canRegenerate && (
        <button type="button" className="secondary" onClick={props.onRegenerate}>
          Regenerate
        </button>
      )}
    </div>
  );
}
