"""qd.random(dtype=float): uniform numbers from per-iteration streams seeded by
qd.init(random_seed=...).

Statistical bounds are five standard errors of n = 1e5 samples, so a correct
generator fails one of them with probability below 1e-6:
- U[0, 1) has mean 1/2 and variance 1/12; the sample mean's standard error
  is sqrt(1/12 / n) = 9.1e-4 (bound 4.6e-3); the sample variance's is
  sqrt((mu4 - sigma^4) / n) with mu4 = 1/80, i.e. 2.4e-4 (bound 1.2e-3);
- a uniform i32 scaled by 2^-31 is U[-1, 1): mean 0, standard error
  sqrt(1/3 / n) = 1.8e-3 (bound 9.2e-3); each bit is set with probability
  1/2, standard error sqrt(1/4 / n) = 1.6e-3 (bound 8e-3);
- the correlation of two independent draws has standard error 1/sqrt(n)
  = 3.2e-3 (bound 1.6e-2).
"""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

N = 100_000


def _numpy(dtype):
    return {qd.f32: np.float32, qd.f64: np.float64, qd.i32: np.int32, qd.u32: np.uint32,
            qd.u1: np.bool_, qd.f16: np.float16, qd.i64: np.int64}[dtype]


def _samples(dtype, n=N):
    out = np.zeros(n, dtype=_numpy(dtype))

    @qd.kernel
    def fill(a: qd.types.ndarray()):
        for i in range(a.shape[0]):
            a[i] = qd.random(dtype)

    fill(out)
    return out


def _check_unit_uniform(a):
    a = a.astype(np.float64)
    assert a.min() >= 0.0 and a.max() < 1.0
    assert abs(a.mean() - 0.5) < 4.6e-3
    assert abs(a.var() - 1 / 12) < 1.2e-3


@test_utils.test()
def test_f32_uniform_in_unit_interval():
    a = _samples(qd.f32)
    _check_unit_uniform(a)
    # f32 values are k / 2^24.
    assert np.all(a * 2.0**24 == np.floor(a * 2.0**24))


@test_utils.test()
def test_default_dtype_is_default_fp():
    out = np.zeros(N, dtype=np.float32)

    @qd.kernel
    def fill(a: qd.types.ndarray()):
        for i in range(a.shape[0]):
            a[i] = qd.random()

    fill(out)
    _check_unit_uniform(out)


@test_utils.test(default_fp=qd.f64)
def test_f64_and_float_follow_default_fp():
    out = np.zeros(N, dtype=np.float64)

    @qd.kernel
    def fill(a: qd.types.ndarray(qd.f64, 1)):
        for i in range(a.shape[0]):
            a[i] = qd.random(float)

    fill(out)
    _check_unit_uniform(out)
    # 53 random bits, not an f32 widened.
    assert np.mean(out * 2.0**24 != np.floor(out * 2.0**24)) > 0.99
    _check_unit_uniform(_samples(qd.f64))


@test_utils.test()
def test_f16_uniform_in_unit_interval():
    a = _samples(qd.f16)
    assert a.max() < 1.0
    _check_unit_uniform(a)


@test_utils.test()
def test_i32_covers_the_whole_range():
    a = _samples(qd.i32)
    scaled = a.astype(np.float64) / 2.0**31
    assert abs(scaled.mean()) < 9.2e-3
    assert scaled.min() < -0.99 and scaled.max() > 0.99
    bits = (a.view(np.uint32)[:, None] >> np.arange(32, dtype=np.uint32)) & 1
    assert np.all(np.abs(bits.mean(axis=0) - 0.5) < 8e-3)


@test_utils.test()
def test_u32_and_u1():
    u = _samples(qd.u32).astype(np.float64) / 2.0**32
    assert abs(u.mean() - 0.5) < 4.6e-3
    b = _samples(qd.u1)
    assert abs(b.mean() - 0.5) < 8e-3


@test_utils.test()
def test_draws_within_an_iteration_are_independent():
    a = np.zeros(N, np.float32)
    b = np.zeros(N, np.float32)

    @qd.kernel
    def fill(x: qd.types.ndarray(), y: qd.types.ndarray()):
        for i in range(x.shape[0]):
            x[i] = qd.random()
            y[i] = qd.random()

    fill(a, b)
    assert abs(np.corrcoef(a, b)[0, 1]) < 1.6e-2
    # Neighbouring iterations are independent too.
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < 1.6e-2


def _run(seed, threads, launches=2):
    qd.init(arch=qd.cpu, random_seed=seed, cpu_max_num_threads=threads)
    out = np.zeros((launches, 10_000), np.float32)
    serial = np.zeros(launches, np.float64)

    @qd.func
    def draw():
        return qd.random(qd.f32)

    @qd.kernel
    def fill(a: qd.types.ndarray(), s: qd.types.ndarray(), row: qd.i32):
        s[row] = qd.random(qd.f64)  # the kernel's serial part
        for i in range(a.shape[1]):
            acc = 0.0
            for _ in range(3):  # inner serial loop: one stream per iteration
                acc += draw()
            a[row, i] = acc

    for row in range(launches):
        fill(out, serial, row)
    qd.reset()
    return out, serial


def test_same_seed_same_numbers_different_seed_different():
    a, sa = _run(seed=7, threads=4)
    b, sb = _run(seed=7, threads=4)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(sa, sb)
    # The streams do not depend on which thread runs an iteration.
    c, sc = _run(seed=7, threads=1)
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(sa, sc)
    d, sd = _run(seed=8, threads=4)
    assert np.mean(a == d) < 0.01 and np.all(sa != sd)
    # Each launch draws new numbers.
    assert np.mean(a[0] == a[1]) < 0.01 and sa[0] != sa[1]


@test_utils.test()
def test_bad_dtype_is_a_type_error():
    @qd.kernel
    def bad():
        for i in range(2):
            print(qd.random("no such type"))

    with pytest.raises(qd.QuadrantsTypeError,
                       match=r"(?s)test_random.py:\d+: in kernel 'bad'.*qd.random\(dtype\)"):
        bad()
    with pytest.raises(qd.QuadrantsSyntaxError, match="kernel code"):
        qd.random()


@test_utils.test()
def test_differentiating_a_kernel_that_draws_is_an_error():
    x = qd.field(qd.f32, shape=8, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def noisy():
        for i in x:
            loss[None] += x[i] * qd.random()

    noisy()  # the forward kernel runs
    with pytest.raises(qd.QuadrantsCompilationError,
                       match=r"(?s)test_random.py:\d+: in kernel 'noisy':.*qd.random\(\) cannot "
                             r"be used in a kernel that is differentiated"):
        noisy.grad()
    # Upstream raises a RuntimeError here; ours is both kinds of error.
    with pytest.raises(RuntimeError, match="qd.random"):
        with qd.ad.Tape(loss=loss):
            noisy()
