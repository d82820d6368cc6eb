#!/usr/bin/env bash
# Runs the Python test suite (or one script) on a GPU machine unlike this one:
# another distribution (Ubuntu 24.04), another system Python (3.12), none of
# our Debian packages, no network.
#
#   tools/gpu_suite.sh pack [--no-build]    # here: build, write .gpu_bundle/
#   tools/gpu_suite.sh update-core [--no-build]  # here: refresh only src/
#   tools/gpu_suite.sh run [pytest args]    # there: the suite, QD_WANTED_ARCHS=cuda
#   tools/gpu_suite.sh run --jobs N [pytest args]  # there: the suite (or the
#                                           # test files given) in N pytest
#                                           # processes at once, files dealt
#                                           # round-robin; one summary line
#   tools/gpu_suite.sh python SCRIPT [args] # there: one script, bundled Python
#   tools/gpu_suite.sh check                # there: is the bundle isolated?
#   tools/gpu_suite.sh pack-lavapipe        # here: write .gpu_lavapipe/
#   tools/gpu_suite.sh pack-vulkan-loader   # here: write .gl/ (Debian's Vulkan
#                                           # loader and glvnd, for the GPU's
#                                           # own Vulkan driver)
#   tools/gpu_suite.sh import-python312 TGZ # here: keep the GPU machine's
#                                           # Python 3.12 headers for pack
#   tools/gpu_suite.sh system-run [pytest args]    # there: the suite under
#   tools/gpu_suite.sh system-python SCRIPT [args] # the machine's own python3
#                                           # (3.12, with PyTorch, CuPy, JAX)
#
# The bundle (.gpu_bundle/, ignored by git, at most 64 MiB so the device tool
# can carry it) holds:
#   runtime.tar.xz  Debian 12's python3.11 + stdlib, numpy, pytest and their
#                   Python deps (apt-get download + dpkg -x, so the set is
#                   explicit), every non-glibc shared library the interpreter,
#                   numpy and our extension load (libLLVM-19 included), and
#                   CUDA's libdevice.10.bc; every ELF file gets an $ORIGIN
#                   rpath, so no LD_LIBRARY_PATH is needed (and none leaks
#                   into the system's python3 that benchmarks start).
#   src/            a snapshot of the quadrants package with the built
#                   _quadrants_core.so (the .so and the package must match),
#                   and benchmarks/tape_reference; `run` adds conftest.py,
#                   tests/, examples/ and benchmarks/ from the working tree.
#   MANIFEST.txt    the packages and libraries inside.
# When the GPU machine's Python 3.12 and pybind11 headers were imported
# (import-python312; on the GPU machine:
#   tar czf $OUT/py312.tgz -C /usr/include python3.12 x86_64-linux-gnu/python3.12 \
#     -C "$(python3 -c 'import pybind11; print(pybind11.get_include())')" pybind11
# its pybind11 knows numpy 2, which Debian's 2.10 does not), src/ also holds
# the extension built against them (_quadrants_core.cpython-312-x86_64-linux-gnu.so), which Python 3.12
# imports in preference to the plain .so: system-run and system-python use
# it, so tests and examples reach the machine's PyTorch with CUDA.
# `run` unpacks runtime.tar.xz once into .gpu_bundle_unpacked/ (reused while
# the bundle is unchanged) and copies src/ next to it.
#
# Lavapipe (Mesa's Vulkan on the CPU, with the Vulkan loader and its LLVM 15)
# does not fit in the same 64 MiB, so .gpu_lavapipe/ is a second bundle:
# carry it in a later call on the same warm machine and `run`/`python`
# unpack it next to the runtime and point the Vulkan loader at it, so that
# vulkan (lavapipe) work uses the GPU machine's many cores.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUNDLE="$ROOT/.gpu_bundle"
UNPACKED="$ROOT/.gpu_bundle_unpacked"
CACHE="${GPU_SUITE_CACHE:-$HOME/.cache/quadrants/gpu_suite}"
CORE_TARGET=//quadrants/python:quadrants/_quadrants_core.so
CORE="quadrants/python/quadrants/_quadrants_core.so"
CORE312="quadrants/python/quadrants/_quadrants_core.cpython-312-x86_64-linux-gnu.so"
PY312_HEADERS="$CACHE/python3.12-headers"
# What `run` takes from the working tree next to the packed package.
TREE_PATHS=(conftest.py README.md tests/__init__.py tests/python examples benchmarks tools/gradfuzz
            docs/user_guide)
TAPE_TARGET=//benchmarks:tape_reference
# Test files that run for minutes on their own: `run --jobs N` gives each
# its own shard.
SOLO_FILES=(tests/python/test_gradfuzz_quick.py)
MAX_BYTES=$((64 * 1024 * 1024))

# The interpreter, numpy and pytest with what `apt-cache depends` lists for
# them on Python 3.11 (exceptiongroup and tomli are only for older Pythons).
# Shared libraries are not listed: pack finds them with ldd.
PYTHON_PACKAGES=(
  python3.11-minimal libpython3.11-minimal libpython3.11-stdlib
  python3-numpy
  python3-pytest python3-pluggy python3-iniconfig python3-packaging
  python3-py python3-attr python3-more-itertools python3-pkg-resources
)
# Libraries every glibc distribution ships, in a version at least as new as
# Debian 12's (glibc 2.36, GCC 12): Ubuntu 24.04 has glibc 2.39 and GCC 14's
# libstdc++/libgcc_s, which are backward compatible. Everything else is bundled.
SYSTEM_LIBS_RE='^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|libanl\.so|libstdc\+\+\.so|libgcc_s\.so)'
# Parts of the extracted packages the suite never uses.
TRIM=(
  usr/share usr/include etc
  usr/lib/python3.11/idlelib usr/lib/python3.11/tkinter usr/lib/python3.11/turtledemo
  usr/lib/python3.11/ensurepip usr/lib/python3.11/lib2to3 usr/lib/python3.11/pydoc_data
  usr/lib/python3.11/sitecustomize.py  # Debian's link to /etc (apport hook)
)

die() { echo "gpu_suite: $*" >&2; exit 1; }
note() { echo "gpu_suite: $*" >&2; }

# ---- pack (on the build machine) ---------------------------------------------------

# Downloads the given packages into $CACHE/debs (once): the installed
# version where installed and still on the mirror, so the bundled libraries
# are the ones we linked against; else the mirror's current one (e.g. a
# security update of the same Debian release).
download_debs() {
  mkdir -p "$CACHE/debs"
  local pkg version updated=0
  for pkg in "$@"; do
    compgen -G "$CACHE/debs/${pkg}_*.deb" >/dev/null && continue
    version="$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)"
    note "downloading $pkg${version:+ $version}"
    if [ -n "$version" ] && (cd "$CACHE/debs" && apt-get download -q "$pkg=$version" >/dev/null 2>&1); then
      continue
    fi
    if ! (cd "$CACHE/debs" && apt-get download -q "$pkg" >/dev/null 2>&1); then
      [ "$updated" -eq 0 ] || die "apt-get download $pkg failed"
      apt-get update -q >&2; updated=1
      (cd "$CACHE/debs" && apt-get download -q "$pkg" >&2) || die "apt-get download $pkg failed"
    fi
    [ -z "$version" ] || note "  ($pkg $version is no longer on the mirror: took $(basename "$(deb_of "$pkg")"))"
  done
}

# The .deb file of a package in the cache (the newest if several).
deb_of() { ls -1 "$CACHE"/debs/"$1"_*.deb 2>/dev/null | sort -V | tail -n 1; }

# patchelf (to set rpaths) runs from the cache: no change to this system.
patchelf_bin() {
  local dir="$CACHE/tools"
  if [ ! -x "$dir/usr/bin/patchelf" ]; then
    download_debs patchelf
    dpkg -x "$(deb_of patchelf)" "$dir"
  fi
  echo "$dir/usr/bin/patchelf"
}

# The Debian package owning a file (merged /usr: try both spellings).
owner_of() {
  local path="$1" alt
  case "$path" in
    /usr/lib/*) alt="${path#/usr}" ;;
    /lib/*) alt="/usr$path" ;;
    *) alt="$path" ;;
  esac
  { dpkg -S "$path" 2>/dev/null || dpkg -S "$alt" 2>/dev/null; } | head -n 1 | cut -d: -f1
}

# Prints "soname realpath" for each non-system library the ELF files load
# (ldd gives the transitive closure), resolved on this machine.
needed_libs() {
  local elf
  for elf in "$@"; do
    if ldd "$elf" | grep -q 'not found'; then
      ldd "$elf" | grep 'not found' >&2
      die "$elf needs a library that is not installed here"
    fi
    ldd "$elf" | awk '/=> \// { print $1, $3 }'
  done | grep -vE "$SYSTEM_LIBS_RE" | sort -u |
    while read -r soname path; do echo "$soname $(realpath "$path")"; done
}

# Copies each needed library out of its own extracted .deb into $stage/lib,
# named by its soname; records "soname package" in $stage/libs.txt.
bundle_libs() {
  local stage="$1"; shift
  local list pkgs
  list="$(needed_libs "$@")"
  mkdir -p "$stage/lib"
  : > "$stage/libs.txt"
  declare -A owner=()
  local soname path pkg
  while read -r soname path; do
    pkg="$(owner_of "$path")"
    [ -n "$pkg" ] || die "no Debian package owns $path (needed as $soname)"
    owner["$path"]="$pkg"
  done <<< "$list"
  pkgs="$(printf '%s\n' "${owner[@]}" | sort -u)"
  # shellcheck disable=SC2086
  download_debs $pkgs
  for pkg in $pkgs; do
    rm -rf "$CACHE/libdebs/$pkg"; mkdir -p "$CACHE/libdebs/$pkg"
    dpkg -x "$(deb_of "$pkg")" "$CACHE/libdebs/$pkg"
  done
  while read -r soname path; do
    pkg="${owner[$path]}"
    local src="$CACHE/libdebs/$pkg$path"
    [ -e "$src" ] || src="$CACHE/libdebs/$pkg/usr$path"
    [ -e "$src" ] || src="$CACHE/libdebs/$pkg${path#/usr}"
    [ -e "$src" ] || die "$path is not in $pkg's .deb"
    cp -L "$src" "$stage/lib/$soname"
    chmod u+w "$stage/lib/$soname"
    echo "$soname $pkg" >> "$stage/libs.txt"
  done <<< "$list"
}

# Gives every ELF file under $1 an rpath to $1/lib relative to itself.
# DT_RPATH (not RUNPATH): it wins over an LD_LIBRARY_PATH the machine sets,
# and applies to the libraries it loads in turn.
set_rpaths() {
  local top="$1" patchelf file rel
  patchelf="$(patchelf_bin)"
  while IFS= read -r -d '' file; do
    head -c 4 "$file" | grep -q 'ELF' || continue
    rel="$(realpath --relative-to="$(dirname "$file")" "$top/lib")"
    "$patchelf" --force-rpath --set-rpath "\$ORIGIN/$rel" "$file"
  done < <(find "$top" -type f \( -name '*.so*' -o -path '*/usr/bin/python3.11' \) -print0)
}

# Turns absolute symlinks into relative ones inside the tree (or drops them
# when their target is not in it), so nothing points into the target's /.
fix_symlinks() {
  local top="$1" link target
  while IFS= read -r -d '' link; do
    target="$(readlink "$link")"
    [[ "$target" == /* ]] || continue
    if [ -e "$top$target" ]; then
      ln -sfn "$(realpath --relative-to="$(dirname "$link")" "$top$target")" "$link"
    else
      rm -f "$link"
    fi
  done < <(find "$top" -type l -print0)
}

# Builds the runtime tree (interpreter, packages, libraries, libdevice) in
# $1, given the extension's path for ldd.
make_runtime() {
  local stage="$1" core="$2" pkg
  rm -rf "$stage"; mkdir -p "$stage"
  download_debs "${PYTHON_PACKAGES[@]}"
  : > "$stage/packages.txt"
  for pkg in "${PYTHON_PACKAGES[@]}"; do
    dpkg -x "$(deb_of "$pkg")" "$stage"
    basename "$(deb_of "$pkg")" >> "$stage/packages.txt"
  done
  local dir
  for dir in "${TRIM[@]}"; do rm -rf "${stage:?}/$dir"; done
  find "$stage" -depth -type d \( -name __pycache__ -o -name tests \) \
    -path '*-packages/*' -exec rm -rf {} +
  find "$stage" -depth -type d -name __pycache__ -exec rm -rf {} +
  fix_symlinks "$stage"
  # Everything the interpreter, its C modules, numpy and the extension load.
  local elves
  mapfile -t elves < <(find "$stage/usr/lib" -name '*.so' -type f)
  bundle_libs "$stage" "$stage/usr/bin/python3.11" "$core" "${elves[@]}"
  # CUDA's math library: the CUDA backend links it into every kernel. Not in
  # Debian main, so it comes from this machine's toolkit (CUDA_HOME).
  local libdevice="${CUDA_HOME:-/usr/local/cuda}/nvvm/libdevice/libdevice.10.bc"
  if [ -f "$libdevice" ]; then
    mkdir -p "$stage/cuda/nvvm/libdevice"
    cp -L "$libdevice" "$stage/cuda/nvvm/libdevice/"
  else
    note "warning: no $libdevice here; CUDA on the target then needs its own CUDA_HOME"
  fi
  # The package on sys.path without PYTHONPATH (which -I ignores): a .pth in
  # the bundled dist-packages, relative to it, naming the unpacked snapshot.
  echo "../../../../src/quadrants/python" > "$stage/usr/lib/python3/dist-packages/quadrants_src.pth"
  set_rpaths "$stage"
}

# The sources the suite needs, with the extension (rpath into ../lib once
# run copies src/ next to the unpacked runtime).
make_src() {
  local src="$1"
  rm -rf "$src"; mkdir -p "$src"
  (cd "$ROOT" &&
    git ls-files -co --exclude-standard -- quadrants/python | grep -v '\.so$' |
    while read -r f; do [ -f "$f" ] && echo "$f"; done |
    tar -cf - -T -) | tar -C "$src" -xf -
  add_core "$ROOT/bazel-bin/$CORE" "$src/$CORE"
  [ ! -f "$CACHE/core-cp312.so" ] || add_core "$CACHE/core-cp312.so" "$src/$CORE312"
  local tape="$ROOT/bazel-bin/benchmarks/tape_reference"
  if [ -x "$tape" ]; then mkdir -p "$src/benchmarks"; cp -L "$tape" "$src/benchmarks/"; fi
}

# Copies an extension into src/ with an rpath to the bundled libraries. The
# device tool carries 64 MiB with the working tree: the extension travels
# stripped and xz-compressed, and `run` restores it.
add_core() {
  local from="$1" to="$2"
  cp -L "$from" "$to"
  chmod u+w "$to"
  strip --strip-unneeded "$to"
  local patchelf; patchelf="$(patchelf_bin)"
  # src/quadrants/python/quadrants/ -> the runtime's lib/ next to src/.
  "$patchelf" --force-rpath --set-rpath '$ORIGIN/../../../../lib' "$to"
  xz -9 -T0 "$to"
}

# Builds the extension against the imported Python 3.12 headers (when there
# are any) into $CACHE/core-cp312.so, then the ordinary one again (a cache
# hit), so bazel-bin keeps the Python 3.11 build.
build_cores() {
  rm -f "$CACHE/core-cp312.so"
  if [ -f "$PY312_HEADERS/Python.h" ]; then
    bazel build --override_repository=python_headers="$PY312_HEADERS" "$CORE_TARGET" >&2
    cp -L "bazel-bin/$CORE" "$CACHE/core-cp312.so"
  else
    note "no Python 3.12 headers imported: the bundle has no extension for the machine's own python3"
  fi
  bazel build "$CORE_TARGET" "$TAPE_TARGET" >&2
}

# Keeps the GPU machine's Python 3.12 and pybind11 headers (the tarball
# described at the top) as a Bazel repository that build_cores puts in
# place of Debian's Python 3.11 headers.
import_python312() {
  [ $# -eq 1 ] && [ -f "$1" ] || die "usage: tools/gpu_suite.sh import-python312 PY312.tgz"
  local tmp; tmp="$(mktemp -d)"
  tar -C "$tmp" -xzf "$1"
  [ -f "$tmp/python3.12/Python.h" ] && [ -f "$tmp/x86_64-linux-gnu/python3.12/pyconfig.h" ] &&
    [ -f "$tmp/pybind11/numpy.h" ] ||
    die "$1 lacks python3.12/Python.h, x86_64-linux-gnu/python3.12/pyconfig.h or pybind11/numpy.h"
  rm -rf "$PY312_HEADERS"; mkdir -p "$PY312_HEADERS"
  cp -a "$tmp/python3.12/." "$PY312_HEADERS/"
  # Searched before /usr/include, so it stands in for Debian's pybind11.
  cp -a "$tmp/pybind11" "$PY312_HEADERS/"
  # Ubuntu's pyconfig.h only includes the multiarch one from /usr/include.
  cp "$tmp/x86_64-linux-gnu/python3.12/pyconfig.h" "$PY312_HEADERS/pyconfig.h"
  rm -rf "$tmp"
  echo 'workspace(name = "python_headers")' > "$PY312_HEADERS/WORKSPACE"
  cat > "$PY312_HEADERS/BUILD.bazel" <<'BUILD'
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "python_headers",
    hdrs = glob(["**/*.h"]),
    includes = ["."],
)
BUILD
  echo "gpu_suite: Python 3.12 headers in $PY312_HEADERS"
}

pack() {
  local build=1
  [ "${1:-}" = "--no-build" ] && build=0
  cd "$ROOT"
  if [ "$build" -eq 1 ]; then
    # One build of just what the bundle needs (another engineer may build
    # here too: bazel waits for the other command's lock itself).
    build_cores
  fi
  [ -f "bazel-bin/$CORE" ] || die "bazel-bin/$CORE is not built (run without --no-build)"

  local stage="$CACHE/stage" key runtime
  make_runtime "$stage/runtime" "bazel-bin/$CORE"
  # The compressed runtime is cached by content: repacking after a C++ or
  # Python change only redoes src/.
  key="$(cd "$stage/runtime" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)"
  runtime="$CACHE/runtime-$key.tar.xz"
  if [ ! -f "$runtime" ]; then
    note "compressing the runtime (xz -9, a minute or two)"
    tar -C "$stage/runtime" --sort=name --owner=0 --group=0 -cf - . |
      xz -T0 -9 > "$runtime.tmp"
    mv "$runtime.tmp" "$runtime"
  fi

  # Written next to the old bundle and swapped in at the end, so a copy of
  # the tree taken meanwhile never sees half a bundle.
  local out="$BUNDLE.new"
  rm -rf "$out"; mkdir -p "$out"
  cp "$runtime" "$out/runtime.tar.xz"
  echo "$key" > "$out/runtime.key"
  make_src "$out/src"
  {
    echo "# Built $(date -u +%FT%TZ) from $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || echo ' (+ uncommitted changes)')"
    echo "# Debian packages (dpkg -x):"; sed 's/^/  /' "$stage/runtime/packages.txt"
    echo "# Shared libraries (soname package):"; sed 's/^/  /' "$stage/runtime/libs.txt"
    echo "# CUDA libdevice: $(ls "$stage/runtime/cuda/nvvm/libdevice" 2>/dev/null || echo none)"
  } > "$out/MANIFEST.txt"
  rm -rf "$BUNDLE"; mv "$out" "$BUNDLE"
  grep -qxF '/.gpu_bundle/' "$ROOT/.gitignore" || note "warning: .gpu_bundle/ is not in .gitignore"

  local bytes; bytes="$(du -sb "$BUNDLE" | cut -f1)"
  echo "gpu_suite: .gpu_bundle is $((bytes / 1024)) KiB ($(du -sh "$BUNDLE" | cut -f1)); runtime.tar.xz $(du -h "$BUNDLE/runtime.tar.xz" | cut -f1), src $(du -sh "$BUNDLE/src" | cut -f1)"
  [ "$bytes" -le "$MAX_BYTES" ] || die "the bundle is over 64 MiB ($bytes bytes)"
}

# After a rebuild or a Python change: refreshes only src/ (the extension and
# the sources), keeping the runtime.
update_core() {
  [ -f "$BUNDLE/runtime.tar.xz" ] || die "no bundle: run 'tools/gpu_suite.sh pack' first"
  cd "$ROOT"
  [ "${1:-}" = "--no-build" ] || build_cores
  make_src "$BUNDLE/src.new"
  rm -rf "$BUNDLE/src"; mv "$BUNDLE/src.new" "$BUNDLE/src"
  echo "gpu_suite: refreshed $BUNDLE/src; .gpu_bundle is $(du -sh "$BUNDLE" | cut -f1)"
}

# Lavapipe, the Vulkan loader and every non-glibc library they load, with an
# ICD manifest whose relative library path the loader resolves next to it.
pack_lavapipe() {
  local out="$ROOT/.gpu_lavapipe" stage; stage="$(mktemp -d)"
  local lvp=/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so
  local loader=/usr/lib/x86_64-linux-gnu/libvulkan.so.1
  [ -f "$lvp" ] && [ -f "$loader" ] || die "lavapipe or the Vulkan loader is missing: ./qd setup"
  mkdir -p "$stage/lavapipe"
  cp -L "$lvp" "$loader" "$stage/lavapipe/"
  local lib
  for lib in $(ldd "$lvp" "$loader" | awk '$3 ~ /^\// { print $3 }' | sort -u); do
    basename "$lib" | grep -Eq "$SYSTEM_LIBS_RE" || cp -L "$lib" "$stage/lavapipe/"
  done
  printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "./libvulkan_lvp.so", "api_version": "1.1.230"}}\n' \
    > "$stage/lavapipe/lvp_icd.json"
  rm -rf "$out"; mkdir -p "$out"
  tar -C "$stage" -cf - lavapipe | xz -6 -T0 > "$out/lavapipe.tar.xz"
  rm -rf "$stage"
  local bytes; bytes="$(du -sb "$out" | cut -f1)"
  [ "$bytes" -le "$MAX_BYTES" ] || die ".gpu_lavapipe is $bytes bytes, over the 64 MiB the device tool carries"
  echo "gpu_suite: .gpu_lavapipe is $((bytes / 1024)) KiB"
}

# ---- run (on the GPU machine) ------------------------------------------------------

# Unpacks the runtime (once per bundle) and refreshes the src/ snapshot.
prepare() {
  [ -f "$BUNDLE/runtime.tar.xz" ] || die "no bundle in $BUNDLE: run 'tools/gpu_suite.sh pack' on the build machine"
  local key; key="$(cat "$BUNDLE/runtime.key")"
  if [ "$(cat "$UNPACKED/.key" 2>/dev/null || true)" != "$key" ]; then
    note "unpacking the runtime into $UNPACKED"
    rm -rf "$UNPACKED" "$UNPACKED.tmp"; mkdir -p "$UNPACKED.tmp"
    if command -v xz >/dev/null; then
      xz -dc "$BUNDLE/runtime.tar.xz" | tar -C "$UNPACKED.tmp" -xf -
    else  # no xz-utils: any python3's tarfile reads it
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        "$BUNDLE/runtime.tar.xz" "$UNPACKED.tmp"
    fi
    echo "$key" > "$UNPACKED.tmp/.key"
    mv "$UNPACKED.tmp" "$UNPACKED"
  fi
  rm -rf "$UNPACKED/src"
  cp -a "$BUNDLE/src" "$UNPACKED/src"
  # The tests, examples and benchmarks come from the working tree, which the
  # device tool carries anyway; the package is the one packed with the
  # extension.
  local path
  for path in "${TREE_PATHS[@]}"; do
    [ -e "$ROOT/$path" ] || continue
    if [ -d "$ROOT/$path" ]; then
      mkdir -p "$UNPACKED/src/$path"
      cp -a "$ROOT/$path/." "$UNPACKED/src/$path/"
    else
      mkdir -p "$UNPACKED/src/$(dirname "$path")"
      cp -a "$ROOT/$path" "$UNPACKED/src/$path"
    fi
  done
  find "$UNPACKED/src" -name __pycache__ -prune -exec rm -rf {} +
  local core
  for core in "$CORE" "$CORE312"; do
    [ -f "$UNPACKED/src/$core.xz" ] || continue
    if command -v xz >/dev/null; then
      xz -dc "$UNPACKED/src/$core.xz" > "$UNPACKED/src/$core"
    else
      python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
        "$UNPACKED/src/$core.xz" "$UNPACKED/src/$core"
    fi
    chmod +x "$UNPACKED/src/$core"; rm -f "$UNPACKED/src/$core.xz"
  done
  PY="$UNPACKED/usr/bin/python3.11"
  use_vulkan_loader
  use_lavapipe
  # Child processes the tests start with sys.executable (no -I) stay isolated
  # too; the parent runs with -I (no PYTHON* variables, no user site, no cwd).
  unset PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONUSERBASE PYTHONSAFEPATH VIRTUAL_ENV
  export PYTHONNOUSERSITE=1
  if [ -z "${CUDA_HOME:-}" ] && [ -d "$UNPACKED/cuda" ]; then
    export CUDA_HOME="$UNPACKED/cuda"
  fi
}

# Debian's Vulkan loader and libglvnd, which NVIDIA's Vulkan driver (in
# libGLX_nvidia) needs and the GPU machine's image lacks.
VULKAN_LOADER_PACKAGES=(libvulkan1 libglvnd0 libglx0 libgl1 libegl1 libgles2 libopengl0)

pack_vulkan_loader() {
  local out="$ROOT/.gl"
  rm -rf "$out"; mkdir -p "$out"
  (cd "$out" && apt-get download -q "${VULKAN_LOADER_PACKAGES[@]}" >&2) ||
    die "apt-get download of the Vulkan loader packages failed"
  echo "gpu_suite: .gl is $(du -sh "$out" | cut -f1); carry it with .gpu_bundle"
}

# With a carried .gl/ (and no lavapipe): installs the loader into the
# machine (dpkg -x to /, as the device notes say) and points it at NVIDIA's
# driver, so vulkan runs on the GPU.
use_vulkan_loader() {
  compgen -G "$ROOT/.gl/*.deb" >/dev/null || return 0
  [ -f "$ROOT/.gpu_lavapipe/lavapipe.tar.xz" ] && return 0
  # Only on the GPU machine (its driver's folder): never into this one's /.
  [ -d /usr/local/nvidia ] || return 0
  local deb
  for deb in "$ROOT"/.gl/*.deb; do dpkg -x "$deb" / || die "dpkg -x $deb failed"; done
  ldconfig
  local icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  local egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  [ -f "$icd" ] && export VK_DRIVER_FILES="${VK_DRIVER_FILES:-$icd}"
  [ -f "$egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES="${__EGL_VENDOR_LIBRARY_FILENAMES:-$egl}"
  note "vulkan: the machine's driver through Debian's loader (${VK_DRIVER_FILES:-default ICDs})"
}

# Unpacks a carried .gpu_lavapipe/ and makes the Vulkan loader find only
# lavapipe; without one, Vulkan stays whatever the machine has.
use_lavapipe() {
  local archive="$ROOT/.gpu_lavapipe/lavapipe.tar.xz"
  if [ -f "$archive" ] && [ ! -f "$UNPACKED/lavapipe/lvp_icd.json" ]; then
    note "unpacking lavapipe into $UNPACKED/lavapipe"
    rm -rf "$UNPACKED/lavapipe"
    "$PY" -I -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$archive" "$UNPACKED"
  fi
  if [ -f "$UNPACKED/lavapipe/lvp_icd.json" ]; then
    export VK_ICD_FILENAMES="$UNPACKED/lavapipe/lvp_icd.json" VK_DRIVER_FILES="$UNPACKED/lavapipe/lvp_icd.json"
    export LD_LIBRARY_PATH="$UNPACKED/lavapipe${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    note "vulkan: lavapipe from $UNPACKED/lavapipe"
  fi
}

# Warns when the working tree's tests or package differ from the snapshot
# that was packed with the extension.
warn_if_stale() {
  local d
  for d in quadrants/python/quadrants; do
    [ -d "$ROOT/$d" ] || continue
    if ! diff -rq -x __pycache__ -x '*.so' -x '*.so.xz' "$ROOT/$d" "$BUNDLE/src/$d" >/dev/null 2>&1; then
      note "warning: $d differs from the bundle's snapshot; repack to test the working tree"
    fi
  done
}

# The bundle's interpreter runs isolated (-I); the machine's own, for the
# wheel, keeps PYTHONPATH (where pip put the wheel).
PY_ISOLATE=-I
helper() { "$PY" $PY_ISOLATE -u "$ROOT/tools/gpu_suite_helper.py" "$@"; }

check() {
  prepare
  helper check "$UNPACKED"
}

run() {
  local jobs=1
  if [ "${1:-}" = "--jobs" ]; then
    [ $# -ge 2 ] || die "--jobs needs a count"
    jobs="$2"; shift 2
    [[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "--jobs needs a positive count, not '$jobs'"
  fi
  prepare
  warn_if_stale
  export QD_WANTED_ARCHS="${QD_WANTED_ARCHS:-cuda}"
  helper check "$UNPACKED"
  note "QD_WANTED_ARCHS=$QD_WANTED_ARCHS CUDA_HOME=${CUDA_HOME:-}"
  if [[ ",$QD_WANTED_ARCHS," == *",vulkan,"* ]]; then
    note "vulkan device: $(cd "$UNPACKED/src" && "$PY" -I -c '
import quadrants as qd
from quadrants.lang import runtime
reason = runtime.arch_unavailable_reason(qd.vulkan)
if reason is None:
    qd.init(arch=qd.vulkan)
    print(runtime.program().device_description)
else:
    print("unavailable:", reason)' 2>&1 | tail -n 1)"
  fi
  # Default to the whole suite unless a test path is given.
  local arg has_path=0 options=() files=()
  for arg in "$@"; do
    if [ -e "$UNPACKED/src/${arg%%::*}" ]; then
      has_path=1; files+=("$arg")
    else
      options+=("$arg")
    fi
  done
  local args=(-p no:cacheprovider -rfEs "$@")
  [ "$has_path" -eq 1 ] || args+=(tests/python)
  local results="$UNPACKED/results.txt" rc=0 start=$SECONDS
  rm -f "$results" "$results".*
  if [ "$jobs" -gt 1 ]; then
    [ "$has_path" -eq 1 ] ||
      mapfile -t files < <(cd "$UNPACKED/src" && ls tests/python/test_*.py)
    run_shards "$jobs" "$results" "${options[@]}" -- "${files[@]}" || rc=$?
  else
    (cd "$UNPACKED/src" && helper pytest "$results" "${args[@]}") || rc=$?
  fi
  note "pytest exit status $rc, $((SECONDS - start)) s"
  helper summary "$results" "$rc"
}

# run_shards JOBS RESULTS [pytest options] -- FILES: deals FILES
# round-robin (so neighbouring heavy files spread) to JOBS pytest processes
# that share the machine. Their records go to RESULTS, each one's failure
# lines and final count to stdout; the status is the worst of theirs, where
# a shard that selected no test (status 5, e.g. under -k) counts as passed
# unless every shard did.
run_shards() {
  local jobs="$1" results="$2"; shift 2
  local options=() files=() k i rc worst=0 empty=0 pids=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do options+=("$1"); shift; done
  shift
  # Files that take minutes on their own (SOLO_FILES) get a shard each;
  # the others are dealt round-robin to the remaining shards.
  local solo=() rest=() f
  for f in "$@"; do
    if [ ${#solo[@]} -lt $((jobs - 1)) ] && [[ " ${SOLO_FILES[*]} " == *" $f "* ]]; then
      solo+=("$f")
    else
      rest+=("$f")
    fi
  done
  local dealt=$((jobs - ${#solo[@]}))
  for ((k = 0; k < jobs; k++)); do
    local shard=()
    if [ "$k" -lt ${#solo[@]} ]; then
      shard=("${solo[k]}")
    else
      for ((i = k - ${#solo[@]}; i < ${#rest[@]}; i += dealt)); do
        shard+=("${rest[i]}")
      done
    fi
    [ ${#shard[@]} -gt 0 ] || continue
    (cd "${SRC_DIR:-$UNPACKED/src}" &&
      helper pytest "$results.$k" -p no:cacheprovider -rfEs "${options[@]}" \
        "${shard[@]}") >"$results.$k.log" 2>&1 &
    pids[k]=$!
  done
  for k in "${!pids[@]}"; do
    rc=0; wait "${pids[k]}" || rc=$?
    if [ "$rc" -eq 5 ]; then
      empty=$((empty + 1))
    elif [ "$rc" -gt "$worst" ]; then
      worst=$rc
    fi
    grep -E '^(FAILED|ERROR) ' "$results.$k.log" || true
    note "shard $k (status $rc): $(grep -E ' in [0-9.]+s' "$results.$k.log" | tail -n 1)"
    cat "$results.$k" >>"$results" 2>/dev/null || true
  done
  [ "$empty" -eq "${#pids[@]}" ] && worst=5
  return "$worst"
}

python_script() {
  [ $# -ge 1 ] || die "usage: tools/gpu_suite.sh python SCRIPT [args]"
  prepare
  exec_script "$PY" -I "$@"
}

# Runs SCRIPT [args] with the interpreter command before it. Scripts of the
# snapshot (e.g. benchmarks/x.py) run from it, next to what they load
# (benchmarks/tape_reference).
exec_script() {
  local interpreter=("$1"); shift
  while [ $# -gt 0 ] && [ "${1#-}" != "$1" ] && [ "$1" != "-c" ]; do
    interpreter+=("$1"); shift
  done
  local script="$1"; shift
  [ -f "$UNPACKED/src/$script" ] && script="$UNPACKED/src/$script"
  cd "$UNPACKED/src"  # e.g. `python -c ...` importing tools.gradfuzz from here
  exec "${interpreter[@]}" "$script" "$@"
}

# The machine's own python3 (3.12, with PyTorch, CuPy and JAX) with the
# bundle's package on its path, through the extension built for 3.12.
use_system_python() {
  prepare
  [ -f "$UNPACKED/src/$CORE312" ] ||
    die "the bundle has no extension for Python 3.12: import-python312 and pack here"
  SYSTEM_PY="$(command -v python3)"
  export PYTHONPATH="$UNPACKED/src/quadrants/python:$UNPACKED/src"
  export QD_WANTED_ARCHS="${QD_WANTED_ARCHS:-cuda}"
  note "$SYSTEM_PY ($("$SYSTEM_PY" -c 'import sys; print(sys.version.split()[0])')) QD_WANTED_ARCHS=$QD_WANTED_ARCHS"
}

system_run() {
  use_system_python
  local results="$UNPACKED/results.txt" rc=0
  rm -f "$results"
  (cd "$UNPACKED/src" && "$SYSTEM_PY" -u "$ROOT/tools/gpu_suite_helper.py" pytest "$results" \
    -p no:cacheprovider -rfEs "$@") || rc=$?
  helper summary "$results" "$rc"
}

system_python() {
  [ $# -ge 1 ] || die "usage: tools/gpu_suite.sh system-python SCRIPT [args]"
  use_system_python
  exec_script "$SYSTEM_PY" "$@"
}

# ---- the wheel (on the GPU machine) ------------------------------------------------

# Installs the carried CPython 3.12 wheel (dist/, from ./qd wheel) with the
# machine's own python3 and pip into a target folder, once per wheel, and
# runs from the working tree with that folder as PYTHONPATH: the machine's
# numpy, PyTorch, CuPy and JAX, no bundled interpreter. --no-deps: pip
# --target ignores installed packages, and numpy is already there.
use_wheel() {
  local wheel
  wheel="$(ls -1 "$ROOT"/dist/quadrants-*-cp312-cp312-*.whl 2>/dev/null | tail -n 1)"
  [ -n "$wheel" ] || die "no CPython 3.12 wheel in dist/: run ./qd wheel here and carry it"
  PY="$(command -v python3)"
  PY_ISOLATE=
  local site="$CACHE/wheel_site" key
  key="$(sha256sum "$wheel" | cut -c1-16)"
  if [ "$(cat "$site/.key" 2>/dev/null || true)" != "$key" ]; then
    note "pip install --target $site $(basename "$wheel")"
    rm -rf "$site"
    "$PY" -m pip install --no-index --no-deps --quiet --target "$site" "$wheel" ||
      die "pip install of $wheel failed"
    echo "$key" > "$site/.key"
  fi
  unset PYTHONHOME LD_LIBRARY_PATH VIRTUAL_ENV
  export PYTHONPATH="$site" QD_TEST_INSTALLED=1
  SRC_DIR="$ROOT"
  UNPACKED="$CACHE/wheel_run"; mkdir -p "$UNPACKED"
  use_vulkan_loader
  export QD_WANTED_ARCHS="${QD_WANTED_ARCHS:-cuda}"
  note "$PY ($("$PY" -c 'import sys; print(sys.version.split()[0])')) with $(basename "$wheel"); QD_WANTED_ARCHS=$QD_WANTED_ARCHS"
  (cd "$ROOT" && "$PY" -c 'import quadrants, numpy, torch; print(quadrants.__file__, numpy.__version__, torch.__version__)' 2>&1 | tail -n 1) >&2
}

wheel_run() {
  local jobs=1
  if [ "${1:-}" = "--jobs" ]; then
    [ $# -ge 2 ] || die "--jobs needs a count"
    jobs="$2"; shift 2
  fi
  use_wheel
  local arg has_path=0 options=() files=()
  for arg in "$@"; do
    if [ -e "$ROOT/${arg%%::*}" ]; then has_path=1; files+=("$arg"); else options+=("$arg"); fi
  done
  local results="$UNPACKED/results.txt" rc=0 start=$SECONDS
  rm -f "$results" "$results".*
  [ "$has_path" -eq 1 ] || mapfile -t files < <(cd "$ROOT" && ls tests/python/test_*.py)
  if [ "$jobs" -gt 1 ]; then
    run_shards "$jobs" "$results" "${options[@]}" -- "${files[@]}" || rc=$?
  else
    (cd "$ROOT" && helper pytest "$results" -p no:cacheprovider -rfEs "${options[@]}" \
      "${files[@]}") || rc=$?
  fi
  note "pytest exit status $rc, $((SECONDS - start)) s"
  helper summary "$results" "$rc"
}

wheel_python() {
  [ $# -ge 1 ] || die "usage: tools/gpu_suite.sh wheel-python SCRIPT [args]"
  use_wheel
  cd "$ROOT"
  exec "$PY" "$@"
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  wheel-run) shift; wheel_run "$@" ;;
  wheel-python) shift; wheel_python "$@" ;;
  update-core) shift; update_core "$@" ;;
  run) shift; run "$@" ;;
  python) shift; python_script "$@" ;;
  pack-lavapipe) pack_lavapipe ;;
  pack-vulkan-loader) pack_vulkan_loader ;;
  import-python312) shift; import_python312 "$@" ;;
  system-run) shift; system_run "$@" ;;
  system-python) shift; system_python "$@" ;;
  check) check ;;
  *) die "usage: tools/gpu_suite.sh wheel-run [--jobs N] [pytest args] | wheel-python SCRIPT [args] | pack [--no-build] | update-core [--no-build] | pack-lavapipe | pack-vulkan-loader | import-python312 TGZ | run [pytest args] | python SCRIPT [args] | system-run [pytest args] | system-python SCRIPT [args] | check" ;;
esac
