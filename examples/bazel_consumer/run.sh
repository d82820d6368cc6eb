#!/usr/bin/env bash
# Builds and runs the consumer programs from a fresh, throwaway output base,
# as a clean checkout of a dependent project would; extra arguments go to the
# C++ program. Exits non-zero when either program fails.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
output_base="$(mktemp -d "${TMPDIR:-/tmp}/quadrants-consumer.XXXXXX")"
cleanup() {
  bazel --output_base="$output_base" shutdown >/dev/null 2>&1 || true
  # Bazel leaves its outputs read-only.
  chmod -R u+w "$output_base" 2>/dev/null || true
  rm -rf "$output_base"
}
trap cleanup EXIT

# No bazel-* links: they would point into the deleted output base.
bazel --output_base="$output_base" run --symlink_prefix=/ //:py_check
bazel --output_base="$output_base" run --symlink_prefix=/ //:sin_power -- "$@"
