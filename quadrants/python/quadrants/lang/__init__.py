"""The Quadrants language: types, fields, ndarrays, kernels, autodiff."""


def __getattr__(name):
    """As upstream, quadrants.lang also offers the package's public names
    (`from quadrants.lang import cpu, cuda, kernel`), looked up when asked
    for, once the package has loaded."""
    import quadrants  # pylint: disable=import-outside-toplevel
    if not name.startswith("_") and name in vars(quadrants):
        return vars(quadrants)[name]
    raise AttributeError(f"module 'quadrants.lang' has no attribute '{name}'")
