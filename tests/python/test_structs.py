"""Structs: qd.types.struct, @qd.dataclass with @qd.func methods, struct
fields and their host round trips, struct locals and kernel/func
arguments, and gradients through struct members."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

vec2, vec3 = qd.math.vec2, qd.math.vec3


@qd.dataclass
class Particle:
    x: vec3
    v: vec3
    mass: qd.f32

    @qd.func
    def kinetic(self):
        return 0.5 * self.mass * self.v.norm_sqr()

    @qd.func
    def advance(self, dt):
        self.x += dt * self.v


@test_utils.test()
def test_dataclass_field_methods_and_host_round_trip():
    ps = Particle.field(shape=4)
    energy = qd.field(qd.f32, shape=4)
    rng = np.random.default_rng(0)
    data = {"x": rng.uniform(-1, 1, (4, 3)).astype(np.float32),
            "v": rng.uniform(-1, 1, (4, 3)).astype(np.float32),
            "mass": rng.uniform(1, 2, 4).astype(np.float32)}
    ps.from_numpy(data)
    back = ps.to_numpy()
    assert set(back) == {"x", "v", "mass"}
    assert back["x"].shape == (4, 3) and back["mass"].shape == (4,)
    for k in data:
        np.testing.assert_array_equal(back[k], data[k])

    @qd.kernel
    def step(dt: qd.f32):
        for i in ps:
            energy[i] = ps[i].kinetic()
            ps[i].advance(dt)

    step(0.5)
    np.testing.assert_allclose(energy.to_numpy(),
                               0.5 * data["mass"] * (data["v"] ** 2).sum(-1), rtol=1e-6)
    np.testing.assert_allclose(ps.x.to_numpy(), data["x"] + 0.5 * data["v"], rtol=1e-6)
    assert ps[2].mass == pytest.approx(data["mass"][2])
    np.testing.assert_allclose(ps[2].v, data["v"][2])
    ps[1] = {"mass": 9.0}
    assert ps.mass.to_numpy()[1] == 9.0
    with pytest.raises(ValueError):
        ps.from_numpy({"x": np.zeros((4, 2), np.float32)})


@test_utils.test()
def test_struct_type_locals_args_and_returns():
    Ray = qd.types.struct(origin=vec2, direction=vec2, steps=qd.i32)
    hits = qd.Vector.field(2, qd.f32, shape=3)

    @qd.func
    def make_ray(i) -> Ray:
        return Ray(origin=vec2(i, 0.0), direction=vec2(0.0, 1.0), steps=i + 1)

    @qd.func
    def march(r: Ray):
        p = r.origin
        for _ in range(r.steps):
            p += r.direction
        return p

    @qd.kernel
    def k(base: Ray):
        for i in range(3):
            r = make_ray(i)
            r.origin += base.origin
            r.direction = r.direction * base.steps
            hits[i] = march(r)

    k({"origin": [10, 20], "direction": [0, 0], "steps": 2})
    np.testing.assert_allclose(hits.to_numpy(), [[10 + i, 20 + 2 * (i + 1)] for i in range(3)])


@test_utils.test()
def test_struct_field_via_root_and_qd_struct_field():
    S = qd.types.struct(a=qd.f32, b=qd.types.matrix(2, 2, qd.f32))
    f = S.field()
    qd.root.dense(qd.i, 5).place(f)
    g = qd.Struct.field({"p": vec3, "n": qd.i32}, shape=2)

    @qd.kernel
    def k():
        for i in f:
            f[i].a = i
            f[i].b = qd.Matrix([[i, 1.0], [0.0, i]])
        for j in g:
            g[j] = qd.types.struct(p=vec3, n=qd.i32)(p=vec3(j), n=j * 3)

    k()
    np.testing.assert_array_equal(f.to_numpy()["a"], np.arange(5))
    np.testing.assert_array_equal(f.to_numpy()["b"][3], [[3, 1], [0, 3]])
    np.testing.assert_array_equal(g.to_numpy()["n"], [0, 3])
    np.testing.assert_array_equal(g.p.to_numpy()[1], [1, 1, 1])


@test_utils.test()
def test_gradient_through_struct_members():
    State = qd.types.struct(pos=vec2, vel=vec2)
    s = State.field(shape=3, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def run():
        for i in s:
            st = s[i]
            st.pos += 0.5 * st.vel
            loss[None] += st.pos.norm_sqr() * st.vel.x

    rng = np.random.default_rng(2)
    pos, vel = rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (3, 2))
    s.from_numpy({"pos": pos.astype(np.float32), "vel": vel.astype(np.float32)})
    pos, vel = s.pos.to_numpy().astype(np.float64), s.vel.to_numpy().astype(np.float64)
    with qd.ad.Tape(loss=loss):
        run()
    # d/dpos = 2 (pos + vel/2) vel.x; d/dvel = (pos + vel/2) vel.x + |.|^2 e_x
    q = pos + 0.5 * vel
    np.testing.assert_allclose(s.grad.pos.to_numpy(), 2 * q * vel[:, :1], rtol=1e-5, atol=1e-6)
    gvel = q * vel[:, :1]
    gvel[:, 0] += (q ** 2).sum(-1)
    np.testing.assert_allclose(s.grad.vel.to_numpy(), gvel, rtol=1e-5, atol=1e-6)


@test_utils.test()
def test_ndarray_of_structs_round_trip_kernel_and_gradient():
    Body = qd.types.struct(pos=vec2, vel=vec2, mass=qd.f32)
    bodies = qd.ndarray(Body, 3, needs_grad=True)
    rng = np.random.default_rng(6)
    data = {"pos": rng.uniform(-1, 1, (3, 2)).astype(np.float32),
            "vel": rng.uniform(-1, 1, (3, 2)).astype(np.float32),
            "mass": np.array([1.0, 2.0, 3.0], np.float32)}
    bodies.from_numpy(data)
    back = bodies.to_numpy()
    assert back["pos"].shape == (3, 2) and back["mass"].shape == (3,)
    for k in data:
        np.testing.assert_array_equal(back[k], data[k])
    assert bodies[1].mass == 2.0
    np.testing.assert_array_equal(np.asarray(bodies[2].vel.to_list()), data["vel"][2])
    bodies[0] = {"pos": [5, 6], "vel": [0, 0], "mass": 4.0}
    bodies[1].mass = 7.0       # writes through to the ndarray
    assert bodies.to_numpy()["mass"].tolist() == [4.0, 7.0, 3.0]
    bodies.from_numpy(data)
    energy = qd.ndarray(qd.f32, (), needs_grad=True)

    @qd.kernel
    def kinetic(b: qd.types.ndarray(dtype=Body, ndim=1), e: qd.types.ndarray()):
        for i in b:
            e[None] += 0.5 * b[i].mass * b[i].vel.norm_sqr()
            b[i].pos += b[i].vel

    with qd.ad.Tape(loss=energy):
        kinetic(bodies, energy)
    assert energy[None] == pytest.approx(
        float(np.sum(0.5 * data["mass"] * (data["vel"] ** 2).sum(-1))), rel=1e-6)
    np.testing.assert_allclose(bodies.to_numpy()["pos"], data["pos"] + data["vel"], rtol=1e-6)
    grad = bodies.grad.to_numpy()
    np.testing.assert_allclose(grad["vel"], data["mass"][:, None] * data["vel"], rtol=1e-6)
    np.testing.assert_allclose(grad["mass"], 0.5 * (data["vel"] ** 2).sum(-1), rtol=1e-6)
    with pytest.raises(qd.QuadrantsTypeError, match="one scalar type"):
        qd.ndarray(qd.types.struct(a=qd.i32, b=qd.f32), 2)


@test_utils.test()
def test_unpacked_vector_members_are_scalar_members():
    @qd.dataclass
    class Accum:
        acc: qd.types.vector(3, qd.f32, unpacked=True)
        weight: qd.f32

    assert Accum._unpacked_groups["acc"][:2] == (3, qd.f32)
    assert "_acc2" in Accum.members and "acc" not in Accum.members

    out = qd.field(qd.f32, shape=(4,))

    @qd.kernel
    def run(o: qd.template()):
        for _ in range(1):
            a = Accum(weight=2.0)
            for i in qd.static(range(3)):
                a.acc[i] = (i + 1) * a.weight
            a.acc[1] += 0.5
            o[0], o[1], o[2], o[3] = a.acc[0], a.acc[1], a.acc[2], a._acc0

    run(out)
    assert out.to_numpy().tolist() == [2.0, 4.5, 6.0, 2.0]

    @qd.kernel
    def dynamic(o: qd.template(), k: qd.i32):
        for _ in range(1):
            a = Accum()
            o[0] = a.acc[k]

    with pytest.raises(qd.QuadrantsTypeError, match="python-int"):
        dynamic(out, 1)
    with pytest.raises(qd.QuadrantsSyntaxError, match="unpacked=True"):
        qd.types.vector(3, qd.f32, unpacked=True)(1.0, 2.0, 3.0)
    with pytest.raises(qd.QuadrantsSyntaxError, match="_w1"):
        qd.types.struct(w=qd.types.vector(2, qd.f32, unpacked=True), _w1=qd.f32)


@test_utils.test()
def test_members_named_like_struct_methods_are_members():
    @qd.dataclass
    class Record:
        keys: qd.i32
        items: qd.i32
        entries: qd.f32

    @qd.kernel
    def run() -> qd.f32:
        r = Record(keys=3, items=4, entries=0.5)
        r.keys += 10
        r.items = r.keys * 2
        return r.keys + r.items + r.entries

    assert run() == 13 + 26 + 0.5
