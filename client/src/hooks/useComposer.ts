import { useQueries } from '@tanstack/react-query';
import {
  type ClipboardEvent,
  type DragEvent,
  type FormEvent,
  type KeyboardEvent,
  useEffect,
  useRef,
  useState,
} from 'react';
import type { AttachmentPart } from '../../../src/parts/index.ts';
import { ModelInfo } from '../../../src/wire/index.ts';
import { fetchAs, type Npc } from '../api.ts';
import { attachmentUrl, attachUrl, discardUpload, uploadFile } from '../attachments.ts';

/** One chip in the composer: uploading, ready to send (with the server's Part), or refused (with why). */
export interface Chip {
  key: string;
  name: string;
  size?: number;
  /** A picture's preview: local before and after it is uploaded, the server's once given back (not stored). */
  preview?: string;
  part?: AttachmentPart;
  error?: string;
}

let chipKeys = 0;

export interface ComposerProps {
  conversationId: string;
  participants: Npc[];
  defaults: { provider: string | null; model: string | null };
  streaming: boolean;
  canRegenerate: boolean;
  /** Resolves true once the server accepted the turn, false when it refused it. */
  onSend: (text: string, attachments: AttachmentPart[], npcId?: string) => Promise<boolean>;
  onStop: () => void;
  onRegenerate: () => void;
  /** Sending starts a branch (an edit, or a fork from a reply): said above the box, with a way out. */
  branch?: { key: string; label: string; text: string } | null;
  onCancelBranch?: () => void;
  /** A Message accepted and then not stored (ADR 0099), given back: new each time (`key`). */
  returned?: { key: number; conversationId: string; text: string; attachments: AttachmentPart[] } | null;
}

/**
 * The composer's state: the typed words (a draft kept across reloads), the attachments as chips while they
 * upload, whom the message asks, and which of the answering Models cannot read what is attached.
 */
export function useComposer(props: ComposerProps) {
  const [text, setText] = useDraft(props.conversationId, props.branch);
  const [npcId, setNpcId] = useState('');
  const { chips, setChips, linking, setLinking, link, setLink, addFiles, addLink, remove } = useChips(
    props.conversationId,
  );
  const [dragging, setDragging] = useState(false);
  useGivenBack(props, setText, setChips);
  const picker = useRef<HTMLInputElement>(null);

  const uploading = chips.some((c) => !c.part && !c.error);
  const ready = chips.filter((c) => c.part).map((c) => c.part!);
  const cannot = useCapabilityNotes(props, npcId, ready);
  const canSend = !props.streaming && !uploading && (text.trim() !== '' || ready.length > 0);
  const submit = (e?: FormEvent) => {
    e?.preventDefault();
    if (!canSend) return;
    const sent = text;
    const sentChips = new Set(ready.map((p) => p.id));
    void props.onSend(text, ready, npcId || undefined).then((accepted) => {
      // Refused: the words and files stay, beside the reason. Accepted: they go — unless more was typed since.
      if (!accepted) return;
      setText((t) => (t === sent ? '' : t));
      setChips((cs) => cs.filter((c) => !(c.part && sentChips.has(c.part.id))));
    });
  };
  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      submit();
    }
  };
  const onPaste = (e: ClipboardEvent<HTMLTextAreaElement>) => {
    const files = [...e.clipboardData.files];
    if (files.length === 0) return;
    e.preventDefault();
    addFiles(files);
  };
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setDragging(false);
    addFiles([...e.dataTransfer.files]);
  };

  return {
    text,
    setText,
    npcId,
    setNpcId,
    chips,
    linking,
    setLinking,
    link,
    setLink,
    dragging,
    setDragging,
    picker,
    addFiles,
    addLink,
    remove,
    canSend,
    submit,
    onKeyDown,
    onPaste,
    onDrop,
    cannot,
  };
}

/**
 * A Message given back (accepted, then not stored): its words fill the box unless others were typed since, and its
 * attachments, still unsent, are chips again. Set while rendering, as useDraft sets a branch's words (an effect
 * would paint an empty box first).
 */
function useGivenBack(
  props: ComposerProps,
  setText: (f: (t: string) => string) => void,
  setChips: (f: (cs: Chip[]) => Chip[]) => void,
) {
  const [shown, setShown] = useState<number | undefined>(undefined);
  const back = props.returned;
  // Given back to the Conversation it was sent in only (the page is the same one when another is opened).
  if (!back || back.key === shown || back.conversationId !== props.conversationId) return;
  setShown(back.key);
  setText((t) => (t === '' || t === props.branch?.text ? back.text : t));
  const ids = new Set(back.attachments.map((a) => a.id));
  setChips((cs) => [
    ...cs.filter((c) => !(c.part && ids.has(c.part.id))),
    ...back.attachments.map((part) => ({
      key: `chip-${++chipKeys}`,
      name: part.type === 'file' ? part.name : (part.title ?? part.url),
      size: part.size,
      // Its local preview went when it was sent: a picture is shown again from the server, which keeps it.
      preview:
        part.type === 'file' && !part.missing && part.mediaType.startsWith('image/')
          ? attachmentUrl(part.id)
          : undefined,
      part,
    })),
  ]);
}

/** What is typed, kept per Conversation across reloads until the server has accepted it. */
function useDraft(conversationId: string, branch: ComposerProps['branch']) {
  const draftKey = `av-draft:${conversationId}`;
  const [text, setText] = useState(() => readDraft(draftKey));
  useEffect(() => writeDraft(draftKey, text), [draftKey, text]);
  // An edit starts from the words being edited, set in the same render that shows the note (set in an effect,
  // the note was painted a frame before the words, and a quick reader saw an empty box).
  const branchKey = branch?.key;
  const [shownBranch, setShownBranch] = useState<string | undefined>(undefined);
  if (branchKey !== shownBranch) {
    setShownBranch(branchKey);
    if (branchKey !== undefined) setText(branch?.text ?? '');
  }
  return [text, setText] as const;
}

/** The attachments as chips: files uploading as they are added, pages fetched by address. */
function useChips(conversationId: string) {
  const [chips, setChips] = useState<Chip[]>([]);
  const [linking, setLinking] = useState(false);
  const [link, setLink] = useState('');
  const chipsRef = useRef(chips);
  chipsRef.current = chips;
  // Object URLs of previews are released when the composer goes away.
  useEffect(
    () => () => {
      for (const c of chipsRef.current) if (c.preview?.startsWith('blob:')) URL.revokeObjectURL(c.preview);
    },
    [],
  );

  const update = (key: string, change: Partial<Chip>) =>
    setChips((cs) => cs.map((c) => (c.key === key ? { ...c, ...change } : c)));
  const addFiles = (files: Iterable<File>) => {
    for (const file of files) {
      const key = `chip-${++chipKeys}`;
      const preview = file.type.startsWith('image/') ? URL.createObjectURL(file) : undefined;
      setChips((cs) => [...cs, { key, name: file.name || 'pasted image', size: file.size, preview }]);
      uploadFile(conversationId, file).then(
        (part) => update(key, { part }),
        (e: Error) => update(key, { error: e.message }),
      );
    }
  };
  const addLink = () => {
    const url = link.trim();
    if (!url) return;
    const key = `chip-${++chipKeys}`;
    setChips((cs) => [...cs, { key, name: url }]);
    setLink('');
    setLinking(false);
    attachUrl(conversationId, url).then(
      (part) => update(key, { part, name: part.type === 'url' ? (part.title ?? url) : url, size: part.size }),
      (e: Error) => update(key, { error: e.message }),
    );
  };
  const remove = (chip: Chip) => {
    setChips((cs) => cs.filter((c) => c.key !== chip.key));
    if (chip.preview?.startsWith('blob:')) URL.revokeObjectURL(chip.preview);
    if (chip.part) discardUpload(chip.part.id);
  };

  return { chips, setChips, linking, setLinking, link, setLink, addFiles, addLink, remove };
}

/** Whether the NPCs who may answer can read what is attached (the server sends a note instead when not). */
function useCapabilityNotes(props: ComposerProps, npcId: string, ready: AttachmentPart[]) {
  const who = npcId ? props.participants.filter((n) => n.id === npcId) : props.participants;
  const models = who.map((n) => ({
    npc: n.name,
    provider: n.provider ?? props.defaults.provider,
    model: n.model ?? (n.provider ? null : props.defaults.model),
  }));
  const infos = useQueries({
    queries: models.map((m) => ({
      queryKey: ['model', m.provider, m.model],
      queryFn: () =>
        fetchAs(
          ModelInfo,
          `/api/models?provider=${encodeURIComponent(m.provider!)}&model=${encodeURIComponent(m.model!)}`,
        ),
      enabled: Boolean(m.provider && m.model) && ready.length > 0,
      staleTime: Number.POSITIVE_INFINITY,
    })),
  });
  const cannot = models.flatMap((m, i) => {
    const info = infos[i]?.data;
    if (!info) return [];
    const kinds = [
      ready.some((p) => p.type === 'file' && p.mediaType.startsWith('image/')) &&
        info.images === 'unsupported' &&
        'images',
      ready.some((p) => p.type === 'file' && p.mediaType === 'application/pdf') &&
        info.pdfs === 'unsupported' &&
        'PDFs',
    ].filter(Boolean);
    return kinds.length
      ? [
          `${m.npc}’s Model (${m.model}) cannot read ${kinds.join(' or ')}: it will only be told you attached them.`,
        ]
      : [];
  });

  return cannot;
}

function readDraft(key: string): string {
  try {
    return localStorage.getItem(key) ?? '';
  } catch {
    return ''; // storage refused (private mode, a full quota): a draft is a convenience
  }
}

function writeDraft(key: string, text: string) {
  try {
    if (text) localStorage.setItem(key, text.slice(0, 100_000));
    else localStorage.removeItem(key);
  } catch {}
}
export type ComposerState = ReturnType<typeof useComposer>;
