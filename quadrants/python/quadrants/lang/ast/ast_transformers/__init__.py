"""Upstream's module paths for the kernel front end's helpers."""
