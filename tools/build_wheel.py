"""Builds a self-contained quadrants wheel for one CPython.

usage: build_wheel.py --out WHEEL --name-out NAMEFILE --version V
                      --python-tag cp3X --core CORE.so
                      [--libdevice PATH]... FILE...

Each FILE's path inside the wheel is what follows "quadrants/python/" in its
path (CORE.so may be among them). CORE.so becomes quadrants/<its file name>. As `auditwheel repair`
would, every shared library the core loads (ldd's transitive closure) other
than glibc's, libstdc++ and libgcc_s is copied into quadrants/_libs/, which
the core's rpath names; each copy gets the rpath $ORIGIN (patchelf), so the
copies need nothing but those system libraries and each other. The first --libdevice path that exists (CUDA's math library)
goes to quadrants/_cuda/nvvm/libdevice/, where the CUDA backend looks. The
platform tag names the newest glibc symbol version any binary references
(manylinux_2_Y_x86_64). The wheel's PEP 427 file name goes to NAMEFILE.
"""
import argparse
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

MARKER = "quadrants/python/"
# Libraries every Linux with a glibc provides, which a wheel must not ship.
SYSTEM_LIBS = re.compile(
    r"^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|librt|libpthread|libutil|"
    r"libresolv|libstdc\+\+|libgcc_s)\.so")
LIBDEVICE = "quadrants/_cuda/nvvm/libdevice/libdevice.10.bc"


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{name},sha256={digest.decode()},{len(data)}"


def needed_libraries(elf):
    """(soname, path) of each non-system library `elf` loads, transitively."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = subprocess.run(["ldd", elf], capture_output=True, text=True, check=True,
                         env=env).stdout
    missing = [line.strip() for line in out.splitlines() if "not found" in line]
    if missing:
        raise SystemExit(f"{elf} needs libraries that are not installed: {missing}")
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("/"):
            if not SYSTEM_LIBS.match(parts[0]):
                found.append((parts[0], os.path.realpath(parts[2])))
    return sorted(set(found))


def newest_glibc(data_by_name):
    """The newest GLIBC_2.N symbol version the ELF files reference, as N."""
    newest = 17  # manylinux2014's floor
    for name, data in data_by_name:
        if not data.startswith(b"\x7fELF"):
            continue
        for minor in re.findall(rb"GLIBC_2\.(\d+)", data):
            newest = max(newest, int(minor))
    return newest


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--name-out", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--python-tag", required=True)
    parser.add_argument("--core", required=True)
    parser.add_argument("--libdevice", action="append", default=[])
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()

    entries = []
    for path in args.files:
        if os.path.samefile(path, args.core):
            continue
        index = path.rfind(MARKER)
        if index < 0:
            raise SystemExit(f"{path} is not under {MARKER}")
        with open(path, "rb") as f:
            entries.append((path[index + len(MARKER):], f.read()))
    with open(args.core, "rb") as f:
        entries.append(("quadrants/" + os.path.basename(args.core), f.read()))
    with tempfile.TemporaryDirectory() as tmp:
        for soname, path in needed_libraries(args.core):
            copy = os.path.join(tmp, soname)
            shutil.copyfile(path, copy)
            # Each copy finds its siblings by itself, whoever loads it.
            subprocess.run(["patchelf", "--force-rpath", "--set-rpath", "$ORIGIN", copy],
                           check=True)
            with open(copy, "rb") as f:
                entries.append((f"quadrants/_libs/{soname}", f.read()))
    for path in args.libdevice:
        if os.path.exists(path):
            with open(path, "rb") as f:
                entries.append((LIBDEVICE, f.read()))
            break

    tag = args.python_tag
    platform = f"manylinux_2_{newest_glibc(entries)}_x86_64"
    dist_info = f"quadrants-{args.version}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: quadrants\nVersion: {args.version}\n"
                "Summary: A differentiable kernel compiler with reverse-mode autodiff "
                "through dynamic loops\nRequires-Python: >=3.11\nRequires-Dist: numpy\n")
    wheel = (f"Wheel-Version: 1.0\nGenerator: quadrants build_wheel.py\n"
             f"Root-Is-Purelib: false\nTag: {tag}-{tag}-{platform}\n")
    entries += [(f"{dist_info}/METADATA", metadata.encode()),
                (f"{dist_info}/WHEEL", wheel.encode()),
                (f"{dist_info}/top_level.txt", b"quadrants\n")]
    record = [record_line(name, data) for name, data in entries]
    record.append(f"{dist_info}/RECORD,,")
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(args.out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            executable = data.startswith(b"\x7fELF")
            info.external_attr = (0o755 if executable else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data, compresslevel=6)
    with open(args.name_out, "w") as f:
        f.write(f"quadrants-{args.version}-{tag}-{tag}-{platform}.whl\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
