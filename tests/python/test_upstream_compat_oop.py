"""@qd.data_oriented classes as upstream user code writes them: kernels and
funcs as methods reaching fields, ndarrays, vectors and nested objects
through `self`; objects passed as template arguments; gradients through
kernel.grad and qd.ad.Tape; template_primitives=False; and the error for a
kernel method of a class that is not data-oriented."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


@test_utils.test()
def test_kernel_and_func_methods_reach_fields_through_self():
    @qd.data_oriented
    class Grid:
        def __init__(self, n, m):
            self.n, self.m = n, m
            self.val = qd.field(qd.f32, shape=(n, m))

        @qd.func
        def bump(self, i, j):
            self.val[i, j] += i * j

        @qd.func
        def product(self, i, j):
            return i * j

        @qd.kernel
        def fill(self):
            for i, j in self.val:
                self.bump(i, j)
                self.val[i, j] += self.product(i, j)

    g = Grid(16, 8)
    g.fill()
    i, j = np.meshgrid(np.arange(16), np.arange(8), indexing="ij")
    np.testing.assert_array_equal(g.val.to_numpy(), 2 * i * j)


@test_utils.test()
def test_primitive_members_are_constants_per_object():
    @qd.data_oriented
    class Counter:
        def __init__(self, step):
            self.step = step
            self.val = qd.field(qd.i32, shape=4)

        @qd.kernel
        def inc(self):
            for i in self.val:
                self.val[i] += self.step

        @qd.kernel
        def inc_by(self, amount: qd.i32):
            for i in self.val:
                self.val[i] += amount

    a, b = Counter(3), Counter(10)
    a.inc()
    b.inc()
    a.inc_by(4)
    assert a.val.to_numpy().tolist() == [7] * 4
    assert b.val.to_numpy().tolist() == [10] * 4


@test_utils.test()
def test_gradients_through_methods_with_grad_and_tape():
    @qd.data_oriented
    class Model:
        def __init__(self, n, weight):
            self.n, self.weight = n, weight
            self.x = qd.field(qd.f32, shape=n, needs_grad=True)
            self.total = qd.field(qd.f32, shape=(), needs_grad=True)

        @qd.kernel
        def reduce(self):
            for i in self.x:
                self.total[None] += self.x[i] * self.x[i] * self.weight

    a, b = Model(8, 4.0), Model(5, 0.5)
    a.x.from_numpy(np.arange(8, dtype=np.float32))
    b.x.from_numpy(np.arange(5, dtype=np.float32))
    with qd.ad.Tape(loss=a.total):
        a.reduce()
    with qd.ad.Tape(loss=b.total, clear_gradients=False):
        b.reduce()
    np.testing.assert_allclose(a.x.grad.to_numpy(), 8.0 * np.arange(8))
    np.testing.assert_allclose(b.x.grad.to_numpy(), 1.0 * np.arange(5))

    # kernel.grad on a bound method, with the seed set by hand.
    a.x.grad.fill(0)
    a.total.grad[None] = 2.0
    a.reduce.grad()
    np.testing.assert_allclose(a.x.grad.to_numpy(), 16.0 * np.arange(8))


@test_utils.test()
def test_module_level_kernel_after_a_method_in_one_tape():
    @qd.data_oriented
    class Sum:
        def __init__(self):
            self.v = qd.field(qd.f32, shape=6, needs_grad=True)
            self.total = qd.field(qd.f32, shape=(), needs_grad=True)

        @qd.kernel
        def reduce(self):
            for i in self.v:
                self.total[None] += self.v[i] * 3

    s = Sum()
    doubled = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def double():
        doubled[None] = 2 * s.total[None]

    with qd.ad.Tape(loss=doubled):
        s.reduce()
        double()
    np.testing.assert_allclose(s.v.grad.to_numpy(), [6.0] * 6)


@pytest.mark.parametrize("use_ndarray", [False, True])
@test_utils.test()
def test_nested_objects_fields_or_ndarrays(use_ndarray):
    make = qd.ndarray if use_ndarray else qd.field

    @qd.data_oriented
    class Inner:
        def __init__(self):
            self.a = make(qd.i32, (10,))

    @qd.data_oriented
    class Outer:
        def __init__(self):
            self.inner = Inner()
            self.c = make(qd.i32, (10,))

        @qd.func
        def combine(self, i):
            return self.inner.a[i] * 10

        @qd.kernel
        def run(self, k: qd.i32):
            for i in range(10):
                self.inner.a[i] = i + k
                self.c[i] = self.combine(i)

    o = Outer()
    o.run(1)
    np.testing.assert_array_equal(o.c.to_numpy(), (np.arange(10) + 1) * 10)
    o.run(5)
    np.testing.assert_array_equal(o.c.to_numpy(), (np.arange(10) + 5) * 10)


@test_utils.test()
def test_ndarray_member_reassigned_between_launches():
    @qd.data_oriented
    class State:
        def __init__(self, x):
            self.x = x

        @qd.kernel
        def iota(self):
            for i in range(self.x.shape[0]):
                self.x[i] = i * 2

    first = qd.ndarray(qd.f32, shape=(4,))
    second = qd.ndarray(qd.f32, shape=(6,))
    s = State(first)
    s.iota()
    s.x = second  # same dtype and dimensions: the launch uses the new array
    s.iota()
    np.testing.assert_array_equal(first.to_numpy(), [0, 2, 4, 6])
    np.testing.assert_array_equal(second.to_numpy(), [0, 2, 4, 6, 8, 10])
    s.x = qd.ndarray(qd.i32, shape=(3, 2))  # another signature: compiled again
    with pytest.raises(qd.QuadrantsTypeError):
        s.iota()  # indexes a 2-d array with one index


@test_utils.test()
def test_vector_ndarray_member_and_gradient():
    @qd.data_oriented
    class Body:
        def __init__(self, n):
            self.pos = qd.Vector.ndarray(2, qd.f32, shape=(n,), needs_grad=True)
            self.energy = qd.ndarray(qd.f32, shape=(), needs_grad=True)

        @qd.kernel
        def compute(self):
            for i in range(self.pos.shape[0]):
                p = self.pos[i]
                self.energy[None] += p.dot(p) * 0.5

    b = Body(3)
    b.pos.from_numpy(np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32))
    b.compute()
    assert b.energy[None] == pytest.approx(0.5 * (1 + 4 + 9 + 16 + 25 + 36))
    b.energy.grad[None] = 1.0
    b.compute.grad()
    np.testing.assert_allclose(b.pos.grad.to_numpy(), [[1, 2], [3, 4], [5, 6]])


@test_utils.test()
def test_object_as_template_argument_of_a_free_kernel():
    @qd.data_oriented
    class Solver:
        def __init__(self, n):
            self.val = qd.field(qd.f32, shape=(n, n))

    @qd.kernel
    def set_ones(x: qd.template()):
        for i, j in x:
            x[i, j] = 1.0

    @qd.kernel
    def scale(s: qd.template(), by: qd.f32):
        for i, j in s.val:
            s.val[i, j] *= by

    s = Solver(8)
    set_ones(s.val)
    scale(s, 3.0)
    np.testing.assert_array_equal(s.val.to_numpy(), np.full((8, 8), 3.0))


@test_utils.test()
def test_template_primitives_false_reads_members_at_every_launch():
    @qd.data_oriented(template_primitives=False)
    class Sim:
        def __init__(self):
            self.n = 3
            self.scale = 2.0
            self.enabled = True
            self.x = qd.field(qd.f32, shape=8)

    @qd.kernel
    def step(s: qd.template()):
        for i in range(s.n):
            if s.enabled:
                s.x[i] += s.scale

    sim = Sim()
    step(sim)
    sim.n, sim.scale = 6, 10.0
    step(sim)
    np.testing.assert_array_equal(sim.x.to_numpy(), [12, 12, 12, 10, 10, 10, 0, 0])
    sim.enabled = False
    step(sim)
    np.testing.assert_array_equal(sim.x.to_numpy(), [12, 12, 12, 10, 10, 10, 0, 0])
    assert len(step._cache) == 1  # one compiled kernel served every launch


@test_utils.test()
def test_default_primitives_are_baked_in():
    @qd.data_oriented
    class Sim:
        def __init__(self):
            self.k = 1
            self.out = qd.field(qd.i32, shape=())

    @qd.kernel
    def step(s: qd.template()):
        s.out[None] = s.k * 100

    sim = Sim()
    step(sim)
    sim.k = 5  # a constant of the kernel compiled for sim
    step(sim)
    assert sim.out[None] == 100


@test_utils.test()
def test_property_and_static_kernels_in_a_data_oriented_class():
    @qd.data_oriented
    class Consts:
        @property
        @qd.kernel
        def answer(self) -> qd.i32:
            return 42

        @staticmethod
        @qd.kernel
        def seven() -> qd.i32:
            return 7

    c = Consts()
    assert c.answer == 42
    assert c.seven() == 7 and Consts.seven() == 7


@test_utils.test()
def test_kernel_method_needs_data_oriented_class():
    class Plain:
        def __init__(self):
            self.val = qd.field(qd.f32, shape=4)

        @qd.kernel
        def reduce(self):
            for i in self.val:
                self.val[i] += 1

    with pytest.raises(qd.QuadrantsSyntaxError, match="not decorated with @qd.data_oriented"):
        Plain().reduce()


@test_utils.test()
def test_inherited_kernels_and_hooks():
    @qd.data_oriented
    class Base:
        def __init__(self, n):
            self.val = qd.field(qd.i32, shape=n)

        @qd.kernel
        def fill(self, v: qd.i32):
            for i in self.val:
                self.val[i] = v + self.offset()

        @qd.func
        def offset(self):
            return 0

    @qd.data_oriented
    class Derived(Base):
        @qd.func
        def offset(self):
            return 100

    b, d = Base(3), Derived(3)
    b.fill(1)
    d.fill(1)
    assert b.val.to_numpy().tolist() == [1, 1, 1]
    assert d.val.to_numpy().tolist() == [101, 101, 101]
