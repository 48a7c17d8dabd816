import { createContext, memo, useContext, useState } from 'react';
import { type AttachmentPart, flattenText, type Part, readParts } from '../../../src/parts/index.ts';
import type { MessageView as MessageWire } from '../../../src/wire/index.ts';
import { AttachmentList } from './Attachments.tsx';
import { SpeakerAvatar } from './Avatar.tsx';
import { Markdown } from './Markdown.tsx';
import { MessageEditor } from './MessageEditor.tsx';

/**
 * What a row of the transcript shows: the wire's Message less what only the server's ordering needs (a live reply
 * and the Player's own turn before the server stored it have no seq or time yet). Derived from the wire contract,
 * so a change there is a type error here.
 */
export type ViewMessage = Pick<
  MessageWire,
  'id' | 'role' | 'npcName' | 'parts' | 'status' | 'error' | 'provider' | 'model' | 'usage' | 'costUsd'
> &
  /** In a stored transcript: its place among its siblings, and the Message it follows (null for a first one). */
  Partial<Pick<MessageWire, 'branch' | 'parentId'>>;

/**
 * What a stored Message offers besides reading it: switching between its siblings, editing a Player Message and
 * branching from a reply (ADR 0042). From context, so the memoized rows do not re-render on every frame.
 */
export interface BranchActions {
  enabled: boolean;
  show: (messageId: string) => void;
  /** Sends new words for a Player Message as a new branch; true once the server accepted the turn. */
  edit: (message: ViewMessage, text: string) => Promise<boolean>;
  fork: (message: ViewMessage) => void;
}
export const BranchContext = createContext<BranchActions | null>(null);

/**
 * Continue after a reply the Provider cut at its output limit: asks the NPC to go on in a new reply. Offered on
 * the newest Message only (going on from an older one would answer out of place).
 */
export interface ContinueAction {
  lastId: string | null;
  enabled: boolean;
  go: (message: ViewMessage) => void;
}
export const ContinueContext = createContext<ContinueAction | null>(null);

const statusNote: Record<ViewMessage['status'], string | null> = {
  streaming: null,
  complete: null,
  truncated: 'Cut at the output limit.',
  stopped: 'Stopped — what had arrived is kept.',
  failed: 'The reply failed.',
  interrupted: 'Interrupted: the server stopped while this reply was being written.',
};

/** One Message: its Parts in order, who spoke, and for an NPC its Model and usage. */
export const MessageView = memo(function MessageView({ message }: { message: ViewMessage }) {
  const parts = readParts(message.parts);
  const npc = message.role === 'npc';
  const actions = useContext(BranchContext);
  const [editing, setEditing] = useState(false);
  return (
    <article className={`message ${message.role}`} data-message-id={message.id} data-status={message.status}>
      <header>
        {npc && <SpeakerAvatar name={message.npcName} />}
        <span className="speaker">{npc ? (message.npcName ?? 'NPC') : 'You'}</span>
        {npc && message.model && (
          <span className="model" title="The Model that produced this reply">
            {message.provider}/{message.model}
          </span>
        )}
        <Siblings message={message} />
      </header>
      {editing && actions ? (
        <MessageEditor
          initial={flattenText(parts)}
          hadAttachments={parts.some((p) => p.type === 'file' || p.type === 'url')}
          onSave={(text) => actions.edit(message, text)}
          onCancel={() => setEditing(false)}
        />
      ) : (
        <div className="parts">
          {groupAttachments(parts).map((item, i) =>
            // Parts never reorder: the index is their identity.
            Array.isArray(item) ? (
              item[0]?.type === 'file' && item[0].thought ? (
                <ThoughtFiles key={i} parts={item} />
              ) : (
                <AttachmentList key={i} parts={item} />
              )
            ) : (
              <PartView key={i} part={item} />
            ),
          )}
          {message.status === 'streaming' && parts.length === 0 && <p className="typing">Thinking…</p>}
        </div>
      )}
      {(statusNote[message.status] || message.error) && (
        <p className={`status ${message.status}`} role={message.status === 'failed' ? 'alert' : undefined}>
          {message.error ?? statusNote[message.status]}
          {message.status === 'truncated' && <ContinueButton message={message} />}
        </p>
      )}
      {npc && message.status !== 'streaming' && <Footer message={message} parts={parts} />}
      {!npc && message.branch && !editing && <PlayerFooter onEdit={() => setEditing(true)} />}
    </article>
  );
});

/**
 * Adjacent attachments are shown together, as one row of thumbnails and chips; files the Model made while it
 * thought, in a row of their own, with its reasoning.
 */
type Shown = Exclude<Part, AttachmentPart> | AttachmentPart[];
const thought = (p: AttachmentPart) => p.type === 'file' && p.thought === true;
function groupAttachments(parts: Part[]): Shown[] {
  const out: Shown[] = [];
  for (const part of parts) {
    const last = out.at(-1);
    if (part.type !== 'file' && part.type !== 'url') out.push(part);
    else if (Array.isArray(last) && thought(last[0]!) === thought(part)) last.push(part);
    else out.push([part]);
  }
  return out;
}

/** Pictures the Model drew while it thought: drafts, folded away as its reasoning is. */
function ThoughtFiles({ parts }: { parts: AttachmentPart[] }) {
  return (
    <details className="reasoning thought-files">
      <summary>
        {parts.length === 1 ? 'A draft made while thinking' : `${parts.length} drafts made while thinking`}
      </summary>
      <AttachmentList parts={parts} />
    </details>
  );
}

function PartView({ part }: { part: Exclude<Part, AttachmentPart> }) {
  if (part.type === 'text') return <Markdown text={part.text} />;
  if (part.type === 'reasoning') {
    return (
      <details className="reasoning">
        <summary>Reasoning</summary>
        <div className="reasoning-text">{part.text}</div>
      </details>
    );
  }
  const label = part.state === 'running' ? 'running…' : part.state === 'failed' ? 'failed' : 'done';
  return (
    <div className={`tool tool-${part.state}`} data-tool-state={part.state}>
      <div className="tool-head">
        <span className="tool-name">{part.name ?? 'tool'}</span>
        <span className={`tool-state ${part.state}`}>{label}</span>
      </div>
      {part.input !== undefined && (
        <details>
          <summary>Arguments</summary>
          {/* A call cut before it was whole keeps its arguments as the text the NPC had sent. */}
          <pre>{typeof part.input === 'string' ? part.input : JSON.stringify(part.input, null, 2)}</pre>
        </details>
      )}
      {part.state === 'done' && part.output !== undefined && (
        <details>
          <summary>Result</summary>
          <pre>{typeof part.output === 'string' ? part.output : JSON.stringify(part.output, null, 2)}</pre>
        </details>
      )}
      {part.state === 'failed' && <p className="tool-error">{part.error ?? 'The call failed.'}</p>}
    </div>
  );
}

/** "‹ 2/3 ›" where the Conversation forks: the other answers (or edits) stay reachable. */
function Siblings({ message }: { message: ViewMessage }) {
  const actions = useContext(BranchContext);
  const branch = message.branch;
  if (!actions || !branch || branch.count < 2) return null;
  return (
    <span className="siblings" title="Branches here">
      <button
        type="button"
        className="link"
        aria-label="Previous branch"
        disabled={!actions.enabled || !branch.previous}
        onClick={() => branch.previous && actions.show(branch.previous)}
      >
        ‹
      </button>
      <span className="sibling-count">
        {branch.index + 1}/{branch.count}
      </span>
      <button
        type="button"
        className="link"
        aria-label="Next branch"
        disabled={!actions.enabled || !branch.next}
        onClick={() => branch.next && actions.show(branch.next)}
      >
        ›
      </button>
    </span>
  );
}

function ContinueButton({ message }: { message: ViewMessage }) {
  const action = useContext(ContinueContext);
  if (!action || action.lastId !== message.id) return null;
  return (
    <button type="button" className="continue" disabled={!action.enabled} onClick={() => action.go(message)}>
      Continue
    </button>
  );
}

function PlayerFooter({ onEdit }: { onEdit: () => void }) {
  const actions = useContext(BranchContext);
  if (!actions) return null;
  return (
    <footer>
      <button type="button" className="link" disabled={!actions.enabled} onClick={onEdit}>
        Edit
      </button>
    </footer>
  );
}

function Footer({ message, parts }: { message: ViewMessage; parts: Part[] }) {
  const actions = useContext(BranchContext);
  const [copied, setCopied] = useState(false);
  const u = message.usage;
  // The flat text: text Parts only, so reasoning never reaches the clipboard. Nothing to copy, no button.
  const text = flattenText(parts);
  return (
    <footer>
      {text && (
        <button
          type="button"
          className="link"
          onClick={async () => {
            await navigator.clipboard.writeText(text);
            setCopied(true);
            setTimeout(() => setCopied(false), 1500);
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
      )}
      {actions && message.branch && (
        <button
          type="button"
          className="link"
          disabled={!actions.enabled}
          onClick={() => actions.fork(message)}
        >
          Branch from here
        </button>
      )}
      {u && (
        <span className="usage">
          {u.inputTokens ?? '?'} in · {u.outputTokens ?? '?'} out
          {u.reasoningTokens ? ` · ${u.reasoningTokens} reasoning` : ''}
          {message.costUsd != null ? ` · $${message.costUsd.toFixed(4)}` : ''}
        </span>
      )}
    </footer>
  );
}
