/** The flags Node runs the server with (node-flags.mjs, ADR 0079). */
export function nodeFlags(): string[];
