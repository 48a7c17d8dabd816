// @vitest-environment happy-dom
import { cleanup, render, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { ContinueContext, MessageView, type ViewMessage } from '../../client/src/components/MessageView.tsx';
import { speakerOf } from '../../client/src/pages/ThreadPage.tsx';

afterEach(cleanup);

const reply = (parts: unknown[], extra: Partial<ViewMessage> = {}): ViewMessage => ({
  id: 'm1',
  role: 'npc',
  npcName: 'Ada',
  parts,
  status: 'complete',
  error: null,
  provider: 'openai',
  model: 'gpt-x',
  usage: { inputTokens: 10, outputTokens: 5, reasoningTokens: null, cachedInputTokens: null },
  costUsd: 0.0012,
  ...extra,
});

describe('MessageView', () => {
  it('renders Parts in order: reasoning collapsed, a tool with its state, text as Markdown', () => {
    const { container } = render(
      <MessageView
        message={reply([
          { type: 'reasoning', text: 'private thought' },
          { type: 'tool', id: 'c1', name: 'search', input: { q: 'x' }, state: 'done', output: { hits: 1 } },
          { type: 'text', text: 'Found **one**.' },
        ])}
      />,
    );
    const kids = [...container.querySelectorAll('.parts > *')].map((e) => e.className);
    expect(kids).toEqual(['reasoning', 'tool tool-done', 'markdown']);
    expect(container.querySelector('details.reasoning')?.hasAttribute('open')).toBe(false);
    expect(container.querySelector('strong')?.textContent).toBe('one');
    expect(screen.getByText('openai/gpt-x')).toBeTruthy();
    expect(container.querySelector('.usage')?.textContent).toContain('$0.0012');
  });

  it('shows attachments together after the text: a picture inline, a file to download, a page as a card', () => {
    const id = (n: number) => `00000000-0000-4000-8000-00000000000${n}`;
    const { container } = render(
      <MessageView
        message={reply([
          { type: 'text', text: 'Look' },
          { type: 'file', id: id(1), name: 'boat.png', mediaType: 'image/png', size: 2048 },
          { type: 'file', id: id(2), name: 'log.pdf', mediaType: 'application/pdf', size: 3 * 1024 * 1024 },
          { type: 'url', id: id(3), url: 'https://example.com/tides', title: 'Tides', size: 900 },
        ])}
      />,
    );
    expect([...container.querySelectorAll('.parts > *')].map((e) => e.className)).toEqual([
      'markdown',
      'attachments',
    ]);
    expect(container.querySelector('.thumb img')?.getAttribute('src')).toBe(`/api/attachments/${id(1)}`);
    const file = container.querySelector('a.file-chip');
    expect(file?.getAttribute('href')).toBe(`/api/attachments/${id(2)}`);
    expect(file?.getAttribute('download')).toBe('log.pdf');
    expect(file?.textContent).toContain('3.0 MB');
    const card = container.querySelector('a.link-card');
    expect(card?.getAttribute('href')).toBe('https://example.com/tides');
    expect(card?.getAttribute('rel')).toContain('noopener');
    expect(card?.textContent).toContain('Tides');
  });

  it('folds files the Model made while thinking away with its reasoning, apart from its answer; says why one was not kept', () => {
    const id = (n: number) => `00000000-0000-4000-8000-00000000001${n}`;
    const { container } = render(
      <MessageView
        message={reply([
          { type: 'reasoning', text: 'Sketching the coast.' },
          { type: 'file', id: id(1), name: 'image-1.png', mediaType: 'image/png', size: 90, thought: true },
          { type: 'file', id: id(2), name: 'image-2.png', mediaType: 'image/png', size: 90 },
          {
            type: 'file',
            id: id(3),
            name: 'file-3.wav',
            mediaType: 'audio/wav',
            size: 300,
            missing: true,
            reason: 'It is not a kind of file this Village keeps (unrecognised).',
          },
        ])}
      />,
    );
    expect([...container.querySelectorAll('.parts > *')].map((e) => e.className)).toEqual([
      'reasoning',
      'reasoning thought-files',
      'attachments',
    ]);
    const drafts = container.querySelector('details.thought-files');
    expect(drafts?.hasAttribute('open')).toBe(false);
    expect(drafts?.querySelector('summary')?.textContent).toBe('A draft made while thinking');
    expect(drafts?.querySelector('.thumb img')?.getAttribute('src')).toBe(`/api/attachments/${id(1)}`);
    const answer = container.querySelector('.parts > ul.attachments');
    expect(answer?.querySelector('.thumb img')?.getAttribute('src')).toBe(`/api/attachments/${id(2)}`);
    expect(answer?.querySelector('.file-chip.missing')?.textContent).toContain(
      'Not kept. It is not a kind of file this Village keeps (unrecognised).',
    );
  });

  it('shows a failed call as failed, with its error', () => {
    const { container } = render(
      <MessageView
        message={reply([{ type: 'tool', id: 'c1', name: 'run', state: 'failed', error: 'exit 1' }])}
      />,
    );
    expect(container.querySelector('.tool-state')?.textContent).toBe('failed');
    expect(container.querySelector('.tool-error')?.textContent).toBe('exit 1');
  });

  it('shows a call still running as in flight', () => {
    const { container } = render(
      <MessageView
        message={reply([{ type: 'tool', id: 'c1', name: 'run', state: 'running' }], { status: 'streaming' })}
      />,
    );
    expect(container.querySelector('.tool-state')?.textContent).toBe('running…');
  });

  it('shows raw HTML from a model as literal text, never as elements or script links', () => {
    const { container } = render(
      <MessageView
        message={reply([
          {
            type: 'text',
            text: 'Hi <img src=x onerror="alert(1)"> <script>alert(2)</script> [click](javascript:alert(3))',
          },
        ])}
      />,
    );
    expect(container.querySelector('img')).toBeNull();
    expect(container.querySelector('script')).toBeNull();
    // Shown as written, not silently deleted.
    expect(container.querySelector('.markdown')?.textContent).toContain(
      'Hi <img src=x onerror="alert(1)"> <script>alert(2)</script>',
    );
    expect(container.querySelector('a')?.getAttribute('href') ?? '').not.toContain('javascript');
  });

  it('ignores Part kinds it does not know', () => {
    const { container } = render(
      <MessageView
        message={reply([
          { type: 'hologram', data: 1 },
          { type: 'text', text: 'ok' },
        ])}
      />,
    );
    expect(container.querySelectorAll('.parts > *')).toHaveLength(1);
  });

  it('says when a reply was stopped or interrupted', () => {
    render(<MessageView message={reply([{ type: 'text', text: 'half' }], { status: 'interrupted' })} />);
    expect(screen.getByText(/Interrupted/)).toBeTruthy();
  });

  it('says a reply was cut at the output limit, and offers Continue on the newest Message only', () => {
    const asked: string[] = [];
    const cut = reply([{ type: 'text', text: 'The tides at six' }], { status: 'truncated' });
    const shown = (lastId: string) =>
      render(
        <ContinueContext.Provider value={{ lastId, enabled: true, go: (m) => asked.push(m.id) }}>
          <MessageView message={cut} />
        </ContinueContext.Provider>,
      );
    shown('m1');
    expect(screen.getByText(/Cut at the output limit/)).toBeTruthy();
    screen.getByRole('button', { name: 'Continue' }).click();
    expect(asked).toEqual(['m1']);
    cleanup();
    shown('a-later-message');
    expect(screen.getByText(/Cut at the output limit/)).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Continue' })).toBeNull();
  });

  it('offers Copy only when there is text to copy (a reply stopped before any has none)', () => {
    render(<MessageView message={reply([], { status: 'stopped', usage: null })} />);
    expect(screen.queryByRole('button', { name: 'Copy' })).toBeNull();
    cleanup();
    render(<MessageView message={reply([{ type: 'reasoning', text: 'thinking only' }])} />);
    expect(screen.queryByRole('button', { name: 'Copy' })).toBeNull();
    cleanup();
    render(<MessageView message={reply([{ type: 'text', text: 'words' }])} />);
    expect(screen.getByRole('button', { name: 'Copy' })).toBeTruthy();
  });
});

describe('code in a reply', () => {
  it('is highlighted when its block names the language, with a button that copies exactly the code', async () => {
    const { container } = render(
      <MessageView
        message={reply([
          {
            type: 'text',
            text: 'Try:\n\n```ts\nconst x: number = 42; // answer\n```\n\nand\n\n```\nplain text\n```',
          },
        ])}
      />,
    );
    // The highlighter is loaded on demand (the reader's bundle leaves it out): the block is coloured once it is.
    await waitFor(
      () => expect(container.querySelector('pre code .hljs-keyword')?.textContent).toBe('const'),
      {
        timeout: 10_000,
      },
    );
    const [typed, plain] = [...container.querySelectorAll('pre code')];
    expect(typed?.querySelector('.hljs-number')?.textContent).toBe('42');
    expect(typed?.textContent).toBe('const x: number = 42; // answer\n');
    // No language named: shown as it is, not guessed at.
    expect(plain?.querySelector('[class^="hljs-"]')).toBeNull();
    expect(screen.getAllByRole('button', { name: 'Copy code' })).toHaveLength(2);
  });
});

describe('who a published turn is from', () => {
  it('names the one agent, says "AI character" for several, and marks roles it does not know', () => {
    expect(speakerOf('user', '@alice.test', [{ name: 'Ada' }])).toBe('@alice.test');
    expect(speakerOf('assistant', '@alice.test', [{ name: 'Ada' }])).toBe('Ada');
    expect(speakerOf('assistant', '@alice.test', [{ name: 'Ada' }, { name: 'Bo' }])).toBe('AI character');
    expect(speakerOf('assistant', '@alice.test', undefined)).toBe('AI character');
    expect(speakerOf('narrator', '@alice.test', [{ name: 'Ada' }])).toBe('narrator (unknown role)');
  });
});
