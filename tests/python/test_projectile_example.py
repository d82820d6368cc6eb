"""examples/projectile.py: a @qd.data_oriented class optimized through Tape."""
import re

import quadrants as qd
from tests.python.example_loader import load_example


def test_projectile_volley_is_aimed_and_a_gradient_checks(capsys):
    example = load_example("projectile")
    try:
        history, final, rel = example.main(["--iterations", "30"])
    finally:
        qd.reset()
    out = capsys.readouterr().out
    losses = [float(v) for v in re.findall(r"iteration +\d+ +loss (\S+)", out)]
    assert losses == [float(f"{v:.6e}") for v in history] and len(losses) == 30
    # The volley starts metres off its targets; gradient descent lands every
    # projectile within a millimetre (mean squared miss below 1e-6 m^2).
    assert history[0] > 10.0
    assert final < 1e-6
    # The Tape gradient agrees with f64 central differences (h = 1e-6:
    # truncation ~1e-12, round-off ~1e-10 relative to a gradient of order 1).
    assert rel < 1e-7
    assert re.search(r"highest of the first four \d+\.\d+", out)
