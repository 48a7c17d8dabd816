import { useRef, useState } from 'react';
import { attachmentsOf, readParts } from '../../../src/parts/index.ts';
import {
  type Cover,
  extraPlaces,
  makeCover,
  mergeSpans,
  type Span,
  type TurnChoice,
} from '../../../src/redaction/index.ts';
import type { Message } from '../api.ts';
import type { Problem } from './PublishPreview.tsx';
import { StepChoices } from './TurnSteps.tsx';

/**
 * One turn in the publish editor: withhold it (and what its hole still shows), redact words, describe its
 * attachments, name and summarise its steps, add links and mentions, and check them.
 */
/**
 * Where the typed words are in `text`, found the way the covering pass finds them (case, accents, curly
 * quotes, widths folded alike): the first place only — the cover takes every other place, in every turn.
 */
function findFirst(text: string, phrase: string): Span[] {
  const [first] = makeCover([phrase]).matches(text);
  return first ? [first] : [];
}

/** Offsets of the current selection within `container`'s text, or null when it is not inside it. */
function selectionIn(container: HTMLElement | null): Span | null {
  const selection = window.getSelection();
  if (!container || !selection?.rangeCount) return null;
  const range = selection.getRangeAt(0);
  if (range.collapsed || !container.contains(range.startContainer) || !container.contains(range.endContainer))
    return null;
  const before = document.createRange();
  before.selectNodeContents(container);
  before.setEnd(range.startContainer, range.startOffset);
  const start = before.toString().length;
  return { start, end: start + range.toString().length };
}

type TurnProps = {
  message: Message;
  text: string;
  cover: Cover;
  choice: TurnChoice;
  defaults: { name: string; summary: string }[] | undefined;
  problems: Problem[];
  /** Links and mentions not looked up yet (nothing is looked up until the Player asks). */
  unchecked: string[];
  onCheck: () => void;
  onChange: (c: Partial<TurnChoice>) => void;
};

/** Redacting in one turn: the selected words, or words typed, and the hint when neither is there. */
function useRedaction(text: string, own: Span[], onChange: (c: Partial<TurnChoice>) => void) {
  const textRef = useRef<HTMLParagraphElement>(null);
  const [hint, setHint] = useState<string | null>(null);
  const [phrase, setPhrase] = useState('');
  const redactSelection = () => {
    const span = selectionIn(textRef.current);
    if (!span) {
      setHint('Select words in this turn’s text first, or type them in the field beside the button.');
      return;
    }
    setHint(null);
    if (!own.some((r) => r.start === span.start && r.end === span.end))
      onChange({ redactions: [...own, span] });
    window.getSelection()?.removeAllRanges();
  };
  // By keyboard: the words typed are redacted where they appear in this turn (and so, like every
  // redaction, covered everywhere they appear).
  const redactPhrase = () => {
    const [span] = findFirst(text, phrase.trim());
    if (!span) {
      setHint(`“${phrase.trim()}” is not in this turn’s text.`);
      return;
    }
    setHint(null);
    setPhrase('');
    if (!own.some((r) => r.start === span.start && r.end === span.end))
      onChange({ redactions: [...own, span] });
  };
  return { textRef, hint, phrase, setPhrase, redactSelection, redactPhrase };
}

export function TurnEditor(props: TurnProps) {
  const { message, text, cover, choice, problems, unchecked, onChange } = props;
  const parts = readParts(message.parts);
  const attached = attachmentsOf(parts);
  const own = choice.redactions ?? [];
  const extra = extraPlaces(text, own, cover);
  const r = useRedaction(text, own, onChange);
  return (
    <li
      className={`card publish-turn ${choice.withheld ? 'withheld' : ''}`}
      data-message-id={message.id}
      id={`turn-${message.id}`}
      tabIndex={-1}
    >
      <div className="row">
        <strong>{message.role === 'npc' ? (message.npcName ?? 'NPC') : 'You'}</strong>
        <label className="check">
          <input
            type="checkbox"
            checked={Boolean(choice.withheld)}
            onChange={(e) => onChange({ withheld: e.target.checked })}
          />
          Withhold this turn
        </label>
      </div>
      {choice.withheld && <HoleChoices message={message} choice={choice} onChange={onChange} />}
      <p ref={r.textRef} className="turn-text" data-testid="turn-text">
        <Marked text={text} own={mergeSpans(own, text.length)} extra={extra} />
      </p>
      {extra.length > 0 && !choice.withheld && (
        <p className="meta covered-note">
          {extra.length === 1 ? 'One more place' : `${extra.length} more places`} covered here because you
          redacted the same words elsewhere.
        </p>
      )}
      {unchecked.length > 0 && !choice.withheld && (
        <p className="meta unchecked-links" data-testid="unchecked-links">
          Not checked yet: {unchecked.join(', ')}. Checking asks the network for each (the sites they name see
          the request); publishing checks them too.{' '}
          <button type="button" className="link" onClick={props.onCheck}>
            Check links
          </button>
        </p>
      )}
      {problems.length > 0 && (
        <ul className="error">
          {problems.map((p) => (
            <li key={`${p.code}-${p.message}`}>{p.message}</li>
          ))}
        </ul>
      )}
      {!choice.withheld && <RedactRow r={r} />}
      {r.hint && (
        <p className="meta" role="status">
          {r.hint}
        </p>
      )}
      {own.length > 0 && <RedactionChips text={text} own={own} onChange={onChange} />}
      {attached.length > 0 && <AttachmentNote attached={attached} choice={choice} onChange={onChange} />}
      {!choice.withheld && (
        <>
          <StepChoices
            message={message}
            choice={choice}
            defaults={props.defaults}
            cover={cover}
            onChange={onChange}
          />
          <LinksRow choice={choice} onChange={onChange} />
        </>
      )}
    </li>
  );
}

type ChoiceProps = { choice: TurnChoice; onChange: (c: Partial<TurnChoice>) => void };

/** What a withheld turn's hole still shows: when it happened, which model wrote it. */
function HoleChoices({ message, choice, onChange }: ChoiceProps & { message: Message }) {
  return (
    <div className="meta hole-choices">
      <p>
        Published as a visible hole: none of its words leave, nor when it happened (it shows the time of the
        turn published before it){message.role === 'npc' ? ', nor which model wrote it' : ''}.
      </p>
      <label className="check">
        <input
          type="checkbox"
          checked={Boolean(choice.keepTime)}
          onChange={(e) => onChange({ keepTime: e.target.checked || undefined })}
        />
        Show when it happened ({new Date(message.createdAt).toLocaleString()})
      </label>
      {message.role === 'npc' && message.model && (
        <label className="check">
          <input
            type="checkbox"
            checked={Boolean(choice.keepModel)}
            onChange={(e) => onChange({ keepModel: e.target.checked || undefined })}
          />
          Show which model wrote it ({message.model})
        </label>
      )}
    </div>
  );
}

function RedactRow({ r }: { r: ReturnType<typeof useRedaction> }) {
  return (
    <div className="row redact-row">
      <button type="button" className="secondary" onClick={r.redactSelection}>
        Redact selection
      </button>
      <label className="inline">
        <span className="visually-hidden">Words to redact in this turn</span>
        <input
          value={r.phrase}
          placeholder="or type words to redact"
          onChange={(e) => r.setPhrase(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter') {
              e.preventDefault();
              r.redactPhrase();
            }
          }}
        />
      </label>
      <button type="button" className="secondary" onClick={r.redactPhrase} disabled={!r.phrase.trim()}>
        Redact these words
      </button>
    </div>
  );
}

function RedactionChips({
  text,
  own,
  onChange,
}: {
  text: string;
  own: Span[];
  onChange: (c: Partial<TurnChoice>) => void;
}) {
  return (
    <ul className="chips redactions" aria-label="Your redactions in this turn">
      {own.map((r, i) => (
        <li key={`${r.start}-${r.end}`} className="chip">
          “{text.slice(r.start, r.end)}”
          <button
            type="button"
            className="link"
            aria-label={`Stop redacting “${text.slice(r.start, r.end)}”`}
            onClick={() => onChange({ redactions: own.filter((_, j) => j !== i) })}
          >
            ×
          </button>
        </li>
      ))}
    </ul>
  );
}

/** Attachments stay private; the Player may describe them in words published with the turn. */
function AttachmentNote({
  attached,
  choice,
  onChange,
}: ChoiceProps & { attached: ReturnType<typeof attachmentsOf> }) {
  return (
    <div className="attachment-note" data-testid="attachment-note">
      <p className="meta">
        {attached.length === 1 ? 'Its attachment' : `Its ${attached.length} attachments`} (
        {attached.map((a) => (a.type === 'file' ? a.name : (a.title ?? a.url))).join(', ')}){' '}
        {attached.length === 1 ? 'stays' : 'stay'} private: never published.
      </p>
      {!choice.withheld && (
        <label>
          Describe what was attached, if the turn needs it (published with the turn)
          <input
            value={choice.attachmentNote ?? ''}
            maxLength={1000}
            placeholder="e.g. a photo of a red bicycle"
            onChange={(e) => onChange({ attachmentNote: e.target.value || undefined })}
          />
        </label>
      )}
    </div>
  );
}

function LinksRow({ choice, onChange }: ChoiceProps) {
  return (
    <div className="row">
      <label>
        Also about (record links, comma-separated)
        <input
          value={(choice.refs ?? []).join(', ')}
          onChange={(e) => onChange({ refs: splitList(e.target.value) })}
        />
      </label>
      <label>
        Also mentions (@handles)
        <input
          value={(choice.mentions ?? []).join(', ')}
          onChange={(e) => onChange({ mentions: splitList(e.target.value) })}
        />
      </label>
    </div>
  );
}

/** The turn's own words, with its redactions and the places the cover reaches marked. */
function Marked({ text, own, extra }: { text: string; own: Span[]; extra: Span[] }) {
  const marks = [
    ...own.map((s) => ({ ...s, kind: 'redacted' })),
    ...extra.map((s) => ({ ...s, kind: 'also-covered' })),
  ].sort((a, b) => a.start - b.start);
  const out: React.ReactNode[] = [];
  let at = 0;
  for (const m of marks) {
    if (m.start < at) continue;
    out.push(text.slice(at, m.start));
    out.push(
      <mark
        key={m.start}
        className={m.kind}
        title={m.kind === 'redacted' ? 'Redacted' : 'Covered: you redacted these words elsewhere'}
      >
        {text.slice(m.start, m.end)}
      </mark>,
    );
    at = m.end;
  }
  out.push(text.slice(at));
  return <>{out}</>;
}

const splitList = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
