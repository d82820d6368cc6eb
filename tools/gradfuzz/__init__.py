"""gradfuzz: random kernels with dynamic loops, their gradients checked
against finite differences, forward mode and f32 (see README.md)."""
