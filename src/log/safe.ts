/**
 * What an error may say in a log: its name, a bounded message and stack, a code and a status — never its other
 * properties. An AI SDK APICallError carries the prompt (requestBodyValues) and the response; a postgres.js error
 * the statement's parameters; an OAuth error the token response. None of those is logged.
 */
export function safeError(e: unknown, depth = 0): Record<string, unknown> {
  if (!(e instanceof Error)) return { type: typeof e };
  const o = e as Error & { code?: unknown; status?: unknown; statusCode?: unknown; cause?: unknown };
  return {
    type: o.name,
    message: scrub(String(o.message)).slice(0, 500),
    code: primitive(o.code),
    status: primitive(o.status ?? o.statusCode),
    stack: o.stack ? scrub(o.stack).slice(0, 4000) : undefined,
    cause: depth < 3 && o.cause !== undefined ? safeError(o.cause, depth + 1) : undefined,
  };
}

const primitive = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? v : undefined);

// Credentials that can end up inside a string (an error message quoting a header, a URL with a code): a JWT, an
// Authorization or DPoP value, our session cookie, an OAuth code or token parameter.
const SECRETS: [RegExp, string][] = [
  [/eyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]*/g, '[jwt]'],
  [/\b(Bearer|DPoP|Basic)\s+[\w~+/.=-]+/gi, '$1 [redacted]'],
  [/(av_session=)[^;\s&]+/g, '$1[redacted]'],
  [/([?&](?:code|state|iss|access_token|refresh_token|token|key)=)[^&\s#]+/gi, '$1[redacted]'],
  [/\b(sk-[\w-]{8,})/g, '[key]'],
];

/** A string with any credential it carries replaced. */
export function scrub(s: string): string {
  let out = s;
  for (const [pattern, replacement] of SECRETS) out = out.replace(pattern, replacement);
  return out;
}
