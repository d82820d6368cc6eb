"""examples/newton_cg.py: Newton's method with CG on qd.ad.hvp products."""
import numpy as np

import quadrants as qd
from tests.python.example_loader import load_example


def test_the_chain_reaches_a_symmetric_equilibrium_quadratically():
    example = load_example("newton_cg")
    try:
        history, values = example.main(["--nodes", "20"])
    finally:
        qd.reset()
    norms = [norm for _, norm in history]
    assert norms[-1] < 1e-8 and len(history) <= 10
    # Quadratic convergence at the end: each step squares the (scaled) error.
    assert norms[-1] < 10 * norms[-2] ** 2 / norms[0]
    energies = [e for e, _ in history]
    assert all(b <= a for a, b in zip(energies, energies[1:]))
    # The anchors are level, so the equilibrium is mirror-symmetric: node i
    # and node N-1-i have x summing to the span and the same y.
    x, y = values[0::2], values[1::2]
    np.testing.assert_allclose(x + x[::-1], example.SPAN, atol=1e-7)
    np.testing.assert_allclose(y, y[::-1], atol=1e-7)
    assert y.min() < -0.1  # it sags
