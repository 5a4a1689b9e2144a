#!/usr/bin/env bash
# The README's first command: install lexec from the lockfile (which builds it), then the main
# job: a sandbox stack (ledger, sandbox provider, executor as real processes) executes one real
# generation end to end and saves the images in ./lexec-demo-output. The launcher
# (`lexec stack start` + `lexec run`) will take this over.
set -euo pipefail
source "$(dirname "$0")/node-env.sh"
cd "$lexec_root"
npm ci --no-audit --no-fund
node scripts/sandbox-demo.mjs "$@"
