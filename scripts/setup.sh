#!/usr/bin/env bash
# The README's first command: install lexec from the lockfile (which builds it), then run the
# main job. Until the launcher lands, the main job shows the build and validates the shipped
# executor configuration example.
set -euo pipefail
source "$(dirname "$0")/node-env.sh"
cd "$lexec_root"
npm ci --no-audit --no-fund
npx lexec version
npx lexec executor validate-config --config "$lexec_root/templates/executor.example.json"
npx lexec --help
