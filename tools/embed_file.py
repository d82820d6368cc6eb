"""Writes a C++ header that holds a file's bytes.

usage: embed_file.py INPUT OUTPUT SYMBOL
"""
import sys


def main() -> int:
    src, out, symbol = sys.argv[1:4]
    data = open(src, "rb").read()
    lines = []
    for start in range(0, len(data), 16):
        chunk = data[start:start + 16]
        lines.append("  " + ", ".join(f"0x{b:02x}" for b in chunk) + ",")
    guard = "QD_EMBED_" + symbol.upper() + "_H_"
    with open(out, "w") as f:
        f.write(f"#ifndef {guard}\n#define {guard}\n\n#include <cstddef>\n\n")
        f.write(f"// Embedded at build time from {src}; the array has a\n")
        f.write("// trailing zero so text payloads read as C strings.\n")
        f.write(f"inline constexpr unsigned char {symbol}[] = {{\n")
        f.write("\n".join(lines))
        f.write("\n  0x00,\n};\n")
        f.write(f"inline constexpr std::size_t {symbol}_size = {len(data)};\n\n")
        f.write(f"#endif  // {guard}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
