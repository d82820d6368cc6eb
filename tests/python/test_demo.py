"""The main demo (examples/pendulum_control.py): gradient descent through
adstack-backed dynamic loops, a finite-difference check and a PNG plot."""
import importlib.util
import os
import re
import struct
import zlib

import numpy as np

import quadrants as qd

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _decode_png(data):
    """(width, height, rgb array) of an 8-bit RGB PNG, checking every CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + body), kind
        chunks[kind] = chunks.get(kind, b"") + body
        pos += 12 + length
    w, h, depth, color, _, _, _ = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, color) == (8, 2)
    raw = zlib.decompress(chunks[b"IDAT"])
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(h, 1 + 3 * w)
    assert (rows[:, 0] == 0).all()  # filter type "none" on every row
    return w, h, rows[:, 1:].reshape(h, w, 3)


def test_png_round_trip():
    png_plot = _load("png_plot")
    image = np.random.default_rng(0).integers(0, 256, size=(7, 5, 3), dtype=np.uint8)
    w, h, decoded = _decode_png(png_plot.encode_png(image))
    assert (w, h) == (5, 7)
    np.testing.assert_array_equal(decoded, image)


def test_demo_optimizes_checks_a_gradient_and_plots(tmp_path, capsys):
    demo = _load("pendulum_control")
    plot = tmp_path / "loss.png"
    try:
        history, rel = demo.main(["--iterations", "30", "--plot", str(plot)])
    finally:
        qd.reset()
    out = capsys.readouterr().out
    losses = [float(v) for v in re.findall(r"iteration +\d+ +loss (\S+)", out)]
    assert losses == [float(f"{v:.6e}") for v in history] and len(losses) == 30
    assert all(b < a for a, b in zip(losses, losses[1:]))
    assert losses[-1] < losses[0] * 1e-2
    # f64 central differences with h = 1e-6 on an O(1e-2) loss: round-off
    # ~1e-16 * 1e-2 / 1e-6 = 1e-12 against a gradient of ~1e-3.
    assert rel < 1e-6
    match = re.search(r"relative difference (\S+)", out)
    assert match and float(match.group(1)) < 1e-6
    assert f"written to {plot}" in out
    w, h, image = _decode_png(plot.read_bytes())
    assert (w, h) == (640, 400)
    curve = (image[:, :, 2] > 150) & (image[:, :, 0] < 100)
    assert curve.sum() > 300  # the blue loss curve was drawn
