// Runs in a worker thread (page.ts): turning a hostile page into text can take seconds of CPU, and must not
// take them from the server's event loop.
import { parentPort } from 'node:worker_threads';
import { convert } from 'html-to-text';

// Ready once loaded (a busy machine takes a while to start a thread); then one page per message, for as long as
// the pool keeps this thread (page.ts): a thread ended for being slow is never given another page.
parentPort!.postMessage('ready');
parentPort!.on('message', (page: string) => parentPort!.postMessage(readableNow(page)));

/** HTML as readable text and its title: the article or main content, no scripts, navigation, images or forms. */
function readableNow(page: string): { title?: string; text: string } {
  const open = page.slice(0, 65_536).search(/<title[\s>]/i);
  const from = open === -1 ? -1 : page.indexOf('>', open);
  const to = from === -1 ? -1 : page.toLowerCase().indexOf('</title>', from);
  const titleHtml = from !== -1 && to !== -1 && to - from < 4000 ? page.slice(from + 1, to) : '';
  const title = titleHtml
    ? convert(titleHtml, { wordwrap: false }).replace(/\s+/g, ' ').trim().slice(0, 300)
    : '';
  const text = convert(page, {
    wordwrap: false,
    baseElements: { selectors: ['article', 'main', 'body'], orderBy: 'selectors', returnDomByDefault: true },
    limits: { maxBaseElements: 1, maxDepth: 64, maxChildNodes: 5000, maxInputLength: 1_048_576 },
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
