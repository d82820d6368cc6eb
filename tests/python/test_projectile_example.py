"""examples/projectile.py: a @qd.data_oriented class optimized through Tape."""
import importlib.util
import os
import re

import quadrants as qd

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_projectile_volley_is_aimed_and_a_gradient_checks(capsys):
    example = _load("projectile")
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
