/**
 * Whether a text is shown as Markdown or as written. The reader's parser (micromark, in react-markdown and in the
 * cover's markdown.ts) has no bound of its own: its time grows faster than the text with nested containers
 * and with emphasis and brackets in one paragraph (18,000 characters of nested emphasis took 6 s; 15,000 `*` and
 * letters in turn 0.4 s), and a few thousand levels of nesting overflow the stack of the parse or of React's
 * render. Any repo can publish such a text, and the server renders the reader's pages. So a text past these
 * bounds is shown as written, in paragraphs, by every view alike (server, browser, the cover's model of them):
 * one linear pass decides, before any parse.
 *
 * The counts are upper bounds, never guesses that could fall short: inline Markdown never spans a blank line, so
 * delimiters are counted per run of non-blank lines (and in all); a line's nesting is at most its container
 * marks (`>`, list markers) plus half its indentation (each nested list item indents by two columns or more).
 * Code is counted too (telling a fence from its look-alikes needs the parse): the bounds are set well past what
 * long real replies hold (ADR 0084).
 */
export interface MarkdownBounds {
  chars: number;
  lines: number;
  depth: number;
  blockLines: number;
  blocks: number;
  perBlock: number;
  total: number;
}

export const MARKDOWN_BOUNDS: Readonly<MarkdownBounds> = {
  /** Characters in all. */
  chars: 50_000,
  /** Lines in all: each costs the parser some 20 µs (25,000 lines of one letter took 0.5 s). */
  lines: 5000,
  /** Container nesting a line may reach. */
  depth: 32,
  /**
   * Lines that may start or continue a block other than a paragraph (a quote, a list item, a heading, a rule, a
   * table row, a fence, HTML, a definition): the parser's time grows with their square in some shapes (2,500
   * list items each holding a quote took 3.6 s).
   */
  blockLines: 400,
  /** Runs of non-blank lines (paragraphs and the like): each costs the parser some 60-100 µs. */
  blocks: 1000,
  /**
   * Emphasis delimiters (`*`, `_`, `~`), brackets (`[`, `]`) and `<` (HTML and autolinks, which may scan to the
   * paragraph's end), in one run of non-blank lines.
   */
  perBlock: 400,
  /** Emphasis delimiters and brackets in all. */
  total: 3000,
};

const BLANK = /^[ \t]*$/;
/** A line whose first mark may open or continue a block that is not a paragraph (a digit: an ordered list). */
const BLOCK_LINE = /^[ \t]*[>\-+*#=|`~<[_0-9]/;

/** The container marks and indentation a line opens with, as nesting it may reach. */
function lineDepth(text: string, start: number, end: number): number {
  let depth = 0;
  let columns = 0;
  let i = start;
  while (i < end) {
    const c = text.charCodeAt(i);
    if (c === 32) columns++;
    else if (c === 9) columns += 4;
    else if (c === 62)
      depth++; // >
    else {
      // A list marker: -, + or *, or up to nine digits and . or ), then a space, a tab or the line's end.
      let j = i;
      if (c === 45 || c === 43 || c === 42) j++;
      else {
        while (j < end && j - i < 9 && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j++;
        if (j === i || j >= end || (text.charCodeAt(j) !== 46 && text.charCodeAt(j) !== 41)) break;
        j++;
      }
      const next = j < end ? text.charCodeAt(j) : 32;
      if (next !== 32 && next !== 9) break;
      depth++;
      i = j;
      continue;
    }
    i++;
  }
  return depth + Math.ceil(columns / 2);
}

/** True when the reader shows `text` as Markdown; false: as written (MARKDOWN_BOUNDS says why). */
export function readsAsMarkdown(text: string, bounds: Readonly<MarkdownBounds> = MARKDOWN_BOUNDS): boolean {
  if (text.length > bounds.chars) return false;
  /** Marks in the current run of non-blank lines; -1 after a blank line. */
  let block = -1;
  let total = 0;
  let blockLines = 0;
  let blocks = 0;
  let lines = 0;
  for (let start = 0; start <= text.length; ) {
    if (++lines > bounds.lines) return false;
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end);
    if (BLANK.test(line)) block = -1;
    else {
      if (block < 0) {
        block = 0;
        if (++blocks > bounds.blocks) return false;
      }
      if (lineDepth(text, start, end) > bounds.depth) return false;
      if (BLOCK_LINE.test(line) && ++blockLines > bounds.blockLines) return false;
      let marks = 0;
      for (let i = start; i < end; i++) {
        const c = text.charCodeAt(i);
        // * _ ~ [ ] <
        if (c === 42 || c === 95 || c === 126 || c === 91 || c === 93 || c === 60) marks++;
      }
      block += marks;
      total += marks;
      if (block > bounds.perBlock || total > bounds.total) return false;
    }
    start = end + 1;
  }
  return true;
}
