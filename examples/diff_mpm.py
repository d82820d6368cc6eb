"""Differentiable 2-D material point method: learn a throw's initial velocity.

A square of elastic material (a few thousand particles, fixed-corotated
elasticity through qd.polar_decompose) is thrown inside a box under gravity
and simulated with MLS-MPM: each step scatters particle momentum and
stress to a grid (P2G, quadratic B-spline weights over a 3x3 stencil, 2x2
affine and deformation-gradient matrices), updates the grid velocities with
gravity and the box walls, and gathers them back (G2P). Every particle and
grid quantity is a vector or matrix field indexed by step, so qd.ad.Tape can
replay the steps backwards. The loss is the squared distance between the
particles' mean position at the last step and a target; gradient descent on
the initial velocity (a vec2) brings the square onto the target. The script
first checks d loss / d initial velocity against central differences and
then prints the loss of each iteration.

    bazel run //examples:diff_mpm -- --iterations 20
    bazel run //examples:diff_mpm -- --ci     # a smaller run, for tests
"""
import argparse

import numpy as np

import quadrants as qd

DIM = 2
N_GRID = 32
DX = 1.0 / N_GRID
INV_DX = float(N_GRID)
DT = 2e-3
P_VOL = (DX * 0.5) ** 2
P_RHO = 1.0
P_MASS = P_VOL * P_RHO
E, NU = 40.0, 0.2
MU = E / (2 * (1 + NU))
LAMBDA = E * NU / ((1 + NU) * (1 - 2 * NU))
GRAVITY = 9.8
BOUND = 3
TARGET = (0.62, 0.48)


def build(side, steps):
    """Fields and kernels for a square of side x side particles simulated
    for `steps` steps."""
    n_particles = side * side
    vec2 = qd.math.vec2
    x = qd.Vector.field(DIM, float, shape=(steps, n_particles), needs_grad=True)
    v = qd.Vector.field(DIM, float, shape=(steps, n_particles), needs_grad=True)
    C = qd.Matrix.field(DIM, DIM, float, shape=(steps, n_particles), needs_grad=True)
    F = qd.Matrix.field(DIM, DIM, float, shape=(steps, n_particles), needs_grad=True)
    grid_v_in = qd.Vector.field(DIM, float, shape=(steps, N_GRID, N_GRID), needs_grad=True)
    grid_m_in = qd.field(float, shape=(steps, N_GRID, N_GRID), needs_grad=True)
    grid_v_out = qd.Vector.field(DIM, float, shape=(steps, N_GRID, N_GRID), needs_grad=True)
    init_v = qd.Vector.field(DIM, float, shape=(), needs_grad=True)
    target = qd.Vector.field(DIM, float, shape=())
    center = qd.Vector.field(DIM, float, shape=(), needs_grad=True)
    loss = qd.field(float, shape=(), needs_grad=True)

    @qd.kernel
    def place_particles():
        for p in range(n_particles):
            i, j = p // side, p % side
            x[0, p] = vec2(0.15 + i * 0.2 / side, 0.45 + j * 0.2 / side)
            F[0, p] = qd.Matrix([[1.0, 0.0], [0.0, 1.0]])
            C[0, p] = qd.Matrix([[0.0, 0.0], [0.0, 0.0]])

    @qd.kernel
    def set_velocity():
        for p in range(n_particles):
            v[0, p] = init_v[None]

    @qd.kernel
    def p2g(f: qd.i32):
        for p in range(n_particles):
            base = qd.cast(x[f, p] * INV_DX - 0.5, qd.i32)
            fx = x[f, p] * INV_DX - qd.cast(base, float)
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
            new_F = (qd.Matrix([[1.0, 0.0], [0.0, 1.0]]) + DT * C[f, p]) @ F[f, p]
            F[f + 1, p] = new_F
            J = new_F.determinant()
            r, _ = qd.polar_decompose(new_F)
            cauchy = 2.0 * MU * (new_F - r) @ new_F.transpose() + \
                qd.Matrix([[1.0, 0.0], [0.0, 1.0]]) * (LAMBDA * (J - 1.0) * J)
            stress = -(DT * P_VOL * 4.0 * INV_DX * INV_DX) * cauchy
            affine = stress + P_MASS * C[f, p]
            for i in qd.static(range(3)):
                for j in qd.static(range(3)):
                    offset = qd.Vector([i, j])
                    dpos = (qd.cast(offset, float) - fx) * DX
                    weight = w[i].x * w[j].y
                    grid_v_in[f, base + offset] += weight * (P_MASS * v[f, p] + affine @ dpos)
                    grid_m_in[f, base + offset] += weight * P_MASS

    @qd.kernel
    def grid_op(f: qd.i32):
        for i, j in qd.ndrange(N_GRID, N_GRID):
            inv_m = 1.0 / (grid_m_in[f, i, j] + 1e-10)
            v_out = inv_m * grid_v_in[f, i, j]
            v_out.y -= DT * GRAVITY
            # The box walls stop motion into them.
            if i < BOUND and v_out.x < 0:
                v_out.x = 0.0
            if i > N_GRID - BOUND and v_out.x > 0:
                v_out.x = 0.0
            if j < BOUND and v_out.y < 0:
                v_out.y = 0.0
            if j > N_GRID - BOUND and v_out.y > 0:
                v_out.y = 0.0
            grid_v_out[f, i, j] = v_out

    @qd.kernel
    def g2p(f: qd.i32):
        for p in range(n_particles):
            base = qd.cast(x[f, p] * INV_DX - 0.5, qd.i32)
            fx = x[f, p] * INV_DX - qd.cast(base, float)
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
            new_v = vec2(0.0, 0.0)
            new_C = qd.Matrix([[0.0, 0.0], [0.0, 0.0]])
            for i in qd.static(range(3)):
                for j in qd.static(range(3)):
                    dpos = qd.cast(qd.Vector([i, j]), float) - fx
                    g_v = grid_v_out[f, base[0] + i, base[1] + j]
                    weight = w[i].x * w[j].y
                    new_v += weight * g_v
                    new_C += 4.0 * weight * g_v.outer_product(dpos) * INV_DX
            v[f + 1, p] = new_v
            x[f + 1, p] = x[f, p] + DT * new_v
            C[f + 1, p] = new_C

    @qd.kernel
    def compute_center():
        for p in range(n_particles):
            center[None] += x[steps - 1, p] / n_particles

    @qd.kernel
    def compute_loss():
        loss[None] = (center[None] - target[None]).norm_sqr()

    def clear():
        for f in (grid_v_in, grid_m_in, grid_v_out, center):
            f.fill(0)

    def forward():
        clear()
        set_velocity()
        for s in range(steps - 1):
            p2g(s)
            grid_op(s)
            g2p(s)
        compute_center()
        compute_loss()
        return loss[None]

    place_particles()
    target[None] = TARGET
    return dict(forward=forward, loss=loss, init_v=init_v, x=x, n_particles=n_particles)


def gradient(sim):
    with qd.ad.Tape(loss=sim["loss"]):
        value = sim["forward"]()
    return value, sim["init_v"].grad.to_numpy()


def finite_difference_check(sim, h=1e-5):
    """Largest relative difference between the Tape gradient of the loss
    with respect to the initial velocity and central differences."""
    v0 = sim["init_v"].to_numpy()
    _, grad = gradient(sim)
    fd = np.zeros(DIM)
    for k in range(DIM):
        values = []
        for sign in (1, -1):
            shifted = v0.copy()
            shifted[k] += sign * h
            sim["init_v"].from_numpy(shifted)
            values.append(sim["forward"]())
        fd[k] = (values[0] - values[1]) / (2 * h)
    sim["init_v"].from_numpy(v0)
    return grad, fd, float(np.max(np.abs(grad - fd)) / np.max(np.abs(fd)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--side", type=int, default=64, help="particles per side")
    parser.add_argument("--steps", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=None,
                        help="default: 0.4 / T^2 for T the simulated time")
    parser.add_argument("--ci", action="store_true",
                        help="a smaller run: 48x48 particles, 64 steps, 12 iterations")
    args = parser.parse_args(argv)
    if args.ci:
        args.side, args.steps, args.iterations = 48, 64, 12

    if args.learning_rate is None:
        # The mean position moves by about T times the initial velocity, so
        # the loss is close to a quadratic of curvature 2 T^2 in it: this
        # step removes ~80% of the error per iteration without overshooting.
        args.learning_rate = 0.4 / ((args.steps - 1) * DT) ** 2
    qd.init(arch=qd.cpu, default_fp=qd.f64)
    sim = build(args.side, args.steps)
    print(f"{sim['n_particles']} particles, {args.steps} steps, target {TARGET}")
    sim["init_v"][None] = [0.0, 0.0]
    grad, fd, rel = finite_difference_check(sim)
    print(f"d loss / d initial velocity at the start: tape {grad.tolist()}, central "
          f"differences {fd.tolist()}, relative difference {rel:.2e}")
    history = []
    for iteration in range(args.iterations):
        value, grad = gradient(sim)
        history.append(value)
        print(f"iteration {iteration:3d}  loss {value:.6e}  initial velocity "
              f"{np.round(sim['init_v'].to_numpy(), 4).tolist()}")
        sim["init_v"][None] = sim["init_v"].to_numpy() - args.learning_rate * grad
    final = sim["forward"]()
    print(f"final loss {final:.6e} (from {history[0]:.6e})")
    return history, final, rel


if __name__ == "__main__":
    main()
