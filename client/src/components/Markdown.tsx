import { type ReactNode, useRef, useState } from 'react';
import ReactMarkdown from 'react-markdown';
import rehypeHighlight from 'rehype-highlight';
import remarkGfm from 'remark-gfm';

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
  return (
    <div className="markdown">
      <ReactMarkdown
        remarkPlugins={[remarkGfm]}
        // Blocks that name their language are highlighted; no guessing (slow, and often wrong).
        rehypePlugins={[[rehypeHighlight, { detect: false }]]}
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
