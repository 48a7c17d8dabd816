/**
 * The words of a Markdown line without its marks, for a title: `*so*`, `**so**`, `_so_`, `~~so~~` and `` `so` ``
 * lose their marks, a link or picture keeps its text, and a heading, quote or list marker at a line's start
 * goes. Marks inside words (snake_case) and lone ones (`2 * 3`) stay. Pure.
 */
export function stripMarkdown(text: string): string {
  return text
    .replace(/!?\[([^\]\n]*)\]\([^)\n]*\)/g, '$1')
    .replace(/^[ \t]{0,3}(?:#{1,6}|>+|[-*+]|\d{1,9}[.)])[ \t]+/gm, '')
    .replace(/(`+)([^`\n]+?)\1/g, '$2')
    .replace(/(^|[^\p{L}\p{N}*_~])([*_~]+)(?=[^\s*_~])/gu, '$1')
    .replace(/([^\s*_~])[*_~]+(?=$|[^\p{L}\p{N}*_~])/gmu, '$1');
}
