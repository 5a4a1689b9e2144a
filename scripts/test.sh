#!/usr/bin/env bash
# The README's test command: typecheck, lint and the whole vitest suite on a fresh build.
set -euo pipefail
source "$(dirname "$0")/node-env.sh"
cd "$lexec_root"
npm test
