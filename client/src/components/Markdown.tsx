// Rendered on the server too, where tsx compiles it by the root tsconfig (which covers only src/, test/ and
// scripts/): this pragma gives it the automatic JSX runtime there (test/web/ssrRuntime.test.ts checks).
/** @jsxRuntime automatic @jsxImportSource react */
import { type ReactNode, useEffect, useRef, useState } from 'react';
import ReactMarkdown, { type Options } from 'react-markdown';
import remarkGfm from 'remark-gfm';
import { readsAsMarkdown } from '../../../src/markdown/index.ts';

/** A fenced block that names its language: the only text the highlighter has anything to do for. */
const NAMED_FENCE = /(^|\n) {0,3}(```|~~~)[ \t]*[^\s`~]/;
type PluggableList = NonNullable<Options['rehypePlugins']>;
let highlighter: PluggableList | undefined;

/**
 * The highlighter (highlight.js and its languages, the largest part of reading) is loaded on demand, the first
 * time a text with a named code block is shown. The first render is always without it — the same as the
 * server's HTML, so hydration matches — and the blocks are coloured once it has arrived.
 */
function useHighlighter(text: string): PluggableList | undefined {
  const wanted = NAMED_FENCE.test(text);
  const [plugins, setPlugins] = useState(() => highlighter);
  useEffect(() => {
    if (!wanted || plugins) return;
    let live = true;
    import('rehype-highlight').then((m) => {
      // Blocks that name their language are highlighted; no guessing (slow, and often wrong).
      highlighter = [[m.default, { detect: false }]];
      if (live) setPlugins(highlighter);
    });
    return () => {
      live = false;
    };
  }, [wanted, plugins]);
  return wanted ? plugins : undefined;
}

/** A code block with a button that copies exactly its text. */
function CodeBlock({ children }: { children?: ReactNode }) {
  const ref = useRef<HTMLPreElement>(null);
  const [copied, setCopied] = useState(false);
  return (
    <div className="code-block">
      <button
        type="button"
        className="link copy-code"
        onClick={async () => {
          await navigator.clipboard.writeText(ref.current?.textContent ?? '');
          setCopied(true);
          setTimeout(() => setCopied(false), 1500);
        }}
      >
        {copied ? 'Copied' : 'Copy code'}
      </button>
      <pre ref={ref}>{children}</pre>
    </div>
  );
}

/**
 * Text as Markdown, shown literally: raw HTML in it is shown as the text it is (escaped), never rendered and
 * never dropped, so a reader sees exactly what was written and published. react-markdown's URL filter removes
 * javascript: and other unsafe link targets: nothing in the text can execute.
 */
export function Markdown({ text }: { text: string }) {
  const fits = readsAsMarkdown(text);
  const rehypePlugins = useHighlighter(fits ? text : '');
  if (!fits) return <AsWritten text={text} />;
  return (
    <div className="markdown">
      <ReactMarkdown
        remarkPlugins={[remarkGfm]}
        rehypePlugins={rehypePlugins}
        components={{
          pre: ({ children }) => <CodeBlock>{children}</CodeBlock>,
          a: ({ href, children }) => (
            <a href={href} target="_blank" rel="noopener noreferrer nofollow">
              {children}
            </a>
          ),
          // An image in someone's text is not fetched by every reader's browser (it would tell its host who
          // read what, and when): it is shown as a link to open on purpose.
          img: ({ src, alt }) => (
            <a
              className="image-link"
              href={typeof src === 'string' ? src : undefined}
              target="_blank"
              rel="noopener noreferrer nofollow"
            >
              🖼 {alt || 'image'}
            </a>
          ),
        }}
      >
        {text}
      </ReactMarkdown>
    </div>
  );
}

/**
 * A text past the Markdown parser's bounds (src/markdown/bounds.ts), shown as written: one block that keeps its
 * line breaks and blank lines (one element, however many paragraphs: 2,000 quotes are 2,000 paragraphs), and a
 * line that says why it is not formatted. Every view decides alike (the server's page, the browser, the cover's
 * model of them), so hydration matches and what is covered is what is shown.
 */
function AsWritten({ text }: { text: string }) {
  return (
    <div className="markdown as-written">
      <p>{text}</p>
      <p className="meta">Shown as written: too long or too intricate to format.</p>
    </div>
  );
}
