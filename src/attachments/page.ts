import { convert } from 'html-to-text';
import { AppError } from '../http/index.ts';
import type { Outbound } from '../outbound/index.ts';

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
export async function fetchPage(outbound: Outbound, url: URL, limits = PAGE_LIMITS): Promise<Page> {
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
      415,
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
  const page = HTML.test(type) ? readable(body) : { text: body };
  const text = clip(page.text.trim(), limits.maxChars);
  if (!text) throw new AppError(422, 'PAGE_EMPTY', `The page at ${url.host} has no readable text.`);
  return { url: res.url || url.href, ...(page.title ? { title: page.title } : {}), text };
}

/** HTML as readable text and its title. Pure. */
export function readable(html: string): { title?: string; text: string } {
  const titleHtml = html.slice(0, 65_536).match(/<title[^>]*>([\s\S]*?)<\/title>/i)?.[1];
  const title = titleHtml
    ? convert(titleHtml, { wordwrap: false }).replace(/\s+/g, ' ').trim().slice(0, 300)
    : '';
  const text = convert(html, {
    wordwrap: false,
    baseElements: { selectors: ['article', 'main', 'body'], orderBy: 'selectors', returnDomByDefault: true },
    limits: { maxBaseElements: 1, maxInputLength: 4_000_000 },
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
      ...[
        'nav',
        'header',
        'footer',
        'aside',
        'form',
        'button',
        'svg',
        'script',
        'style',
        'noscript',
        'iframe',
      ].map((selector) => ({ selector, format: 'skip' })),
    ],
  });
  return { ...(title ? { title } : {}), text };
}

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
  new AppError(502, 'PAGE_UNREACHABLE', `The page at ${url.host} could not be attached: ${why}.`);
