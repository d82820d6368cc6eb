"""Differentiable mass-spring chain: learn spring rest lengths by gradient descent.

A chain of point masses joined by damped springs hangs from a fixed anchor
(mass 0). Its state (2-D vector fields of positions, velocities and forces)
is stepped through fields indexed by time step,
`x[t + 1, i] = x[t, i] + dt * v[t + 1, i]`, one launch per step, so the
reverse pass can read every intermediate state. The loss is the squared
distance between the free end of the chain at the final step and where a
chain with hidden rest lengths puts it. qd.ad.Tape records the launches and
runs their gradients in reverse, giving d loss / d rest_length for every
spring; gradient descent then moves the free end onto the target. The script checks one gradient against
central finite differences and prints the loss of each iteration.

    bazel run //examples:mass_spring -- --iterations 40
"""
import argparse

import numpy as np

import quadrants as qd

N_MASSES = 5
N_SPRINGS = N_MASSES - 1
STEPS = 120
DT = 0.01
STIFFNESS = 400.0
DAMPING = 0.98       # velocity kept per step
GRAVITY = -2.0
# The rest lengths that put the free end where it is observed; the
# optimization starts from all 0.4 and does not see these.
HIDDEN_REST = (0.6, 0.35, 0.55, 0.4)


def build():
    """Fields and kernels of the simulation, as a dict. Positions, velocities
    and forces are 2-D vectors (qd.math.vec2 with default_fp=f64)."""
    vec2 = qd.math.vec2
    x = qd.Vector.field(2, qd.f64, shape=(STEPS + 1, N_MASSES), needs_grad=True, name="x")
    v = qd.Vector.field(2, qd.f64, shape=(STEPS + 1, N_MASSES), needs_grad=True, name="v")
    f = qd.Vector.field(2, qd.f64, shape=(STEPS, N_MASSES), needs_grad=True, name="f")
    rest = qd.field(qd.f64, shape=N_SPRINGS, needs_grad=True, name="rest")
    loss = qd.field(qd.f64, shape=(), needs_grad=True, name="loss")
    target = qd.Vector.field(2, qd.f64, shape=(), name="target")

    @qd.kernel
    def spring_forces(t: qd.i32):
        for s in range(N_SPRINGS):
            d = x[t, s + 1] - x[t, s]
            length = d.norm()
            pull = STIFFNESS * (length - rest[s]) / length * d
            f[t, s] += pull
            f[t, s + 1] -= pull

    @qd.kernel
    def advance(t: qd.i32):
        for i in range(N_MASSES):
            anchored = 1.0 if i == 0 else 0.0
            v[t + 1, i] = (1.0 - anchored) * (v[t, i] * DAMPING +
                                              DT * (f[t, i] + vec2(0.0, GRAVITY)))
            x[t + 1, i] = x[t, i] + DT * v[t + 1, i]

    @qd.kernel
    def miss():
        loss[None] = (x[STEPS, N_MASSES - 1] - target[None]).norm_sqr()

    return dict(x=x, v=v, f=f, rest=rest, loss=loss, target=target,
                spring_forces=spring_forces, advance=advance, miss=miss)


def simulate(sim):
    """Runs STEPS steps from the chain lying along x at rest; returns the loss."""
    for name in ("x", "v", "f"):
        sim[name].fill(0)
    for i in range(N_MASSES):
        sim["x"][0, i] = [0.4 * i, 0.0]
    for t in range(STEPS):
        sim["spring_forces"](t)
        sim["advance"](t)
    sim["miss"]()
    return sim["loss"][None]


def gradient(sim):
    with qd.ad.Tape(loss=sim["loss"]):
        value = simulate(sim)
    return value, sim["rest"].grad.to_numpy()


def finite_difference_check(sim, spring=1, h=1e-6):
    """Relative difference between the Tape gradient and central differences."""
    rest = sim["rest"].to_numpy()
    _, grad = gradient(sim)
    values = []
    for sign in (1, -1):
        shifted = rest.copy()
        shifted[spring] += sign * h
        sim["rest"].from_numpy(shifted)
        values.append(simulate(sim))
    sim["rest"].from_numpy(rest)
    fd = (values[0] - values[1]) / (2 * h)
    return grad[spring], fd, abs(grad[spring] - fd) / max(abs(fd), 1e-30)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    args = parser.parse_args(argv)

    qd.init(arch=qd.cpu, default_fp=qd.f64)
    sim = build()
    # Observe where the free end of the hidden chain ends up.
    sim["rest"].from_numpy(np.array(HIDDEN_REST))
    simulate(sim)
    sim["target"][None] = sim["x"][STEPS, N_MASSES - 1]
    end = sim["target"][None]
    print(f"target: the free end at ({end[0]:.4f}, {end[1]:.4f})")
    sim["rest"].from_numpy(np.full(N_SPRINGS, 0.4))
    tape, fd, rel = finite_difference_check(sim)
    print(f"d loss / d rest[1] at the start: tape {tape:.10e}, central differences "
          f"{fd:.10e}, relative difference {rel:.2e}")
    history = []
    for iteration in range(args.iterations):
        value, grad = gradient(sim)
        history.append(value)
        print(f"iteration {iteration:3d}  loss {value:.6e}")
        # Steps are capped at learning_rate in length: the swinging chain
        # makes the loss steep in places, and a long step overshoots.
        step = args.learning_rate * grad / max(1.0, float(np.linalg.norm(grad)))
        sim["rest"].from_numpy(sim["rest"].to_numpy() - step)
    final = simulate(sim)
    print(f"final loss {final:.6e} (from {history[0]:.6e}); rest lengths "
          f"{np.round(sim['rest'].to_numpy(), 4).tolist()}")
    return history, final, rel


if __name__ == "__main__":
    main()
