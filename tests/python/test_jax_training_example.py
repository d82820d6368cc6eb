"""examples/jax_training.py: a jax.numpy controller trained through a
Quadrants kernel wrapped by qd.ad.jax_function, the step under jax.jit."""
import re

import pytest

import quadrants as qd
from tests.python.example_loader import load_example


def test_loss_falls_below_a_tenth_in_30_iterations(capsys):
    pytest.importorskip("jax", reason="JAX is not installed here (not a Debian package)")
    example = load_example("jax_training")
    try:
        losses = example.main(["--iterations", "30"])
    finally:
        qd.reset()
    out = capsys.readouterr().out
    printed = [float(v) for v in re.findall(r"iteration +\d+ +loss (\S+)", out)]
    assert len(printed) == 30 and printed == [float(f"{v:.6e}") for v in losses]
    assert losses[0] > 0.1
    assert losses[-1] < losses[0] / 10
