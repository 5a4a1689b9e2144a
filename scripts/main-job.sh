#!/usr/bin/env bash
# The main job: start the selected profile's local stack (the first start creates the `sandbox`
# profile from profiles.example/sandbox.toml under $LEXEC_HOME, default ~/.lexec) and run one
# real sandbox generation end to end with `lexec run`. The stack keeps running afterwards:
# `npx lexec stack status` shows it, `npx lexec stack stop` stops it.
#
#   bash scripts/main-job.sh [prompt] [lexec run flags…]   e.g. --count 2 --size square --out DIR
# Images go to ./lexec-output unless --out says otherwise.
set -euo pipefail
source "$(dirname "$0")/node-env.sh"
cd "$lexec_root"
prompt="a lighthouse on a cliff at dusk"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  prompt="$1"
  shift
fi
# The start's summary is progress here: this script's result (stdout) is the run's.
node bin/run.js stack start >&2
node bin/run.js run "$prompt" "$@"
echo "The stack is still running: \`npx lexec stack status\` shows it, \`npx lexec stack stop\` stops it." >&2
