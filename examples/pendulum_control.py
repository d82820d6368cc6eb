"""Differentiable pendulums: learn launch speeds by gradient descent.

Each of N damped pendulums starts at angle 0 with an unknown angular speed
and swings for its own number of time steps, read from a field, so every
thread runs a loop of a different, data-dependent length. The loss is the
squared miss between each pendulum's final angle and its target. Its
gradient with respect to the launch speeds needs every intermediate angle in
reverse order, which the adstack replays. The demo runs a few dozen gradient
descent iterations and prints the loss of each. It then checks one gradient
against central finite differences and plots the loss curve (matplotlib).
"""
import argparse
import os
import sys

import numpy as np

import quadrants as qd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loss_plot import save_loss_curve  # noqa: E402  pylint: disable=wrong-import-position

N = 64
DT = 0.01
GRAVITY = 9.81       # g / length, 1/s^2
DAMPING = 0.3        # 1/s
LEARNING_RATE = 3.0


def build():
    """Fields and kernels; returns (fields, simulate kernel)."""
    speed = qd.field(qd.f64, shape=N, needs_grad=True, name="speed")
    steps = qd.field(qd.i32, shape=N, name="steps")
    target = qd.field(qd.f64, shape=N, name="target")
    loss = qd.field(qd.f64, shape=(), needs_grad=True, name="loss")

    @qd.kernel
    def simulate():
        for i in speed:
            angle = 0.0
            omega = speed[i]
            for _ in range(steps[i]):  # a dynamic, per-thread trip count
                omega = omega - DT * (GRAVITY * qd.sin(angle) + DAMPING * omega)
                angle = angle + DT * omega
            loss[None] += (angle - target[i]) ** 2 / N

    return (speed, steps, target, loss), simulate


def evaluate(fields, simulate):
    loss = fields[3]
    loss[None] = 0.0
    simulate()
    return loss[None]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--plot", default=None, help="PNG path for the loss curve")
    args = parser.parse_args(argv)

    qd.init(arch=qd.cpu, ad_stack_experimental_enabled=True, default_fp=qd.f64)
    fields, simulate = build()
    speed, steps, target, loss = fields
    rng = np.random.default_rng(7)
    steps.from_numpy(rng.integers(40, 200, size=N).astype(np.int32))
    # Targets come from hidden speeds, so a zero loss is reachable.
    hidden = rng.uniform(1.0, 3.0, size=N)
    speed.from_numpy(hidden)
    target_angles = np.zeros(N)
    for i in range(N):
        omega, angle = hidden[i], 0.0
        for _ in range(int(steps[i])):
            omega -= DT * (GRAVITY * np.sin(angle) + DAMPING * omega)
            angle += DT * omega
        target_angles[i] = angle
    target.from_numpy(target_angles)
    speed.from_numpy(np.full(N, 2.0))

    print(f"{N} damped pendulums, {int(steps.to_numpy().min())}-"
          f"{int(steps.to_numpy().max())} steps each (read from a field)")
    # One gradient against f64 central differences, at the starting point
    # where gradients are large (near the optimum they drown in round-off).
    probe = 5
    with qd.ad.Tape(loss=loss):
        loss[None] = 0.0
        simulate()
    analytic = speed.grad[probe]
    h = 1e-6
    base = speed[probe]
    speed[probe] = base + h
    up = evaluate(fields, simulate)
    speed[probe] = base - h
    down = evaluate(fields, simulate)
    speed[probe] = base
    numeric = (up - down) / (2 * h)
    rel = abs(analytic - numeric) / max(abs(numeric), 1e-300)
    print(f"d loss / d speed[{probe}]: adstack {analytic:.9e}, finite differences "
          f"{numeric:.9e}, relative difference {rel:.1e}")

    history = []
    for it in range(args.iterations):
        with qd.ad.Tape(loss=loss):
            loss[None] = 0.0
            simulate()
        history.append(loss[None])
        print(f"iteration {it:3d}  loss {history[-1]:.6e}")
        speed.from_numpy(speed.to_numpy() - LEARNING_RATE * N * speed.grad.to_numpy())

    stats = qd.lang.runtime.adstack_stats()
    print(f"adstack: up to {max(max(c) for c in stats['capacities'] if c)} slots per "
          f"stack (longest loop + 2), heap {stats['heap_bytes']} bytes")

    plot = args.plot or os.path.join(
        os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd()), "quadrants_demo_loss.png")
    skipped = save_loss_curve(plot, history, "Pendulum launch speeds: loss per iteration")
    print(f"loss curve skipped: {skipped}" if skipped else f"loss curve written to {plot}")
    if rel > 1e-6:
        raise SystemExit("gradient check failed")
    if history[-1] > history[0] * 1e-2:
        raise SystemExit("gradient descent did not reduce the loss 100-fold")
    return history, rel


if __name__ == "__main__":
    main()
