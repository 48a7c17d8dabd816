import { decodeNamedCharacterReference } from 'decode-named-character-reference';
import type { Nodes } from 'mdast';
import { fromMarkdown } from 'mdast-util-from-markdown';
import { gfmFromMarkdown } from 'mdast-util-gfm';
import { gfm } from 'micromark-extension-gfm';

/**
 * The text a reader of published records is shown: the reader renders Markdown with react-markdown and
 * remark-gfm (client/src/components/Markdown.tsx), so the same parser (micromark with the GFM extensions, into
 * mdast) reads it here. What it shows: text, code, raw HTML (shown as written), link text, an image as
 * "🖼 " and its alt (or "image"), autolink text, character references and escapes decoded. What it does not:
 * emphasis marks, link destinations and titles, reference labels and definitions, list and block markers.
 * Each shown code unit keeps the source range it came from, so a covered word found in what is shown is
 * covered where it was written, however the Markdown split it.
 */
export interface Shown {
  text: string;
  /** For each code unit of `text`, the [from, to) of the source that produced it. */
  from: number[];
  to: number[];
  /**
   * Where the reader numbers an ordered list's items (which the source may number otherwise): the text with those
   * numbers too. A page shows them, though its text content (a copy, a screen reader) does not: both are read. A
   * footnote reference's number is text, in both.
   */
  numbered?: Shown;
}

/**
 * Parents whose children are blocks, or a table's rows and cells: the reader shows them apart (a line break, a
 * cell's edge).
 */
const BLOCKS = new Set(['root', 'blockquote', 'list', 'listItem', 'footnoteDefinition', 'table', 'tableRow']);
const REFERENCE = /&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});/y;
const PUNCTUATION = /[!-/:-@[-`{-~]/;

/** What a character reference (`&#77;`, `&#x4d;`, `&amp;`) stands for; null when not one a reader decodes. */
export function decodeReference(ref: string): string | null {
  const name = ref.slice(1, -1);
  if (name[0] !== '#') return decodeNamedCharacterReference(name) || null;
  const hex = name[1] === 'x' || name[1] === 'X';
  const code = Number.parseInt(name.slice(hex ? 2 : 1), hex ? 16 : 10);
  return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
    ? String.fromCodePoint(code)
    : null;
}

export function shownText(s: string): Shown {
  const tree = fromMarkdown(s, { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] });
  const plain = new Showing(s, false);
  plain.show(tree);
  if (!plain.numbers) return plain.out;
  const numbered = new Showing(s, true);
  numbered.show(tree);
  return { ...plain.out, numbered: numbered.out };
}

/** The shown text of one source string as it is built, each code unit with its source range. */
class Showing {
  readonly out: Shown = { text: '', from: [], to: [] };
  /** Whether the reader numbers a list here (see Shown.numbered). */
  numbers = false;
  /** Footnotes: the reader lists their definitions at the end, numbered in the order first referenced. */
  private readonly notes: Nodes[] = [];
  private readonly noteNumbers = new Map<string, number>();
  constructor(
    private readonly s: string,
    private readonly numbered: boolean,
  ) {}

  show(tree: Nodes) {
    this.walk(tree);
    for (const note of this.notes) {
      this.separate();
      this.walk(note, true);
    }
  }

  emit(value: string, from: number, to: number) {
    const out = this.out;
    out.text += value;
    for (let k = 0; k < value.length; k++) {
      out.from.push(from);
      out.to.push(to);
    }
  }

  /**
   * `value` as produced by s[start, end): each code unit mapped to the source character, escape or reference
   * it came from, skipping what the reader does not show; what cannot be placed maps to the whole range.
   */
  aligned(value: string, start: number, end: number) {
    const s = this.s;
    let i = start;
    for (let j = 0; j < value.length; ) {
      let found = false;
      for (; i < end && !found; i++) {
        const c = s[i]!;
        if (c === '&') {
          REFERENCE.lastIndex = i;
          const ref = REFERENCE.exec(s)?.[0];
          const d = ref && i + ref.length <= end ? decodeReference(ref) : null;
          if (d && value.startsWith(d, j)) {
            this.emit(d, i, i + ref!.length);
            j += d.length;
            i += ref!.length - 1;
            found = true;
            continue;
          }
        }
        if (c === '\\' && s[i + 1] === value[j] && PUNCTUATION.test(value[j]!)) {
          this.emit(value[j]!, i, i + 2);
          j++;
          i++;
          found = true;
        } else if (c === value[j]) {
          this.emit(c, i, i + 1);
          j++;
          found = true;
        }
      }
      if (!found) {
        this.emit(value.slice(j), start, end);
        return;
      }
    }
  }

  separate() {
    const at = this.out.to.at(-1) ?? 0;
    this.emit('\n', at, at);
  }

  walk(node: Nodes, inNotes = false) {
    const s = this.s;
    const start = node.position?.start.offset ?? 0;
    const end = node.position?.end.offset ?? s.length;
    switch (node.type) {
      case 'text':
      case 'html':
        return this.aligned(node.value, start, end);
      case 'inlineCode':
        return this.aligned(node.value, start + (/^`+/.exec(s.slice(start, end))?.[0].length ?? 0), end);
      case 'code': {
        // A fenced block's first line is its fence and info string, which the reader does not show.
        const fenced = /^[ \t]*(`{3,}|~{3,})/.test(s.slice(start, end));
        const body = fenced ? s.indexOf('\n', start) + 1 || end : start;
        return this.aligned(node.value, body, end);
      }
      case 'break':
        return this.separate();
      case 'image':
      case 'imageReference':
        // As the reader's image link shows it.
        this.emit('🖼 ', start, end);
        return node.alt ? this.aligned(node.alt, start + 2, end) : this.emit('image', start, end);
      case 'definition':
        return;
      case 'footnoteReference': {
        // Its number is text (a superscript link), in both readings.
        const n = this.noteNumbers.get(node.identifier) ?? this.noteNumbers.size + 1;
        this.noteNumbers.set(node.identifier, n);
        return this.emit(String(n), start, end);
      }
      case 'footnoteDefinition':
        // Shown at the end, not where it is written: the words either side of it read as one line.
        if (!inNotes) {
          this.notes.push(node);
          return;
        }
        break;
      case 'list':
        if (node.ordered) this.numbers = true;
        break;
    }
    if (!('children' in node)) return;
    const from = node.type === 'list' && node.ordered && this.numbered ? (node.start ?? 1) : null;
    node.children.forEach((child, k) => {
      if (k > 0 && BLOCKS.has(node.type)) this.separate();
      // An ordered list's item shows its number, mapped to the item's marker.
      if (from !== null) {
        const at = child.position?.start.offset ?? start;
        const marker = ('children' in child && child.children[0]?.position?.start.offset) || at;
        this.emit(`${from + k}. `, at, marker);
      }
      this.walk(child);
    });
  }
}
