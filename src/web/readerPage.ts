import { escapeHtml } from '../http/index.ts';

/** What a reading page says about itself in its head: title, link-card tags, its addresses and feeds. */
export interface PageMeta {
  title: string;
  description: string;
  /** The page's one address (by DID for a thread: a handle can move). */
  canonical: string;
  /** A thread's record, as an at:// URI. */
  atUri?: string;
  /** The author's (or everyone's) Atom feed. */
  feed: string;
  /** A thread's link-card picture (absolute). */
  image?: string;
}

/** The built reader bundle's files (from Vite's manifest); none when the client is not built. */
export interface ReaderAssets {
  script?: string;
  styles: string[];
  preload: string[];
}

/**
 * JSON inside `<script type="application/json">`: `<`, `>` and `&` as \u escapes, so no `</script>` or
 * `<!--` in any published text can end the block or open markup; U+2028/9 too, for older parsers.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function headTags(meta: PageMeta): string[] {
  const e = escapeHtml;
  const tags = [
    `<title>${e(meta.title)} · AgentsVille</title>`,
    `<meta name="description" content="${e(meta.description)}">`,
    `<meta property="og:type" content="${meta.atUri ? 'article' : 'website'}">`,
    `<meta property="og:title" content="${e(meta.title)}">`,
    `<meta property="og:description" content="${e(meta.description)}">`,
    `<meta property="og:url" content="${e(meta.canonical)}">`,
    `<meta property="og:site_name" content="AgentsVille">`,
    `<meta name="twitter:title" content="${e(meta.title)}">`,
    `<meta name="twitter:description" content="${e(meta.description)}">`,
    `<link rel="canonical" href="${e(meta.canonical)}">`,
    `<link rel="alternate" type="application/atom+xml" title="Published conversations" href="${e(meta.feed)}">`,
  ];
  if (meta.atUri) tags.push(`<link rel="alternate" href="${e(meta.atUri)}">`);
  tags.push(
    ...(meta.image
      ? [
          `<meta property="og:image" content="${e(meta.image)}">`,
          `<meta property="og:image:width" content="1200">`,
          `<meta property="og:image:height" content="630">`,
          `<meta property="og:image:alt" content="${e(meta.title)}">`,
          `<meta name="twitter:card" content="summary_large_image">`,
        ]
      : [`<meta name="twitter:card" content="summary">`]),
  );
  return tags;
}

/**
 * A whole reading page: the server-rendered tree in #root, the data its script hydrates from (inert JSON, so the
 * Content-Security-Policy needs no nonce: `script-src 'self'` runs only the bundle's own file), and the reader
 * bundle. `body` is React's output (escaped by React); every other value is escaped here.
 */
export function readerPage(opts: {
  meta: PageMeta;
  body: string;
  data?: unknown;
  assets: ReaderAssets;
}): string {
  const { meta, assets } = opts;
  const e = escapeHtml;
  const head = [
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<link rel="icon" type="image/svg+xml" href="/favicon.svg">',
    ...headTags(meta),
    ...assets.styles.map((href) => `<link rel="stylesheet" href="${e(href)}">`),
    // With no data there is nothing to hydrate (an error page): no script at all.
    ...(opts.data !== undefined && assets.script
      ? [
          ...assets.preload.map((href) => `<link rel="modulepreload" href="${e(href)}">`),
          `<script type="module" src="${e(assets.script)}"></script>`,
        ]
      : []),
  ];
  return `<!doctype html>
<html lang="en">
<head>
${head.join('\n')}
</head>
<body>
<div class="reader">
<header class="reader-header"><a href="/" class="brand">AgentsVille</a><nav aria-label="Reader"><a href="/threads">All published conversations</a></nav></header>
<main id="main"><div id="root">${opts.body}</div></main>
</div>
${opts.data === undefined ? '' : `<script type="application/json" id="reader-data">${jsonForScript(opts.data)}</script>\n`}</body>
</html>
`;
}
