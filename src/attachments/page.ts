import { Worker } from 'node:worker_threads';
import { AppError } from '../http/index.ts';
import type { Outbound } from '../outbound/index.ts';
import { plainName, wellFormed } from '../parts/index.ts';
import { FairSlots } from '../slots/index.ts';

/** A page is fetched once, within these bounds, and kept as text no longer than this. */
export const PAGE_LIMITS = { maxBytes: 2 * 1024 * 1024, timeoutMs: 15_000, maxChars: 200_000 };

export interface Page {
  url: string;
  title?: string;
  text: string;
}

const HTML = /^(text\/html|application\/xhtml\+xml)\b/i;
const TEXT = /^(text\/plain|text\/markdown)\b/i;

/**
 * A page's readable text, fetched through the outbound client (the address policy, a time and a byte limit hold on
 * every redirect hop): HTML becomes text (the article or main content when the page marks one; no scripts,
 * navigation, images or forms), plain text is kept. Anything else is refused: a picture or a PDF is attached as a
 * file instead.
 */
export async function fetchPage(
  outbound: Outbound,
  url: URL,
  /** Whose page it is (the Player): conversions are shared fairly between Players. */
  player: string,
  limits = PAGE_LIMITS,
): Promise<Page> {
  let res: Response;
  try {
    res = await outbound.fetch({ maxBytes: limits.maxBytes, timeoutMs: limits.timeoutMs })(url, {
      headers: { accept: 'text/html, text/plain;q=0.9, */*;q=0.1' },
      redirect: 'follow',
    });
  } catch (e) {
    throw unreachable(url, describe(e));
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw unreachable(url, `it answered ${res.status}`);
  }
  const type = res.headers.get('content-type') ?? '';
  if (!HTML.test(type) && !TEXT.test(type)) {
    await res.body?.cancel();
    throw new AppError(
      'PAGE_NOT_TEXT',
      `${url.host} sent ${type.split(';')[0] || 'something'} rather than a page. Download it and attach it as a file.`,
    );
  }
  let body: string;
  try {
    body = decode(new Uint8Array(await res.arrayBuffer()), type);
  } catch (e) {
    throw unreachable(url, describe(e));
  }
  // Each conversion is a worker thread of its own (up to 128 MB): a few at a time for the whole instance, shared
  // fairly between Players (a Player's many pages wait behind another's one), a bounded line behind them.
  let page: { title?: string; text: string };
  try {
    page = HTML.test(type)
      ? await reading.run(player, (signal) => readable(body, READ_MS, signal))
      : { text: body };
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw new AppError(
      'PAGE_UNREADABLE',
      `The page at ${url.host} could not be turned into text: ${(e as Error).message}.`,
    );
  }
  const text = clip(page.text.trim(), limits.maxChars);
  if (!text) throw new AppError('PAGE_EMPTY', `The page at ${url.host} has no readable text.`);
  // Stored and shown: made storable, one line, no control or bidi characters.
  const title = page.title ? plainName(wellFormed(page.title)) : '';
  return { url: res.url || url.href, ...(title ? { title } : {}), text: wellFormed(text) };
}

/**
 * HTML as readable text and its title, converted in a worker thread of its own: a page built to be slow (deep
 * nesting, huge tables) costs that thread, which is ended after `timeoutMs`, never the server's event loop. At
 * most the first MB of the page is read.
 */
export async function readable(
  html: string,
  timeoutMs = READ_MS,
  signal?: AbortSignal,
): Promise<{ title?: string; text: string }> {
  const tooLong = () => new Error('the page took too long to read');
  if (signal?.aborted) throw tooLong();
  const worker = idle.pop() ?? (await startReader(signal));
  clearTimeout(worker.idleTimer);
  worker.thread.ref();
  return new Promise((resolve, reject) => {
    const end = (e: Error) => {
      worker.failed = undefined;
      worker.thread.off('message', done);
      signal?.removeEventListener('abort', stop);
      clearTimeout(timer);
      // A thread that was stopped or failed mid-page is never given another.
      void worker.thread.terminate();
      reject(e);
    };
    const stop = () => end(tooLong());
    const timer = setTimeout(stop, timeoutMs);
    signal?.addEventListener('abort', stop, { once: true });
    worker.failed = (e) => end(e);
    const done = (page: { title?: string; text: string }) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
      worker.failed = undefined;
      release(worker);
      resolve(page);
    };
    worker.thread.once('message', done);
    worker.thread.postMessage(html.slice(0, 1_048_576));
  });
}

/** A conversion thread, started once and given one page after another. */
interface Reader {
  thread: Worker;
  pages: number;
  /** Set while it converts a page: how a crash (out of memory) reaches that page's caller. */
  failed?: (e: Error) => void;
  idleTimer?: NodeJS.Timeout;
}

/**
 * Threads kept between conversions: starting one loads the converter (seconds of CPU on a busy machine, which every
 * page paid before). At most one per conversion slot, each retired after a while idle or many pages.
 */
const idle: Reader[] = [];
const IDLE_MS = 5 * 60_000;
const PAGES_PER_THREAD = 200;
let started = 0;
/** How many conversion threads were started (for tests: a second page reuses the first's). */
export const readersStarted = () => started;
/** How many are kept, waiting for a page (for tests: one idle too long is ended). */
export const readersKept = () => idle.length;

function startReader(signal?: AbortSignal): Promise<Reader> {
  return new Promise((resolve, reject) => {
    started++;
    const thread = new Worker(WORKER, {
      // The server may run without tsx's hooks in this thread's parent (tests): the worker loads them itself.
      execArgv: ['--import', 'tsx'],
      resourceLimits: { maxOldGenerationSizeMb: 128, stackSizeMb: 4 },
    });
    const reader: Reader = { thread, pages: 0 };
    const fail = (e: Error) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
      void thread.terminate();
      reject(e);
    };
    const stop = () => fail(new Error('the page took too long to read'));
    // The thread's start is bounded on its own: the conversion's limit counts the conversion only.
    const timer = setTimeout(stop, START_MS);
    signal?.addEventListener('abort', stop, { once: true });
    thread.once('message', () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
      thread.off('error', fail);
      resolve(reader);
    });
    thread.once('error', fail);
    thread.on('error', (e) => reader.failed?.(e));
    thread.once('exit', () => {
      retire(reader);
      reader.failed?.(new Error('the page could not be read'));
    });
  });
}

function release(reader: Reader): void {
  reader.pages++;
  if (reader.pages >= PAGES_PER_THREAD || idle.length >= MAX_READING) {
    void reader.thread.terminate();
    return;
  }
  reader.thread.unref();
  reader.idleTimer = setTimeout(() => void reader.thread.terminate(), IDLE_MS).unref();
  idle.push(reader);
}

function retire(reader: Reader): void {
  clearTimeout(reader.idleTimer);
  const at = idle.indexOf(reader);
  if (at !== -1) idle.splice(at, 1);
}

const WORKER = new URL('./readable.ts', import.meta.url);
/** The longest one page's conversion may take, and its thread's start before it. */
const READ_MS = 5000;
const START_MS = 30_000;
/**
 * Pages converted at once on this instance: one Player's at most two, and the third kept for a Player converting
 * none, so another's long line of slow pages never holds up a Player's one page for more than one conversion.
 */
export const MAX_READING = 3;
export const MAX_READING_PER_PLAYER = 2;
const reading = new FairSlots({
  capacity: MAX_READING,
  perPlayer: MAX_READING_PER_PLAYER,
  reserve: 1,
  queuePerPlayer: 8,
  // A page waits at most a few conversions' time, each bounded by READ_MS.
  waitMs: 20_000,
  holdMs: START_MS + READ_MS,
  messages: {
    queueFull: 'You have many pages being read already. Try again when they are attached.',
    busy: 'Many pages are being read right now. Try again in a moment.',
  },
});
/** How many conversions run now, in all and for one Player (for tests). */
export const readingNow = () => reading.held;
export const readingBy = (player: string) => reading.heldBy(player);

function decode(bytes: Uint8Array, contentType: string): string {
  const charset = contentType.match(/charset="?([\w-]+)/i)?.[1] ?? 'utf-8';
  try {
    return new TextDecoder(charset).decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n\n[…the rest of the page was cut]`;
}

function describe(e: unknown): string {
  const cause = (e as { cause?: { message?: string } })?.cause?.message ?? (e as Error)?.message ?? '';
  if (/not a public address|does not resolve|private/i.test(cause)) return 'it is not a public address';
  if (/timed? ?out|abort/i.test(cause)) return 'it did not answer in time';
  if (/too large|max(imum)? size|length/i.test(cause)) return 'the page is larger than 2 MB';
  return 'it could not be reached';
}

const unreachable = (url: URL, why: string) =>
  new AppError('PAGE_UNREACHABLE', `The page at ${url.host} could not be attached: ${why}.`);
