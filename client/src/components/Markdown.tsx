import ReactMarkdown from 'react-markdown';
import remarkGfm from 'remark-gfm';

/**
 * A model's text as Markdown. Raw HTML in the text is dropped, never rendered (skipHtml), and react-markdown's
 * URL filter removes javascript: and other unsafe link targets: nothing a model writes can execute.
 */
export function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown">
      <ReactMarkdown
        remarkPlugins={[remarkGfm]}
        skipHtml
        components={{
          a: ({ href, children }) => (
            <a href={href} target="_blank" rel="noopener noreferrer nofollow">
              {children}
            </a>
          ),
        }}
      >
        {text}
      </ReactMarkdown>
    </div>
  );
}
