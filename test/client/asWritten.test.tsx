// @vitest-environment happy-dom
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { Markdown } from '../../client/src/components/Markdown.tsx';
import { renderReader } from '../../client/src/reader/ssr.tsx';
import { HOSTILE_MARKDOWN } from '../support/hostileMarkdown.ts';

const turn = (rkey: string, text: string) => ({
  uri: `at://did:plc:x/click.aligned.chat.message/${rkey}`,
  rkey,
  record: { role: 'assistant' as const, createdAt: '2026-11-01T00:00:00.000Z', text },
  refs: [],
  mentions: [],
  labels: [],
});

describe('a text past the parser’s bounds', () => {
  it('is shown as written, every line of it, and says so', () => {
    for (const [name, text] of HOSTILE_MARKDOWN) {
      const html = renderToStaticMarkup(<Markdown text={text} />);
      expect(html, name).toContain('Shown as written');
      // Its paragraphs as written (escaped): nothing parsed away.
      const div = document.createElement('div');
      div.innerHTML = html;
      const shown = [...div.querySelectorAll('p:not(.meta)')].map((p) => p.textContent).join('\n\n');
      expect(shown.replace(/\s+/g, ''), name).toBe(text.replace(/\s+/g, ''));
    }
    // Within them, Markdown as ever.
    expect(renderToStaticMarkup(<Markdown text="a *stressed* word" />)).toContain('<em>stressed</em>');
  });

  it('leaves the server’s reading page whole, beside turns that are formatted', () => {
    // 5,000 nested quotes overflowed the stack of the page's render; nested emphasis took 13 s before it did.
    const thread = {
      uri: 'at://did:plc:x/click.aligned.chat.session/3kabcdefghijk',
      author: { did: 'did:plc:x', handle: 'a.test' },
      session: { title: 'Deep', createdAt: '2026-11-01T00:00:00.000Z' },
      messages: [
        turn('3kaaaaaaaaaa2', `${'>'.repeat(5000)} deep`),
        turn('3kaaaaaaaaaa3', `${'*a '.repeat(3000)}x${' a*'.repeat(3000)}`),
        turn('3kaaaaaaaaaa4', 'An **ordinary** turn.'),
      ],
      labels: [],
    };
    const html = renderReader({ page: 'thread', actor: 'a.test', rkey: '3kabcdefghijk', thread });
    expect(html.match(/Shown as written/g)).toHaveLength(2);
    expect(html).toContain('<strong>ordinary</strong>');
    expect(html).toContain(`${'&gt;'.repeat(5000)} deep`);
  });
});
