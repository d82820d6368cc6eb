"""A line plot written as a PNG with only numpy and zlib (no plotting
library is needed to run the demo)."""
import struct
import zlib

import numpy as np

# A 3x5 bitmap font for the axis labels: digits, '.', 'e', '-' and '+'.
_GLYPHS = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111",
    "3": "111001111001111", "4": "101101111001001", "5": "111100111001111",
    "6": "111100111101111", "7": "111001001001001", "8": "111101111101111",
    "9": "111101111001111", ".": "000000000000010", "e": "000111101110011",
    "-": "000000111000000", "+": "000010111010000", " ": "000000000000000",
}


def _chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def encode_png(rgb):
    """PNG bytes of an (h, w, 3) uint8 image."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))
    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b""))


def _text(img, x, y, text, color, scale=2):
    for k, ch in enumerate(text):
        bits = _GLYPHS.get(ch, _GLYPHS[" "])
        for r in range(5):
            for c in range(3):
                if bits[r * 3 + c] == "1":
                    x0 = x + (k * 4 + c) * scale
                    y0 = y + r * scale
                    img[y0:y0 + scale, x0:x0 + scale] = color


def _line(img, x0, y0, x1, y1, color):
    n = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
    xs = np.linspace(x0, x1, n).round().astype(int)
    ys = np.linspace(y0, y1, n).round().astype(int)
    for dy in (0, 1):
        img[np.clip(ys + dy, 0, img.shape[0] - 1), np.clip(xs, 0, img.shape[1] - 1)] = color


def plot_log_curve(values, width=640, height=400):
    """An image of `values` (positive) against their index, log-scaled."""
    values = np.asarray(values, dtype=np.float64)
    if values.size < 2 or not np.all(values > 0):
        raise ValueError("plot_log_curve needs at least two positive values")
    img = np.full((height, width, 3), 255, dtype=np.uint8)
    left, right, top, bottom = 90, 20, 20, 40
    lo, hi = np.log10(values.min()), np.log10(values.max())
    if hi - lo < 1e-12:
        lo, hi = lo - 1, hi + 1
    px = left + np.arange(values.size) * (width - left - right) / (values.size - 1)
    py = top + (hi - np.log10(values)) * (height - top - bottom) / (hi - lo)
    black, blue = (0, 0, 0), (30, 90, 200)
    _line(img, left, top, left, height - bottom, black)
    _line(img, left, height - bottom, width - right, height - bottom, black)
    for k in range(values.size - 1):
        _line(img, px[k], py[k], px[k + 1], py[k + 1], blue)
    _text(img, 4, top, f"{values.max():.1e}", black)
    _text(img, 4, height - bottom - 10, f"{values.min():.1e}", black)
    _text(img, left, height - bottom + 10, "0", black)
    _text(img, width - right - 30, height - bottom + 10, str(values.size - 1), black)
    return img


def write_log_curve_png(path, values):
    with open(path, "wb") as f:
        f.write(encode_png(plot_log_curve(values)))
