"""examples/mass_spring.py: gradient descent through time-indexed fields."""
import re

import quadrants as qd
from tests.python.example_loader import load_example


def test_mass_spring_learns_rest_lengths_and_checks_a_gradient(capsys):
    example = load_example("mass_spring")
    try:
        history, final, rel = example.main(["--iterations", "40"])
    finally:
        qd.reset()
    out = capsys.readouterr().out
    losses = [float(v) for v in re.findall(r"iteration +\d+ +loss (\S+)", out)]
    assert losses == [float(f"{v:.6e}") for v in history] and len(losses) == 40
    # The free end starts well off the target and gradient descent brings
    # it within 1e-2 of it (squared distance 1e-4 of the initial one).
    assert history[0] > 0.1
    assert final < 1e-4 * history[0]
    # The gradient the Tape returns agrees with f64 central differences
    # (h = 1e-6: truncation ~1e-12, round-off ~1e-10 relative here).
    assert rel < 1e-7
