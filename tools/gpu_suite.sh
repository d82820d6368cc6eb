#!/usr/bin/env bash
# Runs the Python test suite (or a script) on a GPU machine that is unlike
# this one: another distribution, another Python, none of our Debian
# packages. `pack` (here) builds and writes .gpu_bundle/ (ignored, at most
# 64 MiB): Debian's Python 3.11 with numpy and pytest, our extension and the
# shared libraries it needs that such a machine lacks, large files
# xz-compressed. `run` (there, from a copy of the working tree holding the
# bundle) unpacks once and runs the suite with the bundled interpreter,
# isolated from the machine's own Python.
#
#   tools/gpu_suite.sh pack
#   tools/gpu_suite.sh update-core                # after a rebuild
#   tools/gpu_suite.sh run [pytest args]          # QD_WANTED_ARCHS=cuda
#   tools/gpu_suite.sh python script.py [args]    # any script, bundled Python
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUNDLE=.gpu_bundle
DEB_CACHE="${QD_DEB_CACHE:-$HOME/.cache/quadrants/debs}"
CORE=bazel-bin/quadrants/python/quadrants/_quadrants_core.so
# Debian packages of the interpreter, numpy (with its reference BLAS/LAPACK)
# and pytest.
PYTHON_PACKAGES=(
  python3.11-minimal libpython3.11-minimal libpython3.11-stdlib
  python3-numpy libblas3 liblapack3 libgfortran5 libquadmath0
  python3-pytest python3-pluggy python3-iniconfig python3-packaging
  python3-py python3-attr python3-more-itertools
)
# Libraries every glibc distribution has (newer is compatible); the rest of
# what the extension loads is bundled. libxml2 comes from the target too:
# Debian's build needs ICU 72, which the target would lack.
SYSTEM_LIBS='^(linux-vdso|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux-x86-64|libz|libzstd|liblzma|libffi|libtinfo|libexpat|libxml2|libicuuc|libicudata)\.so'
# Parts of the stdlib and numpy the suite never imports.
TRIM=(
  usr/share usr/lib/python3.11/test usr/lib/python3.11/idlelib
  usr/lib/python3.11/tkinter usr/lib/python3.11/ensurepip
  usr/lib/python3.11/lib2to3 usr/lib/python3.11/pydoc_data
  usr/lib/python3.11/turtledemo
)

die() { echo "gpu_suite: $*" >&2; exit 1; }

download_debs() {
  mkdir -p "$DEB_CACHE"
  local missing=()
  for pkg in "${PYTHON_PACKAGES[@]}"; do
    compgen -G "$DEB_CACHE/${pkg}_*.deb" >/dev/null || missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && return
  (cd "$DEB_CACHE" && apt-get download "${missing[@]}") ||
    { apt-get update -q >&2 && (cd "$DEB_CACHE" && apt-get download "${missing[@]}"); }
}

bundle_libraries() {
  ldd "$CORE" | awk '/=> \// { print $1, $3 }' | grep -vE "$SYSTEM_LIBS" |
    while read -r name path; do cp -L "$path" "$BUNDLE/lib/$name"; done
  for lib in "$BUNDLE"/lib/*; do
    [ "$(stat -c %s "$lib")" -gt 2000000 ] && xz -T0 -9 "$lib"
  done
  return 0
}

pack() {
  bazel build //quadrants/python:all >&2
  [ -f "$CORE" ] || die "$CORE was not built"
  download_debs
  rm -rf "$BUNDLE"
  mkdir -p "$BUNDLE/root" "$BUNDLE/lib"
  for deb in "$DEB_CACHE"/*.deb; do dpkg -x "$deb" "$BUNDLE/root"; done
  for dir in "${TRIM[@]}"; do rm -rf "${BUNDLE:?}/root/$dir"; done
  find "$BUNDLE/root" -type d \( -name tests -o -name __pycache__ \) -prune \
    -exec rm -rf {} +
  cp -L "$CORE" "$BUNDLE/"
  bundle_libraries
  tar -C "$BUNDLE" -cf - root | xz -T0 -9 > "$BUNDLE/root.tar.xz"
  rm -rf "${BUNDLE:?}/root"
  du -sh "$BUNDLE"
  local bytes; bytes=$(du -sb "$BUNDLE" | cut -f1)
  [ "$bytes" -le $((64 * 1024 * 1024)) ] || die "bundle is $bytes bytes (> 64 MiB)"
}

# Unpacks what is compressed, once, and sets up the isolated interpreter.
prepare() {
  [ -f "$BUNDLE/root.tar.xz" ] || die "no bundle: run 'tools/gpu_suite.sh pack' first"
  [ -d "$BUNDLE/root" ] || xz -dc "$BUNDLE/root.tar.xz" | tar -C "$BUNDLE" -xf -
  for lib in "$BUNDLE"/lib/*.xz; do
    [ -e "$lib" ] && [ ! -e "${lib%.xz}" ] && xz -dk "$lib"
  done
  # The package finds its core next to itself in this copy of the tree.
  cp -f "$BUNDLE/_quadrants_core.so" quadrants/python/quadrants/_quadrants_core.so
  local root="$PWD/$BUNDLE/root/usr"
  export PYTHONHOME="$root"
  export PYTHONPATH="$root/lib/python3/dist-packages:$PWD/quadrants/python"
  export PYTHONNOUSERSITE=1 PYTHONDONTWRITEBYTECODE=1
  export LD_LIBRARY_PATH="$PWD/$BUNDLE/lib:$root/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu/blas:$root/lib/x86_64-linux-gnu/lapack"
  PYTHON="$root/bin/python3.11"
}

run() {
  prepare
  export QD_WANTED_ARCHS="${QD_WANTED_ARCHS:-cuda}"
  local log; log=$(mktemp)
  set +e
  # The whole suite unless test files or directories are named.
  local targets=(tests/python) arg
  for arg in "$@"; do [[ "$arg" == tests/* ]] && targets=(); done
  "$PYTHON" -s -m pytest -p no:cacheprovider -q -rs "${targets[@]}" "$@" | tee "$log"
  set -e
  # pytest's last line, e.g. "3 failed, 812 passed, 40 skipped in 90.1s".
  local summary passed=0 failed=0 count
  summary=$(tail -n 1 "$log")
  for count in $(grep -oE '[0-9]+ (passed|failed|errors?)' <<<"$summary" | tr ' ' ':'); do
    case "${count#*:}" in
      passed) passed=${count%%:*} ;;
      *) failed=$((failed + ${count%%:*})) ;;
    esac
  done
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
}

python_script() {
  prepare
  exec "$PYTHON" -s "$@"
}

# After a rebuild only the extension changes: refresh it in the bundle.
update_core() {
  bazel build //quadrants/python:all >&2
  [ -f "$BUNDLE/root.tar.xz" ] || die "no bundle: run 'tools/gpu_suite.sh pack' first"
  cp -fL "$CORE" "$BUNDLE/"
}

case "${1:-}" in
  pack) pack ;;
  update-core) update_core ;;
  run) shift; run "$@" ;;
  python) shift; python_script "$@" ;;
  *) die "usage: tools/gpu_suite.sh pack | update-core | run [pytest args] | python script.py [args]" ;;
esac
