// The flags Node runs the server with (ADR 0079): AsyncLocalStorage on AsyncContextFrame, Node 24's default,
// behind a flag on Node 22 and 23 (which Node 24 refuses). Without it every promise of the process, on every
// delta's path, runs async_hooks' promise hooks.
// `node scripts/node-flags.mjs` prints them for a command line; the tests and the bench import `nodeFlags`.

/** @returns {string[]} */
export function nodeFlags() {
  return Number(process.versions.node.split('.')[0]) < 24 ? ['--experimental-async-context-frame'] : [];
}

if (import.meta.filename === process.argv[1]) console.log(nodeFlags().join(' '));
