#!/usr/bin/env bash
# Runs a test script with the test environment's Python (build/venv, made by cmake/test-venv.sh,
# which `make test` runs). Without it the test is skipped (exit 77), except where
# ANATOMY_REQUIRE_TEST_VENV=1 (CI), where a missing environment is a failure.
# usage: run_in_venv.sh VENV SCRIPT [ARGS...]
set -euo pipefail
venv=$1
shift
if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.requirements" ]; then
  echo "the test environment $venv is missing: run cmake/test-venv.sh (make test does)"
  [ "${ANATOMY_REQUIRE_TEST_VENV:-0}" = 1 ] && exit 1
  exit 77
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1  # nothing downloads while testing
exec "$venv/bin/python" "$@"
