import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { PdfPageCounter } from '../../src/attachments/estimate.ts';
import { sniffMediaType } from '../../src/attachments/index.ts';
import { readable, readersKept, readersStarted } from '../../src/attachments/page.ts';
import { foldParts } from '../../src/parts/index.ts';
import { toModelMessages, turnTokens, windowHistory } from '../../src/turn/index.ts';
import { elf, pdf, png } from '../support/files.ts';
import { until } from '../support/until.ts';

const isControl = (code: number) => (code < 0x20 && ![9, 10, 12, 13, 27].includes(code)) || code === 0x7f;

describe('sniffing', () => {
  it('knows formats by their bytes whatever the name, and text only when it is text', async () => {
    expect(await sniffMediaType(png(), 'x.txt')).toBe('image/png');
    expect(await sniffMediaType(pdf(), 'x.png')).toBe('application/pdf');
    expect(await sniffMediaType(elf(), 'x.png')).toBe('application/x-elf');
    expect(await sniffMediaType(Buffer.from('a,b\n1,2\n'), 'data.csv')).toBe('text/csv');
    expect(await sniffMediaType(Buffer.from('{"a":1}'), 'data.json')).toBe('application/json');
    expect(await sniffMediaType(Buffer.from('plain words'), 'photo.png')).toBe('text/plain');
  });

  it('any UTF-8 text without control bytes is text; text with a NUL or invalid UTF-8 is not', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.nat(), async (s, at) => {
        // Without the control bytes that are not text (tab, newlines, form feed and escape are).
        const clean = [...s].filter((c) => !isControl(c.codePointAt(0)!)).join('');
        const bytes = Buffer.from(`note: ${clean}`, 'utf8');
        // Not a magic number by chance: prefixed with words.
        expect(await sniffMediaType(bytes, 'a.txt')).toBe('text/plain');
        const withNul = Buffer.concat([
          bytes.subarray(0, at % bytes.length),
          Buffer.from([0]),
          bytes.subarray(at % bytes.length),
        ]);
        expect(await sniffMediaType(withNul, 'a.txt')).toBeUndefined();
        const invalid = Buffer.concat([bytes, Buffer.from([0xc3, 0x28, 0x41])]);
        expect(await sniffMediaType(invalid, 'a.txt')).toBeUndefined();
      }),
      { numRuns: 200 },
    );
  });

  it('a multi-byte character cut at the end of the sniffed head is still text', async () => {
    const head = Buffer.from('é'.repeat(10), 'utf8').subarray(0, 19);
    expect(await sniffMediaType(head, 'a.txt')).toBe('text/plain');
  });
});

describe('the PDF estimate', () => {
  it('is at least a page per 100 KB, whatever the page count found (pages in compressed streams are not seen)', async () => {
    const { attachmentTokens } = await import('../../src/attachments/index.ts');
    fc.assert(
      fc.property(fc.nat(50), fc.integer({ min: 1, max: 50_000_000 }), (pages, size) => {
        const tokens = attachmentTokens('application/pdf', size, pages);
        expect(tokens).toBeGreaterThanOrEqual(Math.ceil(size / 102_400) * 1600);
        expect(tokens).toBeGreaterThanOrEqual(Math.max(1, pages) * 1600);
      }),
    );
  });
});

describe('the PDF page count', () => {
  it('counts the same however the bytes are cut into chunks', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 40 }),
        (pages, cuts) => {
          const bytes = pdf(pages);
          const counter = new PdfPageCounter();
          let at = 0;
          for (const n of cuts) {
            counter.push(bytes.subarray(at, at + n));
            at += n;
          }
          counter.push(bytes.subarray(at));
          expect(counter.pages).toBe(pages);
        },
      ),
    );
  });
});

describe('readable pages', () => {
  it('keeps the article’s words and drops scripts, styles, navigation and markup', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.stringMatching(/^[a-z]{3,8}$/), { minLength: 1, maxLength: 20 }),
        async (words) => {
          const html = `<html><head><title>T &amp; U</title><script>zzscript()</script><style>p{}</style></head><body><nav>zznav</nav><main><p>${words.join(' ')}</p></main></body></html>`;
          const page = await readable(html);
          expect(page.title).toBe('T & U');
          expect(page.text).toContain(words.join(' '));
          expect(page.text).not.toMatch(/zzscript|zznav|<|p\{\}/);
        },
      ),
      { numRuns: 4 },
    );
  });

  it('a page built to be slow is read in a worker that is ended on time; one nested deep is read, not a crash', async () => {
    const deep = `<body>${'<b>'.repeat(200_000)}deep words${'</b>'.repeat(200_000)}</body>`;
    await expect(readable(deep)).resolves.toMatchObject({ text: expect.any(String) });
    const wide = `<body><table>${'<tr><td>cell</td><td>cell</td></tr>'.repeat(30_000)}</table></body>`;
    await expect(readable(wide, 50)).rejects.toThrow('took too long');
  });

  it('a page is read by a thread kept from the last one; a thread stopped for being slow is not kept', async () => {
    await readable('<p>warm</p>');
    const before = readersStarted();
    expect((await readable('<p>one</p>')).text).toBe('one');
    expect((await readable('<p>two</p>')).text).toBe('two');
    expect(readersStarted()).toBe(before);
    const wide = `<body><table>${'<tr><td>cell</td><td>cell</td></tr>'.repeat(30_000)}</table></body>`;
    await expect(readable(wide, 50)).rejects.toThrow('took too long');
    // The next page gets a fresh thread (the slow one was ended), and its own words, not the slow page's.
    expect((await readable('<p>three</p>')).text).toBe('three');
    expect(readersStarted()).toBe(before + 1);
  });
});

describe('conversion threads kept between pages are retired', () => {
  it('after 200 pages: the 201st page in a row is read by a new thread, once', async () => {
    await readable('<p>warm</p>');
    const before = readersStarted();
    for (let i = 0; i < 201; i++) expect((await readable(`<p>page ${i}</p>`)).text).toBe(`page ${i}`);
    expect(readersStarted()).toBe(before + 1);
  });

  it('after five minutes idle: the thread is ended and the next page starts another', async () => {
    await readable('<p>warm</p>');
    expect(readersKept()).toBeGreaterThan(0);
    // Faked from here only: the page above set its thread's idle timer with the real clock.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      expect((await readable('<p>kept</p>')).text).toBe('kept');
      vi.advanceTimersByTime(5 * 60_000 - 1000);
    } finally {
      vi.useRealTimers();
    }
    // Not yet: four minutes 59 seconds.
    expect(readersKept()).toBeGreaterThan(0);
    const before = readersStarted();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      expect((await readable('<p>again</p>')).text).toBe('again');
      expect(readersStarted()).toBe(before);
      vi.advanceTimersByTime(5 * 60_000 + 1000);
    } finally {
      vi.useRealTimers();
    }
    await until('the idle thread ended', async () => readersKept() === 0);
    expect((await readable('<p>fresh</p>')).text).toBe('fresh');
    expect(readersStarted()).toBe(before + 1);
  });
});

describe('attachments in the fold and the window', () => {
  const file = (id: string, name = 'a.png') =>
    ({ type: 'file', id, name, mediaType: 'image/png', size: 10, tokens: 1600 }) as const;
  const ID = '00000000-0000-4000-8000-000000000001';

  it('an attachment is added once: the same id again replaces it in place', () => {
    const parts = foldParts([
      { type: 'text', text: 'hi' },
      file(ID),
      { type: 'text', text: 'after' },
      file(ID, 'b.png'),
    ]);
    expect(parts).toEqual([{ type: 'text', text: 'hi' }, file(ID, 'b.png'), { type: 'text', text: 'after' }]);
  });

  it('the window counts each attachment at its estimate: a picture pushes old turns out', () => {
    const turn = (text: string, attachments: ReturnType<typeof file>[] = []) => ({
      role: 'player' as const,
      npcName: null,
      text,
      attachments,
    });
    expect(turnTokens(turn('abcd', [file(ID)]), false)).toBe(1 + 1600);
    const items = [turn('x'.repeat(400)), turn('look', [file(ID)])];
    expect(windowHistory(items, 1700, (t) => turnTokens(t, false)).dropped).toEqual([items[0]]);
    expect(windowHistory(items, 1800, (t) => turnTokens(t, false)).dropped).toEqual([]);
  });

  it('a turn of attachments alone is sent; one missing from what was loaded is named in a note', () => {
    const [m] = toModelMessages(
      [{ role: 'player', npcName: null, text: '', attachments: [file(ID, 'gone.png')] }],
      false,
    );
    expect(m).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: '[The Player attached gone.png (image/png), but it could not be read.]' },
      ],
    });
  });
});
