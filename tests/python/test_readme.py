"""The README's Python snippets run as written and compute what they say.

Fragments (snippets that use names defined elsewhere) get a small prelude;
every snippet's own lines run unchanged. The shell commands in the README are
run by their own tests: `./qd demo` by test_demo, `./qd test` by CI itself,
the fuzzer command by test_gradfuzz, the GPU-suite commands by
tools/gpu_suite_selftest.sh, examples/bazel_consumer/run.sh by ./qd test
(tools/run_tests.py), whose workspace holds the Starlark and .bazelrc
snippets.
"""
import math
import os
import re
import runpy

import numpy as np
import pytest

import quadrants as qd

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")


def _snippets():
    with open(README) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def _snippet(first_line_part):
    """The one README snippet containing `first_line_part`."""
    found = [s for s in _snippets() if first_line_part in s]
    assert len(found) == 1, f"README: {len(found)} snippets contain {first_line_part!r}"
    return found[0]


def _run(tmp_path, code, prelude=""):
    """Runs prelude + code as a module file, so kernels find their source."""
    path = tmp_path / "readme_snippet.py"
    path.write_text("import numpy as np\nimport quadrants as qd\n" + prelude + code)
    return runpy.run_path(str(path))


@pytest.fixture(autouse=True)
def _fresh_runtime():
    yield
    qd.reset()


def test_every_python_snippet_is_covered():
    assert len(_snippets()) == 8


def test_first_kernel_saxpy(tmp_path):
    ns = _run(tmp_path, _snippet("def saxpy"))
    np.testing.assert_array_equal(ns["y"], 2.0 * np.arange(8, dtype=np.float32) + 1.0)


def test_dynamic_loop_gradient(tmp_path):
    ns = _run(tmp_path, _snippet("def simulate(steps"))
    # d v_100 / d v_0 for v <- 0.9 sin(v) + 0.1 from v_0 = 0, in f64.
    v, d = 0.0, 1.0
    for _ in range(100):
        d *= 0.9 * math.cos(v)
        v = 0.9 * math.sin(v) + 0.1
    # f32 chain of 100 steps: each step rounds at ~6e-8 relative.
    np.testing.assert_allclose(ns["x"].grad.to_numpy(), np.full(16, d), rtol=1e-4)


def test_time_indexed_fields_fragment(tmp_path):
    prelude = "qd.init(arch=qd.cpu)\nsteps, n, dt = 5, 4, 0.1\n"
    ns = _run(tmp_path, _snippet("def step(t"), prelude)
    x0 = np.linspace(0.5, 1.0, 4)
    ns["x"].from_numpy(np.vstack([x0, np.zeros((5, 4))]))
    for t in range(5):
        ns["step"](t)
    x, v = x0.copy(), np.zeros(4)
    for _ in range(5):
        v = v - 0.1 * x
        x = x + 0.1 * v
    np.testing.assert_allclose(ns["x"].to_numpy()[5], x, rtol=1e-12)
    np.testing.assert_allclose(ns["v"].to_numpy()[5], v, rtol=1e-12)


def test_forward_mode_fragment(tmp_path):
    prelude = ("qd.init(arch=qd.cpu)\n"
               "@qd.kernel\n"
               "def compute():\n"
               "    loss[None] = 3.0 * qd.sin(x[0]) + x[1] * x[2]\n")
    ns = _run(tmp_path, _snippet("qd.ad.FwdMode"), prelude)
    # d loss / d x[0] at x = 0 is 3 cos(0).
    assert ns["loss"].dual[None] == pytest.approx(3.0, rel=1e-6)


def test_vectors_and_matrices_fragment(tmp_path):
    prelude = ("qd.init(arch=qd.cpu, ad_stack_experimental_enabled=True)\n"
               "n, dt = 4, 0.1\n"
               "steps = qd.field(qd.i32, shape=())\n")
    ns = _run(tmp_path, _snippet("def advance("), prelude)
    c, s = math.cos(0.3), math.sin(0.3)
    rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    x0 = np.arange(12).reshape(4, 3) / 7 + 0.5
    v = np.array([0.1, 0.2, 0.3])
    ns["steps"][None] = 3
    ns["R"].from_numpy(rot.astype(np.float32))
    ns["x"].from_numpy(x0.astype(np.float32))
    assert ns["x"].to_numpy().shape == (4, 3)
    a = np.zeros((4, 3), dtype=np.float32)
    ns["advance"](ns["vec3"](*v), a)
    p = x0.copy()
    for _ in range(3):
        p = p @ rot.T + 0.1 * v
    want = p / np.linalg.norm(p, axis=1, keepdims=True) + np.cross(p, [0, 0, 1])
    # f32: three rotations and a normalization, each a few ulps of O(1) values.
    np.testing.assert_allclose(a, want, rtol=1e-5, atol=1e-5)


def test_data_oriented_fragment(tmp_path):
    prelude = "qd.init(arch=qd.cpu)\n"
    ns = _run(tmp_path, _snippet("class Cloud"), prelude)
    c = ns["c"]
    x = np.linspace(-1, 1, 100).astype(np.float32)
    # The Tape ran on zeros: the gradient of sum(x^2) there is zero.
    np.testing.assert_array_equal(c.x.grad.to_numpy(), np.zeros(100))
    c.x.from_numpy(x)
    with qd.ad.Tape(loss=c.energy):
        c.compute()
    np.testing.assert_allclose(c.x.grad.to_numpy(), 2 * x, rtol=1e-6)
    assert c.mean() == pytest.approx(float(np.mean(x.astype(np.float64))), abs=1e-6)


def test_sparse_fragment(tmp_path):
    # The fragment lays out and relaxes; the test activates two blocks and
    # checks that only their cells changed.
    code = _snippet("qd.root.pointer(qd.ij, 64)")
    scope = _run(tmp_path, code, prelude="qd.init(arch=qd.cpu)\n")
    x = scope["x"]
    x[3, 5] = 2.0
    x[900, 1] = 4.0
    scope["relax"]()
    values = x.to_numpy()
    assert values[3, 5] == 2.0 and values[900, 1] == 3.0
    # The rest of the two active 16 x 16 blocks went from 0 to 1.
    assert values.sum() == 2.0 + 3.0 + (2 * 256 - 2) * 1.0
    assert x.grad.snode.parent() == x.snode.parent()


def test_offline_cache_lines(tmp_path):
    code = _snippet("offline_cache_file_path").replace("/tmp/my_cache", str(tmp_path))
    ns = _run(tmp_path, "stats = " + code.rstrip().splitlines()[-1].split("#")[0] + "\n",
              "\n".join(code.splitlines()[:2]) + "\n")
    assert {"directory", "hits", "misses"} <= set(ns["stats"])
