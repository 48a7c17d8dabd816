import ReactMarkdown from 'react-markdown';
import remarkGfm from 'remark-gfm';

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
        components={{
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
