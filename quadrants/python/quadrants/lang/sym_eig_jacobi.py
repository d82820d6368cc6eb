"""qd.sym_eig for 4x4 to 6x6 symmetric matrices: cyclic Jacobi in the kernel
language, compiled into the calling kernel by source_inline.

The sweeps run in a run-time loop, so code size stays one sweep however
many sweeps run (unrolling 12 sweeps of 15 rotations at 6x6 would make
compilation slow). Each rotation is the one the 2x2 and 3x3 paths of
decompositions.py use: the angle from atan2 zeroes M[p, q] exactly and
stays finite when M[p, q] is already 0. Twelve sweeps take any 6x6 matrix
to rounding level (cyclic Jacobi converges quadratically once the
off-diagonal part is small); eigenvalues come back in ascending order,
eigenvector k in column k.

A gradient through the run-time loop needs the adstack
(ad_stack_experimental_enabled=True), like any loop that carries values.
"""
from quadrants.lang import ops
from quadrants.lang.matrix import Matrix, Vector
from quadrants.lang.transformer.directives import static

SWEEPS = 12


def sym_eig_jacobi(A, n, dt):  # pylint: disable=invalid-name
    M = A  # pylint: disable=invalid-name
    V = Matrix.identity(dt, n)  # pylint: disable=invalid-name
    # A while loop stays serial where a for loop would not: called at the top
    # level of a kernel, a for loop would become a parallel task of its own.
    sweep = 0
    while sweep < SWEEPS:
        sweep += 1
        for p in static(range(n)):
            for q in static(range(p + 1, n)):
                theta = 0.5 * ops.atan2(2.0 * M[p, q], M[q, q] - M[p, p])
                c = ops.cos(theta)
                s = ops.sin(theta)
                for k in static(range(n)):
                    mkp = M[k, p]
                    mkq = M[k, q]
                    M[k, p] = c * mkp - s * mkq
                    M[k, q] = s * mkp + c * mkq
                for k in static(range(n)):
                    mpk = M[p, k]
                    mqk = M[q, k]
                    M[p, k] = c * mpk - s * mqk
                    M[q, k] = s * mpk + c * mqk
                for k in static(range(n)):
                    vkp = V[k, p]
                    vkq = V[k, q]
                    V[k, p] = c * vkp - s * vkq
                    V[k, q] = s * vkp + c * vkq
    lam = Vector.zero(dt, n)
    for k in static(range(n)):
        lam[k] = M[k, k]
    for i in static(range(n)):
        for j in static(range(i + 1, n)):
            if lam[j] < lam[i]:
                t = lam[i]
                lam[i] = lam[j]
                lam[j] = t
                for k in static(range(n)):
                    tv = V[k, i]
                    V[k, i] = V[k, j]
                    V[k, j] = tv
    return lam, V
