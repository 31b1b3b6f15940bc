#!/bin/sh
# Rewrites the session files here from a fresh print/JSON/RPC run of `arbor` against the mock
# server, and each <name>.pi.json from pi 1.6.0's projection of it (shared/tools/ref-context.mjs).
# Needs node and pi (PI_PKG, or `sh /work/shared/tools/setup.sh`). Review the diff before committing.
set -eu
cd "$(dirname "$0")/../../../../.."
rm -f crates/coding-agent/tests/data/pi-open/*.jsonl crates/coding-agent/tests/data/pi-open/*.pi.json
ARBOR_REGENERATE_PI_OPEN=1 cargo test -p arbor-coding-agent --test all \
  suite::pi_open:: -- --nocapture 2>&1 | tail -3
ls -l crates/coding-agent/tests/data/pi-open/
