"""Static equilibrium of a hanging chain by Newton's method, with the
Newton steps solved by conjugate gradients on Hessian-vector products.

A chain of N free nodes hangs between two fixed anchors: springs of
stiffness K and rest length REST join neighbours, gravity pulls each node
down. The equilibrium minimizes the energy E(x), computed by one kernel
over the node positions x (a field of 2N values). Each Newton iteration
takes the gradient from qd.ad.Tape and solves H p = -grad E with CG, where
every product H d is one qd.ad.hvp (forward mode over the gradient
kernel): H is never formed. A backtracking line search keeps E
decreasing. Near the solution the gradient norm falls quadratically.

    python examples/newton_cg.py [--nodes 40]
"""
import argparse

import numpy as np

import quadrants as qd

K = 50.0
MASS_G = 0.02
SPAN = 10.0


def build(nodes):
    rest = 0.9 * SPAN / (nodes + 1)  # shorter than the spacing: taut
    x = qd.field(qd.f64, 2 * nodes, needs_grad=True)
    energy = qd.field(qd.f64, (), needs_grad=True)

    @qd.func
    def node(k):
        # Nodes 0 and nodes + 1 are the anchors at (0, 0) and (SPAN, 0).
        p = qd.Vector([0.0, 0.0], dt=qd.f64)
        if k == nodes + 1:
            p = qd.Vector([SPAN, 0.0], dt=qd.f64)
        elif k > 0:
            p = qd.Vector([x[2 * k - 2], x[2 * k - 1]], dt=qd.f64)
        return p

    @qd.kernel
    def compute_energy():
        for s in range(nodes + 1):
            stretch = (node(s + 1) - node(s)).norm() - rest
            energy[None] += 0.5 * K * stretch * stretch
        for i in range(nodes):
            energy[None] += MASS_G * x[2 * i + 1]

    return x, energy, compute_energy


def value_and_gradient(x, energy, compute_energy, values):
    x.from_numpy(values)
    with qd.ad.Tape(loss=energy):
        compute_energy()
    return energy[None], x.grad.to_numpy()


def conjugate_gradients(hessian_product, rhs, tolerance, max_iterations):
    """Solves H p = rhs given p -> H p; returns (p, iterations)."""
    p = np.zeros_like(rhs)
    r = rhs.copy()
    d = r.copy()
    rr = r @ r
    for k in range(max_iterations):
        hd = hessian_product(d)
        curvature = d @ hd
        if curvature <= 0:  # not positive definite here: take what we have
            return (p if k else rhs), k
        alpha = rr / curvature
        p += alpha * d
        r -= alpha * hd
        rr_new = r @ r
        if np.sqrt(rr_new) < tolerance:
            return p, k + 1
        d = r + (rr_new / rr) * d
        rr = rr_new
    return p, max_iterations


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=40)
    parser.add_argument("--arch", default="cpu")
    args = parser.parse_args(argv)
    qd.init(arch=getattr(qd, args.arch), default_fp=qd.f64)
    x, energy, compute_energy = build(args.nodes)
    # Start from the straight line between the anchors.
    values = np.zeros(2 * args.nodes)
    values[0::2] = SPAN * np.arange(1, args.nodes + 1) / (args.nodes + 1)
    history = []
    for iteration in range(30):
        e, gradient = value_and_gradient(x, energy, compute_energy, values)
        norm = float(np.linalg.norm(gradient))
        history.append((e, norm))
        # Below ~1e-8 the energy (about 0.4) no longer resolves a step in f64.
        if norm < 1e-8:
            break

        def hessian_product(direction):
            x.from_numpy(values)
            return qd.ad.hvp(compute_energy, energy, x, direction)

        step, cg_iterations = conjugate_gradients(
            hessian_product, -gradient, tolerance=1e-3 * min(norm, 1.0) * norm,
            max_iterations=4 * args.nodes)
        t = 1.0
        while True:
            trial, _ = value_and_gradient(x, energy, compute_energy, values + t * step)
            if trial <= e + 1e-4 * t * (gradient @ step) or t < 1e-8:
                break
            t *= 0.5
        values = values + t * step
        print(f"iteration {iteration:2d}  energy {e:.10f}  |grad| {norm:.3e}  "
              f"CG iterations {cg_iterations:3d}  step {t:g}")
    print(f"equilibrium: energy {history[-1][0]:.10f}, |grad| {history[-1][1]:.3e}, lowest "
          f"node at y = {values[1::2].min():.6f}")
    return history, values


if __name__ == "__main__":
    main()
