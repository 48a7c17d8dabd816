import { type ReactNode, useEffect, useRef, useState } from 'react';
import ReactMarkdown, { type Options } from 'react-markdown';
import remarkGfm from 'remark-gfm';

type PluggableList = NonNullable<Options['rehypePlugins']>;

/**
 * The highlighter (highlight.js's common grammars) is loaded the first time a block
 * names its language, not with the app: most transcripts have none, and every row would otherwise keep its
 * grammars in the heap. Until it arrives such a block shows as plain code, then highlighted.
 */
let highlighter: PluggableList | undefined;
let loading: Promise<void> | undefined;
const loadHighlighter = () =>
  (loading ??= import('rehype-highlight').then((m) => {
    // Blocks that name their language are highlighted; no guessing (slow, and often wrong).
    highlighter = [[m.default, { detect: false }]];
  }));
/**
 * A fence with a language after it (only such blocks are highlighted). Anywhere in the text, at any indent (in
 * a list, a quote): a false match only loads the highlighter, a missed one would leave a block plain.
 */
const NAMED_FENCE = /(```|~~~)[ \t]*[^\s`~]/;

/** The rehype plugins for `text`: the highlighter once loaded, when a block names its language. */
function useHighlighter(text: string): PluggableList {
  const wanted = NAMED_FENCE.test(text);
  const [, loaded] = useState(false);
  useEffect(() => {
    // Should it fail to load, the block stays plain code (the next one asks again).
    if (wanted && !highlighter)
      loadHighlighter().then(
        () => loaded(true),
        () => {
          loading = undefined;
        },
      );
  }, [wanted]);
  return wanted && highlighter ? highlighter : NONE;
}
const NONE: PluggableList = [];

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
  const rehypePlugins = useHighlighter(text);
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
