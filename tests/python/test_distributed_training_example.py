"""examples/distributed_training.py on two CPU processes (gloo): the
all-reduced gradient equals one process's over every environment."""
import pytest

import quadrants as qd
from tests.python.example_loader import load_example

pytest.importorskip("torch")


def test_two_gloo_processes_reduce_to_the_single_process_gradient(capsys):
    example = load_example("distributed_training")
    try:
        rel = example.main(["--processes", "2", "--iterations", "2", "--check"])
    finally:
        qd.reset()
    out = capsys.readouterr().out
    assert "max relative difference" in out
    # f64 sums of the same terms in another order: rounding only.
    assert rel < 1e-6
