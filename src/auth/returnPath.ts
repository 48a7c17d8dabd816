/**
 * Where a Player goes back to after signing in (the page they were on when their session ended). Only a path on
 * this site is ever followed: it starts with one `/`, holds no backslash or control character (browsers read
 * `/\evil.example` and `//evil.example` as other hosts), and resolves to this origin. The sign-in routes are no
 * destination. Pure: the answer is the path as re-serialised by the URL parser, or null.
 */
export const MAX_RETURN_PATH = 2000;
const BASE = 'https://agentsville.invalid';

export function returnPath(input: string): string | null {
  if (input.length === 0 || input.length > MAX_RETURN_PATH) return null;
  if (!input.startsWith('/') || input.startsWith('//')) return null;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\\\u0000-\u001f\u007f]/.test(input)) return null;
  let url: URL;
  try {
    url = new URL(input, BASE);
  } catch {
    return null;
  }
  if (url.origin !== BASE) return null;
  if (/^\/(api|oauth|xrpc)(\/|$)/.test(url.pathname)) return null;
  const path = `${url.pathname}${url.search}${url.hash}`;
  // Dot segments can fold into a leading `//` (`/..//evil.example`), which a browser reads as another host.
  return path.startsWith('//') ? null : path;
}
