#!/usr/bin/env bash
# The README's test command: typecheck, lint and the whole vitest suite on a fresh build.
#
# The Temporal tests run the real Temporal server (`temporal server start-dev`). The pinned CLI is
# taken from LEXEC_TEMPORAL_CLI when set; otherwise, where Go is installed, the workplace tool
# ../shared/tools/temporal-cli-bin builds it once (minutes; cached) and prints its path. Without
# either, the Temporal tests skip with the one line below — except in CI (CI=true), where a
# missing Temporal CLI fails the run.
set -euo pipefail
source "$(dirname "$0")/node-env.sh"
cd "$lexec_root"
if [ -z "${LEXEC_TEMPORAL_CLI:-}" ]; then
  tool="$lexec_root/../shared/tools/temporal-cli-bin"
  if [ -x "$tool" ] && { command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; }; then
    LEXEC_TEMPORAL_CLI="$(PATH="$PATH:/usr/local/go/bin" "$tool")"
    export LEXEC_TEMPORAL_CLI
  fi
fi
if [ -z "${LEXEC_TEMPORAL_CLI:-}" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "test: the Temporal CLI is required in CI: set LEXEC_TEMPORAL_CLI, or install Go so that ../shared/tools/temporal-cli-bin can build it" >&2
    exit 1
  fi
  echo "test: Temporal tests skipped — install the Temporal CLI 1.5.1 (https://docs.temporal.io/cli) and set LEXEC_TEMPORAL_CLI=/path/to/temporal, or install Go" >&2
else
  echo "test: Temporal CLI $LEXEC_TEMPORAL_CLI" >&2
fi
if [ ! -x "${LEXEC_CHROMIUM:-/usr/bin/chromium}" ] && [ "${CI:-}" != "true" ]; then
  echo "test: console browser tests skipped — install Chromium (apt-get install chromium) or set LEXEC_CHROMIUM=/path/to/chromium" >&2
fi
# The cross-host proofs build network namespaces (test/support/netns.ts): root and iproute2's `ip`.
# Without them they skip with this one line — except in CI, which runs as root, where they fail.
netns_probe="lx-$$-probe"
if PATH="$PATH:/usr/sbin:/sbin" ip netns add "$netns_probe" 2>/dev/null; then
  PATH="$PATH:/usr/sbin:/sbin" ip netns del "$netns_probe"
elif [ "${CI:-}" = "true" ]; then
  echo "test: CI needs network namespaces for the cross-host proofs: run as root (CAP_NET_ADMIN and CAP_SYS_ADMIN) with iproute2's ip" >&2
  exit 1
else
  echo "test: network-namespace tests skipped — they need root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2 \`ip\`" >&2
fi
npm test
