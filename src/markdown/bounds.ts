/**
 * Whether a text is shown as Markdown or as written. The reader's parser (micromark, in react-markdown and in the
 * cover's markdown.ts) has no bound of its own: its time grows faster than the text with nested containers, with
 * lines a container continues lazily, and with emphasis and brackets in one paragraph (18,000 characters of
 * nested emphasis took 6 s); a few thousand levels of nesting overflow the stack of the parse or of React's
 * render; and some short texts render to pages of megabytes (a table's rows padded to its header's columns, a
 * long link definition repeated by each reference). Any repo can publish such a text, and the server renders the
 * reader's pages. So a text past these bounds is shown as written by every view alike (server, browser, the
 * cover's model of them): one linear pass decides, before any parse.
 *
 * The counts are upper bounds, never guesses that could fall short. Lines end as the parser ends them (`\n`,
 * `\r\n` or `\r`). Inline Markdown never spans a blank line, so marks are counted per run of non-blank lines (and
 * in all). A line's nesting is at most its container marks (`>`, list markers, footnote labels) plus half its
 * indentation (each nested list item indents by two columns or more). Code is counted like prose (telling a fence
 * from its look-alikes needs the parse): the bounds are set well past what long real replies hold (ADR 0084).
 */
export interface MarkdownBounds {
  chars: number;
  lines: number;
  depth: number;
  blockLines: number;
  continued: number;
  perBlock: number;
  total: number;
  columns: number;
  cells: number;
  referenced: number;
}

export const MARKDOWN_BOUNDS: Readonly<MarkdownBounds> = {
  /** Characters in all (one line of 49,000 took 1.5 s where 47,000 took 0.18). */
  chars: 40_000,
  /** Lines in all: 25,000 lines of one letter took 0.5 s, and 3,750 hard line breaks in a paragraph 0.3 s. */
  lines: 2000,
  /** Container nesting a line may reach. */
  depth: 32,
  /**
   * Lines that may start or continue a block other than a paragraph (a quote, a list item, a heading, a rule, a
   * table row, a fence, HTML, a definition): the parser's time grows with their square in some shapes (2,500
   * list items each holding a quote took 3.6 s).
   */
  blockLines: 400,
  /**
   * Lines after such a line in one run of non-blank lines, which a container may continue lazily: their time grows
   * with their square too (one list item and 5,000 lines after it took 1.2 s).
   */
  continued: 500,
  /**
   * Emphasis delimiters (`*`, `_`, `~`), brackets (`[`, `]`) and `<` (HTML and autolinks, which may scan to the
   * paragraph's end), in one run of non-blank lines.
   */
  perBlock: 400,
  /** Emphasis delimiters, brackets and `<` in all. */
  total: 3000,
  /** `|` in a line: a table's columns. */
  columns: 128,
  /** A run's lines times its most `|` in a line, summed: a table's cells (each row is padded to the header's). */
  cells: 10_000,
  /**
   * Brackets in all times the longest run that defines a link (`]:`): what references to long definitions may
   * repeat (one 40,000-character definition referenced 1,400 times rendered 56 MB).
   */
  referenced: 1_000_000,
};

const LINE_END = /\r\n?|\n/g;
const BLANK = /^[ \t]*$/;
/** A line whose first mark may open or continue a block that is not a paragraph (a digit: an ordered list). */
const BLOCK_LINE = /^[ \t]*[>\-+*#=|`~<[_0-9]/;

/** After a list marker's number or bullet at `j`: whether it is one (a space, a tab or the line's end follows). */
const markerEnds = (text: string, j: number, end: number) =>
  j >= end || text.charCodeAt(j) === 32 || text.charCodeAt(j) === 9;

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
    else if (c === 91 && text.charCodeAt(i + 1) === 94) {
      // A footnote's definition, [^label]: its content nests in it.
      const close = text.indexOf(']:', i);
      if (close < 0 || close >= end) break;
      depth++;
      i = close + 2;
      continue;
    } else {
      // A list marker: -, + or *, or up to nine digits and . or ).
      let j = i;
      if (c === 45 || c === 43 || c === 42) j++;
      else {
        while (j < end && j - i < 9 && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j++;
        if (j === i || j >= end || (text.charCodeAt(j) !== 46 && text.charCodeAt(j) !== 41)) break;
        j++;
      }
      if (!markerEnds(text, j, end)) break;
      depth++;
      i = j;
      continue;
    }
    i++;
  }
  return depth + Math.ceil(columns / 2);
}

/** What one line holds that the bounds count. */
function lineMarks(text: string, start: number, end: number): { marks: number; pipes: number } {
  let marks = 0;
  let pipes = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    // * _ ~ [ ] <
    if (c === 42 || c === 95 || c === 126 || c === 91 || c === 93 || c === 60) marks++;
    else if (c === 124) pipes++;
  }
  return { marks, pipes };
}

/** The counts of one run of non-blank lines, as it is read. */
interface Run {
  start: number;
  marks: number;
  lines: number;
  pipes: number;
  /** Lines since the run's first block line (-1: none yet). */
  continued: number;
  defines: boolean;
}

/** True when the reader shows `text` as Markdown; false: as written (MARKDOWN_BOUNDS says why). */
export function readsAsMarkdown(text: string, bounds: Readonly<MarkdownBounds> = MARKDOWN_BOUNDS): boolean {
  if (text.length > bounds.chars) return false;
  const all = { lines: 0, blockLines: 0, marks: 0, cells: 0, definingRun: 0 };
  let run: Run | null = null;
  /** Closes the run that ends at `end`: its table's cells and its definitions counted. */
  const close = (end: number) => {
    if (!run) return true;
    all.cells += run.lines * run.pipes;
    if (run.defines) all.definingRun = Math.max(all.definingRun, end - run.start);
    run = null;
    return all.cells <= bounds.cells;
  };
  for (let start = 0; ; ) {
    LINE_END.lastIndex = start;
    const found = LINE_END.exec(text);
    const end = found ? found.index : text.length;
    if (++all.lines > bounds.lines) return false;
    const line = text.slice(start, end);
    if (BLANK.test(line)) {
      if (!close(start)) return false;
    } else {
      if (!run) {
        // (Each run costs the parser some 60-100 µs: the lines' bound bounds them, at one in two lines.)
        run = { start, marks: 0, lines: 0, pipes: 0, continued: -1, defines: false };
      }
      run.lines++;
      if (lineDepth(text, start, end) > bounds.depth) return false;
      if (BLOCK_LINE.test(line)) {
        if (++all.blockLines > bounds.blockLines) return false;
        if (run.continued < 0) run.continued = 0;
      } else if (run.continued >= 0 && ++run.continued > bounds.continued) return false;
      if (line.includes(']:')) run.defines = true;
      const { marks, pipes } = lineMarks(text, start, end);
      if (pipes > bounds.columns) return false;
      run.pipes = Math.max(run.pipes, pipes);
      run.marks += marks;
      all.marks += marks;
      if (run.marks > bounds.perBlock || all.marks > bounds.total) return false;
    }
    if (!found) break;
    start = found.index + found[0].length;
  }
  if (!close(text.length)) return false;
  // Every mark is counted, brackets among them: an upper bound on the references.
  return all.marks * all.definingRun <= bounds.referenced;
}
