"""Train a PyTorch controller through a Quadrants simulation.

Each of ENVS environments is a damped point mass on a line that must come
to rest at its goal. A small torch MLP reads an environment's start, goal
and horizon and outputs a gain; the force it pushes with is the gain
times the distance to go; the Quadrants
kernel `simulate` integrates every environment for its own number of steps
(a per-environment horizon, so the loop's trip count is dynamic and its
gradient goes through the adstack) and returns where each one ends. The
loss is the mean squared miss; qd.ad.torch_function makes the kernel a
torch autograd function, so loss.backward() reaches the MLP's weights
through the simulation, and Adam trains it.

    python3 examples/torch_training.py --iterations 30 [--arch cuda]
"""
import argparse
import time

import numpy as np
import torch

import quadrants as qd

ENVS = 256
DT = 0.05
DAMPING = 0.8


@qd.kernel
def simulate(force: qd.types.ndarray(qd.f64, 1), start: qd.types.ndarray(qd.f64, 1),
             steps: qd.types.ndarray(qd.i32, 1), end: qd.types.ndarray(qd.f64, 1)):
    for e in range(force.shape[0]):
        p = start[e]
        v = 0.0
        for _ in range(steps[e]):
            v += (force[e] - DAMPING * v) * DT
            p += v * DT
        end[e] += p


def make_environments(device, seed=0):
    rng = np.random.default_rng(seed)
    start = torch.tensor(rng.uniform(-1.0, 1.0, ENVS), dtype=torch.float64, device=device)
    goal = torch.tensor(rng.uniform(-1.0, 1.0, ENVS), dtype=torch.float64, device=device)
    steps = torch.tensor(rng.integers(20, 60, ENVS), dtype=torch.int32, device=device)
    return start, goal, steps


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--arch", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args(argv)
    qd.init(arch=getattr(qd, args.arch), ad_stack_experimental_enabled=True,
            default_fp=qd.f64)
    device = "cuda" if args.arch == "cuda" else "cpu"
    torch.manual_seed(0)
    start, goal, steps = make_environments(device)
    features = torch.stack([start, goal, steps.double() * DT], dim=1)
    to_go = goal - start
    controller = torch.nn.Sequential(torch.nn.Linear(3, 32), torch.nn.Tanh(),
                                     torch.nn.Linear(32, 1)).double().to(device)
    optimizer = torch.optim.Adam(controller.parameters(), lr=0.05)
    layer = qd.ad.torch_function(simulate, outputs="end")
    losses = []
    begin = time.perf_counter()
    for iteration in range(args.iterations):
        optimizer.zero_grad()
        force = (to_go * controller(features).squeeze(1)).contiguous()
        end = layer(force, start, steps, torch.zeros_like(start))
        loss = ((end - goal) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"iteration {iteration:3d}  loss {loss.item():.6e}")
    seconds = (time.perf_counter() - begin) / max(1, args.iterations)
    print(f"{args.arch}: {seconds * 1e3:.2f} ms per iteration; loss {losses[0]:.4e} -> "
          f"{losses[-1]:.4e} ({losses[-1] / losses[0]:.3f} of the first)")
    return losses


if __name__ == "__main__":
    main()
