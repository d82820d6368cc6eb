"""Aim a volley of projectiles with quadratic drag, written as a data-oriented class.

The simulation is one @qd.data_oriented class, the way upstream Quadrants
and Taichi programs are usually written: it holds the state (2-D vector
fields of positions and velocities indexed by time step, the learnable
launch velocities, the targets and the loss) and its kernels and funcs are
methods reaching that state through `self`. Each of the projectiles flies
STEPS steps under gravity and quadratic air drag; the loss is the mean
squared distance between where each one is at the last step and its
target. qd.ad.Tape records the launches and runs their gradients in reverse,
giving d loss / d launch velocity, and gradient descent aims the volley.
A kernel method that returns a value reports the highest point reached.
The script checks one gradient against central finite differences.

    bazel run //examples:projectile -- --iterations 60
"""
import argparse

import numpy as np

import quadrants as qd

STEPS = 100
DT = 0.02
GRAVITY = -9.8
DRAG = 0.05          # quadratic drag coefficient per unit mass


@qd.data_oriented
class Volley:
    """n projectiles launched from the origin towards their targets."""

    def __init__(self, n):
        self.n = n
        vec = qd.types.vector(2, qd.f64)
        self.x = vec.field(shape=(STEPS + 1, n), needs_grad=True)
        self.v = vec.field(shape=(STEPS + 1, n), needs_grad=True)
        self.launch = vec.field(shape=n, needs_grad=True)
        self.target = vec.field(shape=n)
        self.loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.func
    def acceleration(self, vel):
        # Drag opposes the velocity with a magnitude growing as its square.
        return qd.Vector([0.0, GRAVITY]) - DRAG * vel.norm() * vel

    @qd.kernel
    def start(self):
        for i in range(self.n):
            self.x[0, i] = qd.Vector([0.0, 0.0])
            self.v[0, i] = self.launch[i]

    @qd.kernel
    def step(self, t: qd.i32):
        for i in range(self.n):
            self.v[t + 1, i] = self.v[t, i] + DT * self.acceleration(self.v[t, i])
            self.x[t + 1, i] = self.x[t, i] + DT * self.v[t + 1, i]

    @qd.kernel
    def miss(self):
        for i in range(self.n):
            self.loss[None] += (self.x[STEPS, i] - self.target[i]).norm_sqr() / self.n

    @qd.kernel
    def apex(self) -> qd.f64:
        top = -1e30
        for t in qd.static(range(0, STEPS + 1, 10)):
            for i in qd.static(range(4)):
                top = max(top, self.x[t, i][1])
        return top

    def run(self):
        """The whole flight; returns the loss."""
        self.loss[None] = 0.0
        self.start()
        for t in range(STEPS):
            self.step(t)
        self.miss()
        return self.loss[None]

    def gradient(self):
        with qd.ad.Tape(loss=self.loss):
            value = self.run()
        return value, self.launch.grad.to_numpy()


def finite_difference_check(volley, which=(1, 0), h=1e-6):
    """Relative difference between the Tape gradient and central differences."""
    launch = volley.launch.to_numpy()
    _, grad = volley.gradient()
    values = []
    for sign in (1, -1):
        shifted = launch.copy()
        shifted[which] += sign * h
        volley.launch.from_numpy(shifted)
        values.append(volley.run())
    volley.launch.from_numpy(launch)
    fd = (values[0] - values[1]) / (2 * h)
    return grad[which], fd, abs(grad[which] - fd) / max(abs(fd), 1e-30)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--learning-rate", type=float, default=2.0)
    parser.add_argument("--arch", default="cpu", choices=["cpu", "cuda", "vulkan"])
    args = parser.parse_args(argv)

    qd.init(arch=getattr(qd, args.arch), default_fp=qd.f64)
    volley = Volley(8)
    volley.target.from_numpy(np.stack([np.linspace(3.0, 10.0, 8), np.zeros(8)], axis=1))
    volley.launch.from_numpy(np.tile([4.0, 4.0], (8, 1)))
    tape, fd, rel = finite_difference_check(volley)
    print(f"d loss / d launch[1].x at the start: tape {tape:.10e}, central differences "
          f"{fd:.10e}, relative difference {rel:.2e}")
    history = []
    for iteration in range(args.iterations):
        value, grad = volley.gradient()
        history.append(value)
        print(f"iteration {iteration:3d}  loss {value:.6e}")
        volley.launch.from_numpy(volley.launch.to_numpy() - args.learning_rate * grad)
    final = volley.run()
    print(f"final loss {final:.6e} (from {history[0]:.6e}); highest of the first four "
          f"{volley.apex():.3f}")
    return history, final, rel


if __name__ == "__main__":
    main()
