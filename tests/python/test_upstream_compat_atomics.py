"""Upstream-compatibility of qd.atomic_mul, qd.atomic_exchange, qd.atomic_cas
and qd.global_thread_idx: returned old values, contention (many threads on
one element), local variables, literal conversion, error cases and their
behaviour under autodiff. The scenarios follow upstream's test_atomic and
test_global_thread_idx."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


# ---- qd.atomic_mul ------------------------------------------------------------

@test_utils.test()
def test_atomic_mul_in_a_parallel_loop_and_on_a_local():
    c = qd.field(qd.i32, shape=())

    @qd.kernel
    def repeat():
        c[None] = 1
        for _ in range(16):
            qd.atomic_mul(c[None], 2)

    result = qd.field(qd.f32, shape=())

    @qd.kernel
    def on_local():
        for _ in range(1):
            x = 1.0
            for i in range(1, 8):
                qd.atomic_mul(x, qd.f32(i))
            result[None] = x

    repeat()
    assert c[None] == 2 ** 16
    on_local()
    assert result[None] == 5040.0


@pytest.mark.parametrize("dtype", [qd.i32, qd.u32, qd.i64, qd.f32, qd.f64, qd.i16])
@test_utils.test()
def test_atomic_mul_under_contention(dtype):
    test_utils.skip_if_f64_unsupported(dtype)
    n = 4096
    doublings = min(dtype.bits - 2, 40)
    step = n // doublings
    out = qd.field(dtype, shape=())
    olds = qd.field(qd.f64, shape=n)
    out[None] = 1

    @qd.kernel
    def run():
        for i in range(n):
            factor = qd.cast(1, dtype)
            if i % step == 0 and i // step < doublings:
                factor = qd.cast(2, dtype)
            olds[i] = qd.cast(qd.atomic_mul(out[None], factor), qd.f64)

    run()
    assert out[None] == 2 ** doublings
    # Every thread saw a partial product, a power of two below the final
    # one; the doubling threads saw each of them once.
    exponents = np.log2(olds.to_numpy())
    assert set(exponents.tolist()) <= set(range(doublings + 1))
    doubling = [i for i in range(n) if i % step == 0 and i // step < doublings]
    assert sorted(exponents[doubling].tolist()) == list(range(doublings))


# ---- qd.atomic_exchange -------------------------------------------------------

@pytest.mark.parametrize("dtype", [qd.i32, qd.u32, qd.i64, qd.u64, qd.f32, qd.f64, qd.i8,
                                   qd.u16, qd.f16])
@test_utils.test()
def test_atomic_exchange_returns_the_old_value(dtype):
    test_utils.skip_if_f64_unsupported(dtype)
    f = qd.field(dtype, shape=())
    old = qd.field(dtype, shape=())
    f[None] = 7

    @qd.kernel
    def run():
        old[None] = qd.atomic_exchange(f[None], qd.cast(42, dtype))

    run()
    assert f[None] == 42 and old[None] == 7


@pytest.mark.parametrize("dtype", [qd.i32, qd.u32, qd.i64, qd.u64, qd.f32, qd.f64, qd.i16,
                                   qd.u8])
@test_utils.test()
def test_atomic_exchange_under_contention_loses_no_value(dtype):
    test_utils.skip_if_f64_unsupported(dtype)
    n = 255 if dtype.bits == 8 else 2048
    slot = qd.field(dtype, shape=())
    olds = qd.field(qd.i64, shape=n)
    slot[None] = 0

    @qd.kernel
    def run():
        for i in range(n):
            olds[i] = qd.cast(qd.atomic_exchange(slot[None], qd.cast(i + 1, dtype)), qd.i64)

    run()
    # The old values and the final one are the initial value and every
    # contribution, each exactly once.
    seen = sorted(olds.to_numpy().tolist() + [int(slot[None])])
    assert seen == list(range(n + 1))


@test_utils.test()
def test_atomic_exchange_fans_out_over_vectors_and_matrices():
    v = qd.Vector.field(3, qd.f32, shape=())
    m = qd.Matrix.field(2, 3, qd.f32, shape=())
    contrib = qd.Matrix([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])

    @qd.kernel
    def run():
        for _ in range(64):
            qd.atomic_exchange(v[None], qd.Vector([1.5, 2.5, 3.5]))
            qd.atomic_exchange(m[None], contrib)

    run()
    np.testing.assert_array_equal(v[None].to_numpy(), [1.5, 2.5, 3.5])
    np.testing.assert_array_equal(m[None].to_numpy(), contrib.to_numpy())


@test_utils.test()
def test_atomic_exchange_on_a_local_variable():
    n = 32
    x = qd.field(qd.i32, shape=n)
    y = qd.field(qd.i32, shape=n)

    @qd.kernel
    def run():
        for i in range(n):
            s = i
            x[i] = qd.atomic_exchange(s, 42)
            y[i] = qd.atomic_exchange(s, 43)

    run()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(n))
    np.testing.assert_array_equal(y.to_numpy(), np.full(n, 42))


# ---- qd.atomic_cas ------------------------------------------------------------

@pytest.mark.parametrize("dtype", [qd.i32, qd.u32, qd.i64, qd.u64, qd.i16, qd.u8])
@test_utils.test()
def test_atomic_cas_swaps_only_on_a_match(dtype):
    f = qd.field(dtype, shape=())
    out = qd.field(dtype, shape=2)
    f[None] = 7

    @qd.kernel
    def hit():
        out[0] = qd.atomic_cas(f[None], qd.cast(7, dtype), qd.cast(42, dtype))

    @qd.kernel
    def miss():
        out[1] = qd.atomic_cas(f[None], qd.cast(99, dtype), qd.cast(123, dtype))

    hit()
    assert out[0] == 7 and f[None] == 42
    miss()
    assert out[1] == 42 and f[None] == 42


@pytest.mark.parametrize("dtype", [qd.i32, qd.u32, qd.i64, qd.u64])
@test_utils.test()
def test_atomic_cas_under_contention_has_one_winner(dtype):
    n = 1024
    slot = qd.field(dtype, shape=())
    olds = qd.field(dtype, shape=n)

    @qd.kernel
    def run():
        for i in range(n):
            olds[i] = qd.atomic_cas(slot[None], qd.cast(0, dtype), qd.cast(i + 1, dtype))

    run()
    seen = olds.to_numpy()
    winners = np.flatnonzero(seen == 0)
    assert len(winners) == 1
    assert slot[None] == winners[0] + 1
    assert (np.delete(seen, winners) == winners[0] + 1).all()


@test_utils.test()
def test_atomic_cas_retry_loops_hand_out_every_ticket_once():
    n = 2048
    counter = qd.field(qd.i32, shape=())
    tickets = qd.field(qd.i32, shape=n)
    reference = qd.field(qd.i32, shape=())

    @qd.kernel
    def run():
        for i in range(n):
            qd.atomic_add(reference[None], 1)
            done = 0
            while done == 0:
                current = counter[None]
                if qd.atomic_cas(counter[None], current, current + 1) == current:
                    tickets[i] = current
                    done = 1

    run()
    assert counter[None] == reference[None] == n
    np.testing.assert_array_equal(np.sort(tickets.to_numpy()), np.arange(n))


@test_utils.test()
def test_atomic_cas_on_a_local_variable():
    n = 32
    x = qd.field(qd.i32, shape=n)
    y = qd.field(qd.i32, shape=n)

    @qd.kernel
    def run():
        for i in range(n):
            s = i
            x[i] = qd.atomic_cas(s, i, 100 + i)
            y[i] = qd.atomic_cas(s, -1, 999)

    run()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(n))
    np.testing.assert_array_equal(y.to_numpy(), 100 + np.arange(n))


@test_utils.test()
def test_atomic_cas_converts_literals_to_the_target_type():
    wide = qd.field(qd.i64, shape=())
    unsigned = qd.field(qd.u32, shape=())
    u64 = qd.field(qd.u64, shape=())
    out = qd.field(qd.i64, shape=3)
    wide[None] = 7
    unsigned[None] = 0xFFFFFFFF
    u64[None] = 0xFFFFFFFFFFFFFFFF

    @qd.kernel
    def run():
        out[0] = qd.atomic_cas(wide[None], 7, 42)
        out[1] = qd.cast(qd.atomic_cas(unsigned[None], -1, 0), qd.i64)
        out[2] = qd.cast(qd.atomic_cas(u64[None], -1, 5), qd.i64)

    run()
    assert wide[None] == 42 and out[0] == 7
    assert unsigned[None] == 0 and out[1] == 0xFFFFFFFF
    assert u64[None] == 5 and out[2] == -1


@test_utils.test()
def test_atomic_cas_on_ndarrays_and_vector_components():
    n = 128
    f = qd.Vector.field(3, qd.i32, shape=())
    f[None] = qd.Vector([10, 20, 30])
    out = qd.field(qd.i32, shape=3)

    @qd.kernel
    def claim(slot: qd.types.ndarray(), olds: qd.types.ndarray()):
        for i in range(n):
            olds[i] = qd.atomic_cas(slot[0], 0, i + 1)

    @qd.kernel
    def components():
        out[0] = qd.atomic_cas(f[None][0], 10, 100)
        out[1] = qd.atomic_cas(f[None][1], 21, 200)
        out[2] = qd.atomic_cas(f[None][2], 30, 300)

    slot = np.zeros(1, np.int32)
    olds = np.zeros(n, np.int32)
    claim(slot, olds)
    winners = np.flatnonzero(olds == 0)
    assert len(winners) == 1 and slot[0] == winners[0] + 1
    components()
    np.testing.assert_array_equal(out.to_numpy(), [10, 20, 30])
    np.testing.assert_array_equal(f[None].to_numpy(), [100, 20, 300])


@pytest.mark.parametrize("dtype", [qd.f32, qd.f64])
@test_utils.test()
def test_atomic_cas_on_floats_is_a_type_error(dtype):
    test_utils.skip_if_f64_unsupported(dtype)
    f = qd.field(dtype, shape=())

    @qd.kernel
    def run():
        qd.atomic_cas(f[None], qd.cast(0, dtype), qd.cast(1, dtype))

    with pytest.raises(qd.QuadrantsTypeError, match="atomic_cas"):
        run()


@test_utils.test()
def test_atomic_cas_needs_a_writable_scalar_target():
    f = qd.field(qd.i32, shape=())
    v = qd.Vector.field(3, qd.i32, shape=())

    @qd.kernel
    def raw_field():
        qd.atomic_cas(f, 0, 1)

    @qd.kernel
    def vector():
        qd.atomic_cas(v[None], qd.Vector([0, 0, 0]), qd.Vector([1, 1, 1]))

    with pytest.raises(qd.QuadrantsSyntaxError, match="non-writable target.*'atomic_cas'"):
        raw_field()
    with pytest.raises(qd.QuadrantsTypeError, match="scalar target"):
        vector()


# ---- qd.global_thread_idx -----------------------------------------------------

@test_utils.test()
def test_global_thread_idx_names_the_running_thread():
    n = 128
    x = qd.field(qd.i32, shape=n)
    serial = qd.field(qd.i32, shape=())

    @qd.kernel
    def run():
        serial[None] = qd.global_thread_idx()
        for i in range(n):
            x[i] = qd.global_thread_idx()

    serial[None] = -1
    run()
    ids = x.to_numpy()
    assert serial[None] == 0
    assert (ids >= 0).all() and (ids < n).all()
    if qd.lang.impl.current_cfg().arch == qd.vulkan:
        # One invocation per iteration: the index is the invocation's.
        np.testing.assert_array_equal(ids, np.arange(n))


@test_utils.test(arch=qd.cpu)
def test_global_thread_idx_only_in_kernels():
    with pytest.raises(qd.QuadrantsSyntaxError, match="kernel code"):
        qd.global_thread_idx()


# ---- autodiff -------------------------------------------------------------------

@pytest.mark.parametrize("op", ["atomic_mul", "atomic_exchange"])
@test_utils.test()
def test_float_atomic_mul_and_exchange_are_not_differentiable(op):
    x = qd.field(qd.f32, shape=4, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    fn = getattr(qd, op)

    @qd.kernel
    def compute():
        for i in x:
            fn(loss[None], x[i])

    compute()
    with pytest.raises(qd.QuadrantsCompilationError, match=f"{op} is not differentiable"):
        compute.grad()


@test_utils.test()
def test_global_thread_idx_in_a_differentiated_kernel_is_an_error():
    x = qd.field(qd.f32, shape=8, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def compute():
        for i in x:
            loss[None] += x[i] * qd.cast(qd.global_thread_idx(), qd.f32)

    compute()
    with pytest.raises(qd.QuadrantsCompilationError,
                       match="global_thread_idx.*cannot be used in a kernel that is "
                             "differentiated"):
        compute.grad()


@test_utils.test()
def test_f16_atomics_are_exact_and_reported_where_f16_is():
    if qd.cfg.arch == qd.vulkan:
        caps = qd.lang.impl.get_runtime().prog.get_device_caps()
        cap = qd._lib.core.DeviceCapability
        assert caps.get(cap.spirv_has_atomic_float16) == caps.get(cap.spirv_has_float16)
        if not caps.get(cap.spirv_has_float16):
            pytest.skip("the Vulkan device has no f16")
    total = qd.field(qd.f16, shape=(2,))
    low = qd.field(qd.f16, shape=())
    high = qd.field(qd.f16, shape=())
    low[None], high[None] = 100.0, -100.0

    @qd.kernel
    def run():
        for i in range(512):
            # Two f16 values share each 32-bit word: both halves update.
            qd.atomic_add(total[i % 2], qd.f16(0.25))
            qd.atomic_min(low[None], qd.f16(i % 37) - 3)
            qd.atomic_max(high[None], qd.f16(i % 41))

    run()
    assert list(total.to_numpy()) == [64.0, 64.0]
    assert low[None] == -3.0 and high[None] == 40.0


@test_utils.test()
def test_an_atomic_into_a_python_value_is_refused():
    @qd.kernel
    def into_list():
        y = qd.Vector([1, 2, 3])
        qd.atomic_min([3, 2, 1], y)

    @qd.kernel
    def into_constant():
        qd.atomic_add(5, 1)

    for kernel, name in ((into_list, "atomic_min"), (into_constant, "atomic_add")):
        with pytest.raises(qd.QuadrantsSyntaxError,
                           match=f"cannot use a non-writable target as the first operand of '{name}'"):
            kernel()
