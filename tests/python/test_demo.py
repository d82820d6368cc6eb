"""The main demo (examples/pendulum_control.py): gradient descent through
adstack-backed dynamic loops, a finite-difference check and a matplotlib plot."""
import re
import sys

import numpy as np
import pytest

import quadrants as qd
from tests.python.example_loader import load_example


def _read_png(path):
    """(height, width, rgb floats in [0, 1]) of a PNG file, via matplotlib."""
    import matplotlib.image  # pylint: disable=import-outside-toplevel
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(path)
    return image.shape[0], image.shape[1], image[:, :, :3]


def test_plot_is_skipped_with_a_reason_without_matplotlib(tmp_path, monkeypatch):
    loss_plot = load_example("loss_plot")
    for name in ("matplotlib", "matplotlib.pyplot"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    reason = loss_plot.save_loss_curve(str(tmp_path / "x.png"), [1.0, 0.5], "t")
    assert "python3-matplotlib" in reason
    assert not (tmp_path / "x.png").exists()


def test_demo_optimizes_checks_a_gradient_and_plots(tmp_path, capsys):
    demo = load_example("pendulum_control")
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
    try:
        import matplotlib  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        # A bundle without matplotlib (tools/gpu_suite.sh) still runs the demo.
        assert "loss curve skipped: matplotlib is not importable" in out
        pytest.skip("matplotlib is not importable here: the plot checks need it")
    assert f"written to {plot}" in out
    h, w, image = _read_png(str(plot))
    assert (w, h) == (640, 400)
    # matplotlib's default blue (31, 119, 180) marks the drawn loss curve.
    blue = np.abs(image - np.array([31, 119, 180]) / 255.0).max(axis=2) < 0.08
    assert blue.sum() > 300
