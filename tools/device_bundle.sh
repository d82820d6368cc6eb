#!/usr/bin/env bash
# Copies built test binaries and the non-system shared libraries they load
# into .device/ (ignored by git), so they can run on a GPU machine that lacks
# this machine's Debian packages: run there as `.device/run <binary-name>`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=.device
rm -rf "$out"; mkdir -p "$out/lib"
for target in "$@"; do
  bin="bazel-bin/${target#//}"; bin="${bin/://}"
  [ -x "$bin" ] || { echo "device_bundle: $bin not built" >&2; exit 1; }
  cp -L "$bin" "$out/"
  ldd "$bin" | awk '/=> \// { print $3 }' |
    grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libdl|libpthread|librt)\.so' |
    while read -r lib; do cp -Ln "$lib" "$out/lib/"; done
done
cat > "$out/run" <<'RUN'
#!/usr/bin/env bash
here="$(cd "$(dirname "$0")" && pwd)"
name="$1"; shift
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/$name" "$@"
RUN
chmod +x "$out/run"
du -sh "$out"
