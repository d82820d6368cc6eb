"""Heat diffusion on a 2-D grid with Quadrants kernels.

A hot square in the middle of a cold plate spreads out over time; the
explicit scheme conserves total heat exactly up to float rounding, which
the demo checks and prints along with a coarse picture of the plate.
"""
import numpy as np

import quadrants as qd

N = 64
STEPS = 200
ALPHA = 0.2  # diffusion number; the explicit scheme is stable below 0.25


def main():
    qd.init(arch=qd.cpu)
    temperature = qd.field(qd.f32, shape=(N, N))
    scratch = qd.field(qd.f32, shape=(N, N))

    @qd.kernel
    def heat_square(size: qd.i32):
        for i, j in temperature:
            inside = abs(i - N // 2) < size and abs(j - N // 2) < size
            temperature[i, j] = 100.0 if inside else 0.0

    @qd.func
    def at(i, j):
        # Insulated edges: outside cells mirror the border.
        return temperature[max(0, min(N - 1, i)), max(0, min(N - 1, j))]

    @qd.kernel
    def step():
        for i, j in temperature:
            laplacian = at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1) \
                - 4.0 * temperature[i, j]
            scratch[i, j] = temperature[i, j] + ALPHA * laplacian
        for i, j in temperature:
            temperature[i, j] = scratch[i, j]

    heat_square(6)
    initial = temperature.to_numpy().astype(np.float64).sum()
    for _ in range(STEPS):
        step()
    final = temperature.to_numpy()
    print(f"Heat diffusion on a {N}x{N} plate, {STEPS} steps")
    shades = " .:-=+*#%@"
    for row in final[::8]:
        print("  " + "".join(shades[min(9, int(v / 10))] * 2 for v in row[::4]))
    drift = abs(final.astype(np.float64).sum() - initial) / initial
    print(f"peak temperature {final.max():.2f}, total heat {final.sum():.1f} "
          f"(initial {initial:.1f}, relative drift {drift:.1e})")
    assert drift < 1e-4, "heat was not conserved"


if __name__ == "__main__":
    main()
