#!/usr/bin/env bash
# Checks here (as root) that .gpu_bundle/ is self-contained: copies the
# working tree's files and the bundle to a temporary directory, then runs
# `tools/gpu_suite.sh run` there with an empty environment, in a private
# mount namespace where this machine's Python, LLVM and CUDA toolkit are
# hidden and /usr/lib/x86_64-linux-gnu holds only glibc, libstdc++, libgcc_s
# and what bash and the coreutils need (what any distribution has).
#
#   tools/gpu_suite_selftest.sh [pytest args]    # default: the whole suite, cpu
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -f "$ROOT/.gpu_bundle/runtime.tar.xz" ] || { echo "no bundle: tools/gpu_suite.sh pack" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "needs root (unshare -m, mount)" >&2; exit 1; }

work="$(mktemp -d /tmp/gpu_suite_selftest.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo" "$work/lib"
(cd "$ROOT" && git ls-files -co --exclude-standard -z | tar --null -T - -cf - .gpu_bundle) |
  tar -C "$work/repo" -xf -

# The libraries the shell tools `run` uses need; nothing else survives.
tools=(bash env cat cp rm mv mkdir dirname realpath du cut sort head tail date
       diff grep sed find tar xz id mktemp)
for t in "${tools[@]}"; do ldd "$(command -v "$t")"; done |
  awk '/=> \// { print $3 } /^\t\/lib64\// { print $1 }' | sort -u |
  while read -r lib; do cp -L "$lib" "$work/lib/$(basename "$lib")"; done
cp -a /usr/lib/x86_64-linux-gnu/libstdc++.so.6* /usr/lib/x86_64-linux-gnu/libgcc_s.so.1 \
  /usr/lib/x86_64-linux-gnu/gconv "$work/lib/"
echo "selftest: system libraries left visible: $(ls "$work/lib" | tr '\n' ' ')"

# An empty python3 on PATH, as a stand-in for a foreign interpreter.
hide=(/usr/lib/python3 /usr/lib/python3.11 /usr/local/lib/python3.11 /usr/lib/llvm-19
      /usr/local/cuda-13.0 /usr/include)
args=("$@")
unshare -m bash -s -- "$work" "${args[@]}" <<'NS'
set -euo pipefail
work="$1"; shift
mount --make-rprivate /
for dir in /usr/lib/python3 /usr/lib/python3.11 /usr/local/lib/python3.11 /usr/lib/llvm-19 /usr/local/cuda-13.0; do
  [ -d "$dir" ] && mount -t tmpfs none "$dir"
done
for bin in /usr/bin/python3 /usr/bin/python3.11; do
  [ -e "$bin" ] && mount --bind /dev/null "$bin"
done
mount --bind "$work/lib" /usr/lib/x86_64-linux-gnu
cd "$work/repo"
start=$SECONDS
rc=0
env -i PATH=/usr/bin:/bin HOME="$work" QD_WANTED_ARCHS="${QD_WANTED_ARCHS:-cpu}" \
  tools/gpu_suite.sh run "$@" || rc=$?
echo "selftest: wall time $((SECONDS - start)) s, exit status $rc"
exit "$rc"
NS
