"""The Python package from an importing workspace: loss = sum(x^2) and its
gradient 2x, exact in f64."""
import sys

import numpy as np

import quadrants as qd

qd.init(arch=qd.cpu)
x = qd.field(qd.f64, shape=4, needs_grad=True)
loss = qd.field(qd.f64, shape=(), needs_grad=True)


@qd.kernel
def square_sum():
    for i in x:
        loss[None] += x[i] * x[i]


values = np.array([-1.5, 0.0, 0.5, 2.0])
x.from_numpy(values)
with qd.ad.Tape(loss=loss):
    square_sum()
ok = loss[None] == np.sum(values**2) and np.array_equal(x.grad.to_numpy(), 2 * values)
print(f"python: loss = {loss[None]}, dloss/dx = {x.grad.to_numpy()}",
      "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
