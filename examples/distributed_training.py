"""Data-parallel training through a Quadrants simulation with torch.distributed.

The controller and simulation of examples/torch_training.py, split over
processes: each process runs one Quadrants session (on GPU `rank` with
--arch cuda, `qd.init(device_id=rank)`), simulates its shard of the
environments and backpropagates its part of the loss; torch all-reduces
the controller's gradients (NCCL on GPUs, gloo on CPUs), so every process
takes the same optimizer step. Quadrants has no transport of its own.

One machine: this script starts --processes workers itself. Several
machines: start it with torchrun on each, which sets RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR and MASTER_PORT, for example
    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d \\
        --rdzv-endpoint HOST:29500 examples/distributed_training.py --arch cuda
(the GPU of a worker is its LOCAL_RANK). --check compares the all-reduced
gradient of the first step with one process's gradient over all the
environments.
"""
import argparse
import os
import socket
import sys

import numpy as np
import torch
import torch.distributed as dist

import quadrants as qd

# `python -I` leaves the script's folder off sys.path; the sibling module is there.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_training  # pylint: disable=wrong-import-position


def shard_gradient(controller, layer, envs, shard):
    """Backpropagates this shard's part of the mean squared miss over all
    the environments; returns that part of the loss."""
    start, goal, steps = (t[shard] for t in envs)
    features = torch.stack([start, goal, steps.double() * torch_training.DT], dim=1)
    force = ((goal - start) * controller(features).squeeze(1)).contiguous()
    end = layer(force, start, steps, torch.zeros_like(start))
    loss = ((end - goal) ** 2).sum() / torch_training.ENVS
    loss.backward()
    return loss.detach()


def flat_gradient(controller):
    return torch.cat([p.grad.reshape(-1) for p in controller.parameters()]).cpu().numpy()


def new_controller(device):
    torch.manual_seed(0)  # every process starts from the same weights
    return torch.nn.Sequential(torch.nn.Linear(3, 32), torch.nn.Tanh(),
                               torch.nn.Linear(32, 1)).double().to(device)


def worker(rank, world, args, results):
    dist.init_process_group("nccl" if args.arch == "cuda" else "gloo", rank=rank,
                            world_size=world)
    local = int(os.environ.get("LOCAL_RANK", rank))
    qd.init(arch=getattr(qd, args.arch), device_id=local if args.arch == "cuda" else 0,
            ad_stack_experimental_enabled=True, default_fp=qd.f64)
    device = f"cuda:{local}" if args.arch == "cuda" else "cpu"
    envs = torch_training.make_environments(device)
    shard = slice(rank * torch_training.ENVS // world, (rank + 1) * torch_training.ENVS // world)
    controller = new_controller(device)
    optimizer = torch.optim.Adam(controller.parameters(), lr=0.05)
    layer = qd.ad.torch_function(torch_training.simulate, outputs="end")
    for iteration in range(args.iterations):
        optimizer.zero_grad()
        loss = shard_gradient(controller, layer, envs, shard)
        for p in controller.parameters():
            dist.all_reduce(p.grad)
        dist.all_reduce(loss)
        if iteration == 0 and results is not None and rank == 0:
            results.put(flat_gradient(controller))
        optimizer.step()
        if rank == 0:
            print(f"iteration {iteration:3d}  loss {loss.item():.6e}", flush=True)
    dist.destroy_process_group()


def single_process_gradient(arch):
    """The first step's gradient over every environment in one session."""
    qd.init(arch=getattr(qd, arch), ad_stack_experimental_enabled=True, default_fp=qd.f64)
    device = "cuda:0" if arch == "cuda" else "cpu"
    controller = new_controller(device)
    layer = qd.ad.torch_function(torch_training.simulate, outputs="end")
    shard_gradient(controller, layer, torch_training.make_environments(device),
                   slice(0, torch_training.ENVS))
    qd.reset()
    return flat_gradient(controller)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if "RANK" in os.environ:  # started by torchrun
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args, None)
        return None
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    context = torch.multiprocessing.get_context("spawn")
    results = context.SimpleQueue()
    torch.multiprocessing.start_processes(worker, args=(args.processes, args, results),
                                          nprocs=args.processes, start_method="spawn")
    reduced = results.get()
    if not args.check:
        return None
    single = single_process_gradient(args.arch)
    rel = float(np.max(np.abs(reduced - single)) / np.max(np.abs(single)))
    print(f"all-reduced gradient of {args.processes} processes vs one process over all "
          f"{torch_training.ENVS} environments: max relative difference {rel:.2e}")
    return rel


if __name__ == "__main__":
    main()
