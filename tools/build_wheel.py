"""Builds the quadrants wheel from the package sources and the core module.

usage: build_wheel.py --out WHEEL --version V FILE...

Each FILE's path inside the wheel is what follows "quadrants/python/" in
its path (sources and Bazel outputs alike).
"""
import argparse
import base64
import hashlib
import sys
import zipfile

MARKER = "quadrants/python/"


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{name},sha256={digest.decode()},{len(data)}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    dist_info = f"quadrants-{args.version}.dist-info"
    entries = []
    for path in args.files:
        index = path.rfind(MARKER)
        if index < 0:
            raise SystemExit(f"{path} is not under {MARKER}")
        with open(path, "rb") as f:
            entries.append((path[index + len(MARKER):], f.read()))
    metadata = (f"Metadata-Version: 2.1\nName: quadrants\nVersion: {args.version}\n"
                "Summary: A differentiable kernel compiler with reverse-mode autodiff "
                "through dynamic loops\nRequires-Python: >=3.11\nRequires-Dist: numpy\n")
    wheel = (f"Wheel-Version: 1.0\nGenerator: quadrants build_wheel.py\n"
             f"Root-Is-Purelib: false\nTag: {tag}-{tag}-linux_x86_64\n")
    entries += [(f"{dist_info}/METADATA", metadata.encode()),
                (f"{dist_info}/WHEEL", wheel.encode()),
                (f"{dist_info}/top_level.txt", b"quadrants\n")]
    record = [record_line(name, data) for name, data in entries]
    record.append(f"{dist_info}/RECORD,,")
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(args.out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
