/**
 * Macros as SillyTavern expands them in a character card's text (Character Card V2 spec: `{{char}}` and
 * `<BOT>` are the character's name, `{{user}}` and `<USER>` the user's; `{{original}}`, only in a card's system
 * prompt and post-history instructions, what the front-end would have used there). One pass, left to right, so
 * a name that itself reads "{{user}}" is never expanded again. A macro this does not know is taken out of the
 * text and reported, never sent silently to a Model: the editor shows the list (see `unknownMacros`).
 */
export interface MacroContext {
  char: string;
  user: string;
  /** What `{{original}}` stands for; left undefined where the spec gives it no meaning (it is then unknown). */
  original?: string;
}

const MACRO = /\{\{([^{}]{0,200})\}\}|<BOT>|<USER>/gi;

function known(name: string, ctx: MacroContext): string | undefined {
  const key = name.trim().toLowerCase();
  if (key === 'char' || key === '<bot>' || key === 'charifnotgroup') return ctx.char;
  if (key === 'user' || key === '<user>') return ctx.user;
  if (key === 'original') return ctx.original;
  if (key === 'newline') return '\n';
  // {{// a comment}} and {{noop}} are SillyTavern's ways of writing nothing.
  if (key === 'noop' || key.startsWith('//')) return '';
  return undefined;
}

export function expandMacros(text: string, ctx: MacroContext): { text: string; unknown: string[] } {
  const unknown = new Set<string>();
  const out = text.replace(MACRO, (whole, inner: string | undefined) => {
    const value = known(inner ?? whole, ctx);
    if (value !== undefined) return value;
    unknown.add(whole);
    return '';
  });
  return { text: out, unknown: [...unknown] };
}

/** The macros in `text` no prompt would expand, as written (`{{original}}` counts as known where allowed). */
export function unknownMacros(text: string, originalAllowed = false): string[] {
  return expandMacros(text, { char: '', user: '', original: originalAllowed ? '' : undefined }).unknown;
}
