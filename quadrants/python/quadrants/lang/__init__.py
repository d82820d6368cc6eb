"""The Quadrants language: types, fields, ndarrays, kernels, autodiff."""
