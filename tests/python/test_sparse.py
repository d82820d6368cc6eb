"""Sparse SNodes: pointer, bitmasked and dynamic levels, activation by
writes and by qd.activate, struct-for over the active cells (checked
against a numpy mask), deactivation back to zeros, concurrent append,
pool exhaustion, and gradients through sparse fields (also through an
adstack loop bounded by qd.length). Runs on every arch that declares
qd.extension.sparse (cpu and cuda)."""
import numpy as np
import pytest

import quadrants as qd

from tests import test_utils

SPARSE = qd.extension.sparse


@qd.kernel
def _active_cells(f: qd.template()) -> qd.i32:
    """How many cells a struct-for over field f visits."""
    n = 0
    for _ in qd.grouped(f):
        n += 1
    return n


def _mask(shape, seed, fraction):
    return np.random.default_rng(seed).random(shape) < fraction


# ---- one level of each kind ------------------------------------------------------------

@test_utils.test(require=SPARSE)
def test_pointer_cells_activate_on_write_and_struct_for_visits_exactly_them():
    x = qd.field(qd.f32)
    ptr = qd.root.pointer(qd.ij, (8, 6))
    ptr.dense(qd.ij, (4, 5)).place(x)
    blocks = _mask((8, 6), 1, 0.3)
    written = np.zeros((32, 30), bool)
    for bi, bj in zip(*np.nonzero(blocks)):
        written[bi * 4 + 1, bj * 5 + 2] = True  # one element per block

    @qd.kernel
    def write(rows: qd.types.ndarray(), cols: qd.types.ndarray()):
        for k in range(rows.shape[0]):
            x[rows[k], cols[k]] = rows[k] * 100.0 + cols[k]

    @qd.kernel
    def visit(seen: qd.types.ndarray()):
        for i, j in x:
            seen[i, j] += 1

    rows, cols = np.nonzero(written)
    write(rows.astype(np.int32), cols.astype(np.int32))
    seen = np.zeros((32, 30), np.int32)
    visit(seen)
    # Every element of an active block is visited once, nothing else.
    expected = np.kron(blocks, np.ones((4, 5), bool))
    np.testing.assert_array_equal(seen, expected.astype(np.int32))
    values = x.to_numpy()
    np.testing.assert_array_equal(values[written], rows * 100.0 + cols)
    assert not values[~written].any()  # inactive cells read zero


@test_utils.test(require=SPARSE)
def test_is_active_and_qd_activate_on_pointer_and_bitmasked():
    x = qd.field(qd.i32)
    y = qd.field(qd.i32)
    ptr = qd.root.pointer(qd.i, 16)
    ptr.place(x)
    bm = qd.root.bitmasked(qd.i, 16)
    bm.place(y)
    want = _mask(16, 2, 0.4)

    @qd.kernel
    def activate(on: qd.types.ndarray()):
        for i in range(16):
            if on[i]:
                qd.activate(ptr, [i])
                qd.activate(bm, i)

    @qd.kernel
    def query(a: qd.types.ndarray(), b: qd.types.ndarray()):
        for i in range(16):
            a[i] = qd.is_active(ptr, [i])
            b[i] = qd.is_active(x.parent(), [i]) + qd.is_active(bm, [i])

    activate(want.astype(np.int32))
    a, b = np.zeros(16, np.int32), np.zeros(16, np.int32)
    query(a, b)
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(b, 2 * want)
    assert not x.to_numpy().any() and not y.to_numpy().any()


@test_utils.test(require=SPARSE)
def test_bitmasked_struct_for_and_deactivate_zero_the_cell():
    x = qd.field(qd.f32)
    bm = qd.root.dense(qd.i, 4).bitmasked(qd.j, 8)
    bm.place(x)
    mask = _mask((4, 8), 3, 0.5)
    x.from_numpy(np.where(mask, np.arange(32).reshape(4, 8) + 1.0, 0.0))

    @qd.kernel
    def drop_odd():
        for i, j in x:
            if (i + j) % 2 == 1:
                qd.deactivate(bm, [i, j])

    # from_numpy writes (and so activates) every cell.
    assert _active_cells(x) == 32
    drop_odd()
    even = (np.add.outer(np.arange(4), np.arange(8)) % 2) == 0
    assert _active_cells(x) == int(even.sum())
    values = x.to_numpy()
    assert not values[~even].any()

    @qd.kernel
    def reactivate():
        for i in range(2):
            qd.activate(bm, [2 * i, 1])  # cells drop_odd deactivated

    reactivate()
    assert not x.to_numpy()[[0, 2], 1].any()  # reactivated cells read zero
    assert _active_cells(x) == int(even.sum()) + 2


@test_utils.test(require=SPARSE)
def test_pointer_deactivate_returns_zeroed_blocks_and_deactivate_all():
    x = qd.field(qd.i32)
    ptr = qd.root.pointer(qd.i, 8)
    ptr.dense(qd.i, 4).place(x)

    @qd.kernel
    def write_all():
        for i in range(32):
            x[i] = i + 1

    @qd.kernel
    def drop(b: qd.i32):
        qd.deactivate(ptr, [b])

    @qd.kernel
    def touch(i: qd.i32):
        x[i] += 0

    write_all()
    drop(2)
    values = x.to_numpy()
    assert not values[8:12].any() and values[12] == 13
    touch(9)  # reactivates block 2: it comes back zeroed
    assert not x.to_numpy()[8:12].any()
    ptr.deactivate_all()
    assert not x.to_numpy().any()

    assert _active_cells(x) == 0
    write_all()
    assert _active_cells(x) == 32
    qd.deactivate_all_snodes()
    assert _active_cells(x) == 0


@test_utils.test(require=SPARSE)
def test_two_and_three_level_pointers():
    x = qd.field(qd.f32)
    outer = qd.root.pointer(qd.ij, 4)
    inner = outer.pointer(qd.ij, 2)
    inner.bitmasked(qd.ij, 2).place(x)  # 16 x 16 elements
    mask = _mask((16, 16), 4, 0.1)

    @qd.kernel
    def write(rows: qd.types.ndarray(), cols: qd.types.ndarray()):
        for k in range(rows.shape[0]):
            x[rows[k], cols[k]] = 1.0 + k

    @qd.kernel
    def visit(seen: qd.types.ndarray()):
        for i, j in x:
            seen[i, j] += 1

    @qd.kernel
    def active_counts() -> qd.types.vector(2, qd.i32):
        a = 0
        b = 0
        for i, j in qd.ndrange(4, 4):
            a += qd.is_active(outer, [i, j])
        for i, j in qd.ndrange(8, 8):
            b += qd.is_active(inner, [i, j])
        return qd.Vector([a, b])

    rows, cols = np.nonzero(mask)
    write(rows.astype(np.int32), cols.astype(np.int32))
    seen = np.zeros((16, 16), np.int32)
    visit(seen)
    # The bitmasked level is the finest: exactly the written cells.
    np.testing.assert_array_equal(seen, mask.astype(np.int32))
    counts = active_counts()
    assert counts[0] == len({(r // 4, c // 4) for r, c in zip(rows, cols)})
    assert counts[1] == len({(r // 2, c // 2) for r, c in zip(rows, cols)})
    # Deactivating an outer cell deactivates everything inside it.

    @qd.kernel
    def drop_outer(i: qd.i32, j: qd.i32):
        qd.deactivate(outer, [i, j])

    @qd.kernel
    def drop_inner(i: qd.i32, j: qd.i32):
        qd.deactivate(inner, [i, j])

    # Deactivating inside an inactive outer cell activates nothing.
    empty = [(r, c) for r in range(4) for c in range(4)
             if not mask[r * 4:r * 4 + 4, c * 4:c * 4 + 4].any()][0]
    drop_inner(empty[0] * 2, empty[1] * 2)
    assert active_counts()[0] == counts[0]

    r0, c0 = rows[0] // 4, cols[0] // 4
    drop_outer(r0, c0)
    seen[:] = 0
    visit(seen)
    kept = mask.copy()
    kept[r0 * 4:r0 * 4 + 4, c0 * 4:c0 * 4 + 4] = False
    np.testing.assert_array_equal(seen, kept.astype(np.int32))
    assert not x.to_numpy()[r0 * 4:r0 * 4 + 4, c0 * 4:c0 * 4 + 4].any()


# ---- dynamic ---------------------------------------------------------------------------

@test_utils.test(require=SPARSE)
def test_concurrent_append_gives_every_element_once():
    x = qd.field(qd.i32)
    lists = qd.root.dense(qd.i, 5).dynamic(qd.j, 4096, chunk_size=64)
    lists.place(x)
    n = 3000

    @qd.kernel
    def fill():
        for k in range(n * 5):
            qd.append(x.parent(), k % 5, k)

    @qd.kernel
    def lengths(out: qd.types.ndarray()):
        for i in range(5):
            out[i] = qd.length(lists, [i])

    fill()
    got = np.zeros(5, np.int32)
    lengths(got)
    np.testing.assert_array_equal(got, [n] * 5)
    values = x.to_numpy()
    for i in range(5):
        assert sorted(values[i, :n].tolist()) == list(range(i, n * 5, 5))
        assert not values[i, n:].any()

    @qd.kernel
    def visit(seen: qd.types.ndarray()):
        for i, j in x:
            seen[i, j] += 1
    seen = np.zeros((5, 4096), np.int32)
    visit(seen)
    assert seen[:, :n].min() == 1 and not seen[:, n:].any()

    @qd.kernel
    def clear(i: qd.i32):
        qd.deactivate(lists, [i])
    clear(2)
    lengths(got)
    assert got[2] == 0 and got[0] == n
    assert not x.to_numpy()[2].any()


@test_utils.test(require=SPARSE)
def test_append_to_a_root_list_returns_positions_and_stops_when_full():
    x = qd.field(qd.f32)
    qd.root.dynamic(qd.i, 16, chunk_size=4).place(x)

    @qd.kernel
    def push(count: qd.i32) -> qd.i32:
        last = -1
        for _ in range(1):
            for k in range(count):
                last = qd.append(x.parent(), [], k * 0.5)
        return last

    assert push(10) == 9
    assert push(10) == 16  # positions 16.. do not fit: dropped
    np.testing.assert_array_equal(x.to_numpy(), np.r_[np.arange(10) * 0.5, np.arange(6) * 0.5])

    @qd.kernel
    def size() -> qd.i32:
        return qd.length(x.parent(), [])
    assert size() == 16


@test_utils.test(require=SPARSE)
def test_list_methods_on_partially_indexed_fields():
    x = qd.field(qd.i32)
    qd.root.dense(qd.i, 4).dynamic(qd.j, 8, chunk_size=2).place(x)
    v = qd.Vector.field(2, qd.f32)
    qd.root.dynamic(qd.i, 8).place(v)

    @qd.kernel
    def build(out: qd.types.ndarray()):
        for i in range(4):
            for k in range(i + 1):
                x[i].append(10 * i + k)
        for i in range(4):
            out[i] = x[i].length()
        x[2].deactivate()
        for _ in range(1):
            for k in range(3):
                v.append(qd.Vector([k, -k]))
        out[4] = v.length()

    out = np.zeros(5, np.int32)
    build(out)
    assert out.tolist() == [1, 2, 3, 4, 3]
    values = x.to_numpy()
    assert values[3, :4].tolist() == [30, 31, 32, 33] and not values[2].any()
    assert v.to_numpy()[:3].tolist() == [[0, 0], [1, -1], [2, -2]]


# ---- pools -----------------------------------------------------------------------------

@test_utils.test(require=SPARSE, sparse_pool_mb=0.001)
def test_exhausted_pool_is_an_error_naming_the_field_and_the_program_goes_on():
    grid = qd.field(qd.f32)
    ptr = qd.root.pointer(qd.i, 64)
    ptr.dense(qd.i, 64).place(grid)  # blocks of 256 bytes; 0.001 MiB holds 4

    @qd.kernel
    def touch(n: qd.i32):
        for b in range(n):
            grid[b * 64] = 1.0

    touch(4)
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"'grid'.*all its 4 blocks are in use"):
        touch(6)
        qd.sync()
    ptr.deactivate_all()
    touch(3)
    values = grid.to_numpy()
    assert values[[0, 64, 128]].tolist() == [1.0, 1.0, 1.0] and values.sum() == 3


# ---- gradients -------------------------------------------------------------------------

@test_utils.test(require=SPARSE, default_fp=qd.f64)
def test_gradient_of_a_loss_over_active_cells_matches_central_differences():
    x = qd.field(qd.f64, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    ptr = qd.root.pointer(qd.i, 8)
    ptr.dense(qd.i, 4).place(x)  # x.grad is placed beside x, in the same cells
    assert x.grad.snode.parent() == x.snode.parent()
    assert x.grad.snode.ptr.get_snode_grad_type() == qd.types.enums.SNodeGradType.ADJOINT
    active = [1, 4, 6]

    @qd.kernel
    def compute():
        for i in x:
            loss[None] += qd.sin(x[i]) * x[i]

    values = np.zeros(32)
    for b in active:
        values[b * 4:b * 4 + 4] = np.linspace(0.2, 1.4, 4) + b
    x.from_numpy(values)  # activates every block
    ptr.deactivate_all()

    @qd.kernel
    def seed(v: qd.types.ndarray()):
        for k in range(32):
            if (k // 4) == 1 or (k // 4) == 4 or (k // 4) == 6:
                x[k] = v[k]
    seed(values)

    def f(v):
        return float(np.sum(np.sin(v) * v * np.repeat(np.isin(np.arange(8), active), 4)))

    loss[None] = 0.0
    with qd.ad.Tape(loss=loss):
        compute()
    grad = x.grad.to_numpy()
    eps = 1e-6
    for k in range(32):
        up, down = values.copy(), values.copy()
        up[k] += eps
        down[k] -= eps
        numeric = (f(up) - f(down)) / (2 * eps)
        # f64 central differences: truncation ~eps^2, rounding ~1e-16/eps.
        assert grad[k] == pytest.approx(numeric, rel=1e-7, abs=1e-8)
    assert not grad[np.repeat(~np.isin(np.arange(8), active), 4)].any()


@pytest.mark.parametrize("parent", ["dense", "pointer"])
@test_utils.test(require=SPARSE, default_fp=qd.f64, ad_stack_experimental_enabled=True)
def test_adstack_loop_bounded_by_a_dynamic_length(parent):
    # Under a pointer the lengths live in pool blocks: the launch reads them
    # through the pointer's table to size the stacks.
    n_lists = 6
    a = qd.field(qd.f64)
    rows = getattr(qd.root, parent)(qd.i, n_lists)
    lists = rows.dynamic(qd.j, 32, chunk_size=8)
    lists.place(a)
    x = qd.field(qd.f64, shape=n_lists, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    lengths = [3, 0, 7, 12, 1, 5]
    coefs = np.random.default_rng(5).uniform(0.5, 1.2, (n_lists, 32))

    @qd.kernel
    def build(c: qd.types.ndarray()):
        for i in range(n_lists):
            for k in range(32):
                if (i == 0 and k < 3) or (i == 2 and k < 7) or (i == 3 and k < 12) or \
                        (i == 4 and k < 1) or (i == 5 and k < 5):
                    qd.append(lists, [i], c[i, k])

    @qd.kernel
    def run():
        for i in range(n_lists):
            v = x[i]
            for k in range(qd.length(lists, [i])):
                v = qd.sin(v) * a[i, k]
            loss[None] += v

    build(coefs)
    x0 = np.random.default_rng(6).uniform(0.1, 0.9, n_lists)
    x.from_numpy(x0)
    with qd.ad.Tape(loss=loss):
        run()

    def forward(v0):
        total = 0.0
        for i in range(n_lists):
            v = v0[i]
            for k in range(lengths[i]):
                v = np.sin(v) * coefs[i, k]
            total += v
        return total

    eps = 1e-6
    for i in range(n_lists):
        up, down = x0.copy(), x0.copy()
        up[i] += eps
        down[i] -= eps
        numeric = (forward(up) - forward(down)) / (2 * eps)
        assert x.grad[i] == pytest.approx(numeric, rel=1e-7, abs=1e-9)
    assert loss[None] == pytest.approx(forward(x0), rel=1e-12)
    # Sized from the lengths at launch: the longest list and two slots.
    capacities = qd.lang.runtime.adstack_stats()["capacities"]
    assert max(c for task in capacities for c in task) == max(lengths) + 2


# ---- host access, errors, no_activate -------------------------------------------------

@test_utils.test(require=SPARSE)
def test_host_reads_and_writes_and_no_activate():
    x = qd.field(qd.i32)
    ptr = qd.root.pointer(qd.i, 4)
    ptr.dense(qd.i, 4).place(x)
    x[5] = 7
    assert x[5] == 7 and x[4] == 0 and x[12] == 0

    @qd.kernel
    def write_without_activation():
        qd.no_activate(x)
        for i in range(16):
            x[i] = 100 + i

    write_without_activation()
    values = x.to_numpy()
    # Only block 1 was active: it took the writes; the others stay empty.
    np.testing.assert_array_equal(values[4:8], [104, 105, 106, 107])
    assert not values[:4].any() and not values[8:].any()
    assert _active_cells(x) == 4
    x.fill(3)  # fills the active cells only
    assert x.to_numpy().tolist() == [0] * 4 + [3] * 4 + [0] * 8


@test_utils.test(exclude=[qd.cpu, qd.cuda])
def test_archs_without_sparse_refuse_at_layout_time_saying_why():
    assert not qd.is_extension_supported(qd.lang.impl.current_cfg().arch, SPARSE)
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"qd\.extension\.sparse.*pool allocator"):
        qd.root.pointer(qd.i, 4)


@test_utils.test(exclude=[qd.cpu, qd.cuda])
def test_sparse_levels_are_refused_where_the_arch_has_no_pools():
    for kind, make in (("Pointer", lambda: qd.root.pointer(qd.i, 8)),
                       ("Bitmasked", lambda: qd.root.dense(qd.i, 4).bitmasked(qd.j, 4)),
                       ("Dynamic", lambda: qd.root.dynamic(qd.i, 8))):
        with pytest.raises(qd.QuadrantsRuntimeError,
                           match=f"{kind} SNode is not supported on this backend. "
                                 f"{kind.lower()}\\(\\) SNodes need qd.extension.sparse"):
            make()
