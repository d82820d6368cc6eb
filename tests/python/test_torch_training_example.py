"""examples/torch_training.py: a torch controller trained through a
Quadrants kernel wrapped by qd.ad.torch_function."""
import re

import pytest

import quadrants as qd
from tests.python.example_loader import load_example

pytest.importorskip("torch")


def test_loss_falls_below_a_tenth_in_30_iterations(capsys):
    example = load_example("torch_training")
    try:
        losses = example.main(["--iterations", "30"])
    finally:
        qd.reset()
    out = capsys.readouterr().out
    printed = [float(v) for v in re.findall(r"iteration +\d+ +loss (\S+)", out)]
    assert len(printed) == 30 and printed == [float(f"{v:.6e}") for v in losses]
    # The environments start about a metre from their goals; the controller
    # learns the force per unit distance for each horizon.
    assert losses[0] > 0.5
    assert losses[-1] < losses[0] / 10
