"""Train a JAX controller through a Quadrants simulation, the whole step
under jax.jit.

Each of ENVS environments is a damped point mass on a line that must come
to rest at its goal. A small MLP written in jax.numpy reads an
environment's start, goal and horizon and outputs a gain; the force it
pushes with is the gain times the distance to go; the Quadrants kernel
`simulate` integrates every environment for its own number of steps (a
per-environment horizon, so the loop's trip count is dynamic and its
gradient goes through the adstack) and returns where each one ends. The
loss is the mean squared miss. qd.ad.jax_function makes the kernel a JAX
function with a custom VJP, so jax.value_and_grad reaches the MLP's weights
through the simulation, and the training step (forward, kernel, gradient
kernel, Adam update) is one jax.jit-compiled program; the kernel works on
XLA's buffers in place.

    python3 examples/jax_training.py --iterations 30 [--arch cuda]
"""
import argparse
import os
import time

import numpy as np

import quadrants as qd

ENVS = 256
DT = 0.05
DAMPING = 0.8


@qd.kernel
def simulate(force: qd.types.ndarray(qd.f32, 1), start: qd.types.ndarray(qd.f32, 1),
             steps: qd.types.ndarray(qd.i32, 1), end: qd.types.ndarray(qd.f32, 1)):
    for e in range(force.shape[0]):
        p = start[e]
        v = 0.0
        for _ in range(steps[e]):
            v += (force[e] - DAMPING * v) * DT
            p += v * DT
        end[e] += p


def make_environments(seed=0):
    rng = np.random.default_rng(seed)
    start = rng.uniform(-1.0, 1.0, ENVS).astype(np.float32)
    goal = rng.uniform(-1.0, 1.0, ENVS).astype(np.float32)
    steps = rng.integers(20, 60, ENVS).astype(np.int32)
    return start, goal, steps


def init_mlp(jax, key, sizes=(3, 32, 1)):
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, (n_in, n_out)) / np.sqrt(n_in),
                       jax.numpy.zeros(n_out)))
    return params


def mlp(jax, params, features):
    h = features
    for k, (w, b) in enumerate(params):
        h = h @ w + b
        if k < len(params) - 1:
            h = jax.numpy.tanh(h)
    return h[:, 0]


def adam(jax, lr=0.05, b1=0.9, b2=0.999, eps=1e-8):
    """Adam on a pytree of parameters, in jax.numpy."""
    tree = jax.tree_util

    def init(params):
        zeros = tree.tree_map(jax.numpy.zeros_like, params)
        return (zeros, zeros, 0)

    def update(grads, state, params):
        m, v, t = state
        t += 1
        m = tree.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = tree.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        scale = lr * jax.numpy.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        params = tree.tree_map(lambda p, m, v: p - scale * m / (jax.numpy.sqrt(v) + eps),
                               params, m, v)
        return params, (m, v, t)

    return init, update


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--arch", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args(argv)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax  # pylint: disable=import-outside-toplevel
    qd.init(arch=getattr(qd, args.arch), ad_stack_experimental_enabled=True)
    device = jax.devices("cpu" if args.arch == "cpu" else "gpu")[0]
    start, goal, steps = (jax.device_put(a, device) for a in make_environments())
    features = jax.numpy.stack([start, goal, steps.astype(np.float32) * DT], axis=1)
    to_go = goal - start
    layer = qd.ad.jax_function(simulate, outputs="end")
    params = jax.device_put(init_mlp(jax, jax.random.PRNGKey(0)), device)
    init, update = adam(jax)
    state = init(params)

    def loss_fn(params):
        force = to_go * mlp(jax, params, features)
        end = layer(force, start, steps, jax.numpy.zeros_like(start))
        return ((end - goal) ** 2).mean()

    @jax.jit
    def train_step(params, m, v, t):
        loss, grads = jax.value_and_grad(loss_fn)(params)
        params, (m, v, _) = update(grads, (m, v, t), params)
        return params, m, v, loss

    losses = []
    begin = time.perf_counter()
    m, v, _ = state
    for iteration in range(args.iterations):
        params, m, v, loss = train_step(params, m, v, iteration)
        losses.append(float(loss))
        print(f"iteration {iteration:3d}  loss {losses[-1]:.6e}")
    seconds = (time.perf_counter() - begin) / max(1, args.iterations)
    print(f"{args.arch}: {seconds * 1e3:.2f} ms per iteration; loss {losses[0]:.4e} -> "
          f"{losses[-1]:.4e} ({losses[-1] / losses[0]:.3f} of the first)")
    return losses


if __name__ == "__main__":
    main()
