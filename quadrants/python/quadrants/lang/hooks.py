"""Late-bound implementations: how a lower module calls code of a module
above it.

Some operations of a lower module need a class or function that a higher
module defines, and the higher module imports the lower one (ops needs
Matrix for vector arithmetic; a field needs the kernels that read sparse
fields). The lower module declares a Hooks object naming what it needs;
the higher module fills it in with register() when it is imported. Importing
any module of the package imports `quadrants` first, which imports every
module, so each hook is filled in before user code runs.
"""
from quadrants.lang.exception import QuadrantsRuntimeError


class Hooks:
    """Named implementations one module provides to another.

    hooks = Hooks("quadrants.lang.matrix", "Matrix", "elementwise") declares
    them; the provider calls hooks.register(Matrix=..., elementwise=...);
    users read hooks.Matrix. Reading one that is not registered yet raises
    QuadrantsRuntimeError naming the provider."""

    def __init__(self, provider, *names):
        object.__setattr__(self, "_provider", provider)
        object.__setattr__(self, "_names", frozenset(names))

    def register(self, **implementations):
        unknown = set(implementations) - self._names
        if unknown:
            raise QuadrantsRuntimeError(f"{self._provider} registers unknown hooks "
                                        f"{sorted(unknown)}; declared: {sorted(self._names)}")
        for name, implementation in implementations.items():
            object.__setattr__(self, name, implementation)

    def __getattr__(self, name):
        # Only called for names not registered (or not declared).
        if name.startswith("__") or name not in self._names:
            raise AttributeError(name)
        raise QuadrantsRuntimeError(f"'{name}' is provided by {self._provider}, which is not "
                                    f"imported yet (import quadrants first)")

    def __setattr__(self, name, value):
        raise AttributeError("use register() to fill in hooks")

    def __repr__(self):
        return f"Hooks({self._provider!r}, {', '.join(sorted(self._names))})"
