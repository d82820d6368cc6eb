"""Upstream's module paths for the kernel front end's helpers (the front end
itself is quadrants.lang.transformer)."""
