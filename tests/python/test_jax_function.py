"""qd.ad.jax_function: kernels as JAX functions, checked against JAX's own
autodiff of the same computation written in jax.numpy: values and
jax.grad, under jax.jit and jax.vmap, zero copies (the kernel is given the
JAX buffer's own memory), the argument checks, and the ImportError without
JAX. JAX is not a Debian package: without it these tests skip (CI), and
they run on the GPU machine, on cpu and cuda (vulkan copies)."""
import os
import sys

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import jax_interop, runtime
from quadrants.lang.exception import QuadrantsRuntimeError, QuadrantsTypeError
from tests import test_utils

# JAX would otherwise take most of the GPU's memory at its first array.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

STEPS = np.array([0, 3, 7, 12, 5, 1], dtype=np.int32)


def _jax():
    return pytest.importorskip("jax", reason="JAX is not installed here (not a Debian "
                                              "package); these tests run where it is")


def _device(jax):
    """The JAX device whose memory this session's kernels address."""
    if runtime.state.arch == qd.cuda:
        gpus = [d for d in jax.devices() if d.platform == "gpu"] if \
            jax.default_backend() == "gpu" else []
        if not gpus:
            pytest.skip("JAX has no CUDA device here")
        return gpus[0]
    return jax.devices("cpu")[0]


def _put(jax, value, dtype):
    return jax.device_put(np.asarray(value, dtype=dtype), _device(jax))


def _recurrence_kernel():
    @qd.kernel
    def recurrence(x: qd.types.ndarray(qd.f32, 1), steps: qd.types.ndarray(qd.i32, 1),
                   a: qd.f32, out: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            v = x[i]
            for _ in range(steps[i]):  # a launch-time trip count: the adstack
                v = qd.sin(v) * a + x[i]
            out[i] += v * v

    return recurrence


def _recurrence_reference(jax, x, steps, a, out):
    jnp = jax.numpy

    def body(k, v):
        return jnp.where(k < steps, jnp.sin(v) * a + x, v)

    v = jax.lax.fori_loop(0, int(STEPS.max()), body, x)
    return out + v * v


def _inputs(jax, seed=0):
    rng = np.random.default_rng(seed)
    x = _put(jax, rng.uniform(-1.0, 1.0, len(STEPS)), np.float32)
    out = _put(jax, rng.uniform(-0.5, 0.5, len(STEPS)), np.float32)
    return x, _put(jax, STEPS, np.int32), out


ADSTACK = dict(require=qd.extension.adstack, ad_stack_experimental_enabled=True)

# f32 throughout: a dozen steps of sin and multiply-add, so a few ulps of
# rounding per step, compared with XLA's f32 evaluation of the same steps.
RTOL, ATOL = 2e-5, 1e-6


@test_utils.test(arch=[qd.cpu, qd.cuda, qd.vulkan], **ADSTACK)
def test_values_and_jax_grad_match_jax_autodiff():
    jax = _jax()
    layer = qd.ad.jax_function(_recurrence_kernel(), outputs="out")
    x, steps, out = _inputs(jax)

    def loss(fn, x, out):
        return (fn(x, steps, 0.9, out) ** 2).sum()

    def reference(x, steps, a, out):
        return _recurrence_reference(jax, x, steps, a, out)

    np.testing.assert_allclose(layer(x, steps, 0.9, out), reference(x, steps, 0.9, out),
                               rtol=RTOL, atol=ATOL)
    grads = jax.grad(lambda x, o: loss(layer, x, o), argnums=(0, 1))(x, out)
    expected = jax.grad(lambda x, o: loss(reference, x, o), argnums=(0, 1))(x, out)
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert np.abs(np.asarray(grads[0])).max() > 0.1
    np.testing.assert_array_equal(np.asarray(out), np.asarray(_inputs(jax)[2]))  # unchanged
    # Host arrays go where the kernels run.
    np.testing.assert_allclose(layer(np.asarray(x), np.asarray(steps), 0.9, np.asarray(out)),
                               reference(x, steps, 0.9, out), rtol=RTOL, atol=ATOL)


@test_utils.test(arch=[qd.cpu, qd.cuda], **ADSTACK)
def test_under_jit_value_and_grad():
    jax = _jax()
    layer = qd.ad.jax_function(_recurrence_kernel(), outputs="out")
    x, steps, out = _inputs(jax, seed=1)

    @jax.jit
    def step(x, out):
        return jax.value_and_grad(lambda x: (layer(x, steps, 0.7, out) ** 2).sum())(x)

    def reference(x):
        return (_recurrence_reference(jax, x, steps, 0.7, out) ** 2).sum()

    for _ in range(2):  # the second call replays the compiled program
        value, grad = step(x, out)
        np.testing.assert_allclose(value, reference(x), rtol=RTOL)
        np.testing.assert_allclose(grad, jax.grad(reference)(x), rtol=1e-4, atol=1e-5)
        x = x - 0.1 * grad


@test_utils.test(arch=[qd.cpu, qd.cuda], **ADSTACK)
def test_the_kernel_is_given_the_jax_buffers_memory(monkeypatch):
    jax = _jax()
    layer = qd.ad.jax_function(_recurrence_kernel(), outputs="out")
    x, steps, out = _inputs(jax)
    seen = []
    original = jax_interop.ndarray_module.from_dlpack

    def recording(buffer):
        if runtime.state.arch == qd.cuda:
            seen.append(buffer.__cuda_array_interface__["data"][0])
        else:
            seen.append(np.asarray(buffer).__array_interface__["data"][0])
        return original(buffer)  # a qd.ndarray over that memory (DLPack)

    monkeypatch.setattr(jax_interop.ndarray_module, "from_dlpack", recording)
    layer(x, steps, 0.9, out).block_until_ready()
    assert x.unsafe_buffer_pointer() in seen  # x's memory itself, no copy
    assert steps.unsafe_buffer_pointer() in seen


@test_utils.test(arch=[qd.cpu, qd.cuda], **ADSTACK)
def test_vmap_over_a_leading_batch_axis():
    jax = _jax()
    layer = qd.ad.jax_function(_recurrence_kernel(), outputs="out")
    rng = np.random.default_rng(3)
    xs = _put(jax, rng.uniform(-1, 1, (3, len(STEPS))), np.float32)
    outs = _put(jax, np.zeros((3, len(STEPS))), np.float32)
    steps = _put(jax, STEPS, np.int32)
    batched = jax.vmap(lambda x, o: layer(x, steps, 0.8, o))(xs, outs)
    for b in range(3):
        np.testing.assert_allclose(batched[b], layer(xs[b], steps, 0.8, outs[b]), rtol=1e-6)
    grads = jax.grad(lambda xs: jax.vmap(lambda x, o: layer(x, steps, 0.8, o))(xs, outs).sum())(xs)
    expected = jax.grad(lambda xs: _recurrence_reference(jax, xs, steps, 0.8, outs).sum())(xs)
    np.testing.assert_allclose(grads, expected, rtol=1e-4, atol=1e-5)


@test_utils.test(arch=[qd.cpu, qd.cuda])
def test_two_outputs_and_a_vector_element_type():
    jax = _jax()

    @qd.kernel
    def split(p: qd.types.ndarray(qd.math.vec2, 1), norm: qd.types.ndarray(qd.f32, 1),
              scaled: qd.types.ndarray(qd.math.vec2, 1)):
        for i in range(p.shape[0]):
            norm[i] = p[i].norm()
            scaled[i] = p[i] * norm[i]

    layer = qd.ad.jax_function(split, outputs=("norm", "scaled"))
    p = _put(jax, np.random.default_rng(4).uniform(0.5, 1.5, (5, 2)), np.float32)
    norm, scaled = layer(p, _put(jax, np.zeros(5), np.float32),
                         _put(jax, np.zeros((5, 2)), np.float32))
    jnp = jax.numpy
    np.testing.assert_allclose(norm, jnp.linalg.norm(p, axis=1), rtol=1e-6)
    np.testing.assert_allclose(scaled, p * jnp.linalg.norm(p, axis=1)[:, None], rtol=1e-6)

    def loss(fn):
        def f(p):
            n, s = fn(p)
            return (n * 3.0).sum() + (s ** 2).sum()
        return f

    zeros_n, zeros_s = _put(jax, np.zeros(5), np.float32), _put(jax, np.zeros((5, 2)), np.float32)
    got = jax.grad(loss(lambda p: layer(p, zeros_n, zeros_s)))(p)
    want = jax.grad(loss(lambda p: (jnp.linalg.norm(p, axis=1),
                                    p * jnp.linalg.norm(p, axis=1)[:, None])))(p)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@test_utils.test(arch=[qd.cpu])
def test_arguments_are_checked_by_name_before_xla_runs():
    jax = _jax()
    layer = qd.ad.jax_function(_recurrence_kernel(), outputs="out")
    x, steps, out = _inputs(jax)
    with pytest.raises(QuadrantsTypeError, match=r"argument 'x'.*f32.*i32"):
        layer(steps, steps, 0.9, out)
    with pytest.raises(Exception, match=r"argument 'out'.*1 dimensions, got 2"):
        layer(x, steps, 0.9, out.reshape(2, 3))
    with pytest.raises(QuadrantsTypeError, match=r"argument 'a' is not an ndarray parameter"):
        layer(x, steps, jax.numpy.float32(0.9), out)
    with pytest.raises(QuadrantsTypeError, match=r"takes 4 arguments"):
        layer(x, steps, out)
    with pytest.raises(QuadrantsTypeError, match=r"outputs \['a'\] must name"):
        qd.ad.jax_function(_recurrence_kernel(), outputs="a")
    with pytest.raises(QuadrantsTypeError, match=r"each once"):
        qd.ad.jax_function(_recurrence_kernel(), outputs=("out", "out"))


@test_utils.test(arch=[qd.cuda])
def test_a_host_array_for_a_cuda_session_is_refused_by_name():
    jax = _jax()
    _device(jax)
    layer = qd.ad.jax_function(_recurrence_kernel(), outputs="out")
    cpu = jax.devices("cpu")[0]
    x = jax.device_put(np.zeros(len(STEPS), np.float32), cpu)
    steps = jax.device_put(STEPS, cpu)
    with pytest.raises(QuadrantsRuntimeError, match=r"argument 'x'.*cpu.*cuda"):
        layer(x, steps, 0.9, jax.device_put(np.zeros(len(STEPS), np.float32), cpu))


@test_utils.test(arch=[qd.cpu])
def test_without_jax_an_import_error_names_jax(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)  # `import jax` now fails
    with pytest.raises(ImportError, match="needs JAX"):
        qd.ad.jax_function(_recurrence_kernel(), outputs="out")
