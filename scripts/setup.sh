#!/usr/bin/env bash
# The README's first command: install lexec from the lockfile (which builds it), then the main
# job (scripts/main-job.sh): `lexec stack start` brings up the sandbox stack (ledger, executor,
# sandbox provider under a supervisor) and `lexec run` executes one real sandbox generation end
# to end, saving the images in ./lexec-output and printing exactly what was spent.
set -euo pipefail
source "$(dirname "$0")/node-env.sh"
cd "$lexec_root"
npm ci --no-audit --no-fund
bash scripts/main-job.sh "$@"
