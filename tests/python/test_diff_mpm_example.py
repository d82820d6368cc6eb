"""examples/diff_mpm.py: a differentiable MPM throw optimized by gradient
descent on its initial velocity."""
import re

import quadrants as qd
from tests.python.example_loader import load_example


def test_diff_mpm_reaches_the_target_and_checks_its_gradient(capsys):
    example = load_example("diff_mpm")
    try:
        history, final, rel = example.main(["--ci"])
    finally:
        qd.reset()
    out = capsys.readouterr().out
    assert "2304 particles" in out
    losses = [float(v) for v in re.findall(r"iteration +\d+ +loss (\S+)", out)]
    assert losses == [float(f"{v:.6e}") for v in history] and len(losses) == 12
    # The square starts far from the target (squared distance ~0.14) and
    # gradient descent on its initial velocity lands it there.
    assert history[0] > 0.1
    assert all(b < a for a, b in zip(history, history[1:]))
    assert final < 1e-8 * history[0]
    # The Tape gradient through 64 steps of P2G / grid / G2P (polar
    # decompositions, 2x2 matrices) agrees with f64 central differences
    # (h = 1e-5 on an O(1) velocity: truncation ~1e-10, round-off ~1e-11).
    assert rel < 1e-7
