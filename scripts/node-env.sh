# Sourced by scripts/setup.sh, scripts/test.sh and .ci/run: puts a Node.js >= 22 first on PATH.
# Uses the machine's node when it is new enough; otherwise the workplace's Node 24 bootstrap
# (../shared/tools/node24-bin, which installs the official binary from the npm registry).
lexec_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lexec_node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$lexec_node_major" -lt 22 ]; then
  if [ -x "$lexec_root/../shared/tools/node24-bin" ]; then
    PATH="$("$lexec_root/../shared/tools/node24-bin"):$PATH"
    export PATH
  else
    echo "lexec needs Node.js >= 22 (24 LTS recommended); found $(node --version 2>/dev/null || echo 'no node'). Install it and run again." >&2
    exit 1
  fi
fi
unset lexec_node_major
