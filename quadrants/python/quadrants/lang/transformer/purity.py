"""The purity rule of @qd.kernel(fastcache=True) kernels (and of the funcs
they call): a value read from outside the function, baked into the
compiled kernel, must not be one that can change between runs, since a
cached kernel would keep the old value. Python numbers, strings and fields
captured from globals or closures break the rule; enum members, math and
numpy constants and Quadrants' own attributes do not. An UPPERCASE name
(a constant by convention) or a read inside qd.static() only warns.
"""
import ast
import enum
import math
import os
import types as pytypes
import warnings

import numpy as np

from quadrants.lang.exception import QuadrantsCompilationError
from quadrants.lang.field import Field

_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _changeable(value):
    """Values a cached kernel would bake in although they may change."""
    if isinstance(value, enum.Enum):
        return False
    return isinstance(value, (int, float, str, Field)) or \
        type(value).__name__ in ("MatrixField", "StructField")


def _in_package(compiler):
    return os.path.abspath(compiler.source.file).startswith(_PACKAGE + os.sep)


def _report(compiler, node, message, lenient):
    if lenient:
        warnings.warn(message, stacklevel=2)
        return
    raise compiler.error(node, message, QuadrantsCompilationError)


def check_global_name(compiler, node, name, value):
    """A Name the function read from its globals or closure."""
    if not compiler.ctx.pure or name.startswith("_qd_") or _in_package(compiler) or \
            not _changeable(value):
        return
    message = (f"[PURE.VIOLATION] WARNING: Accessing global variable {name} {type(value)} "
               f"{name} is in global vars, therefore violates pure")
    _report(compiler, node, message, name.upper() == name or compiler.static_depth > 0)


def root_is_global(compiler, node):
    """Whether the attribute chain `node` starts at a global or closure name."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id not in compiler.scope and \
        node.id in compiler.globals


def check_global_attribute(compiler, node, owner, value):
    """owner.attr (value) read through a chain rooted at a global name."""
    if not compiler.ctx.pure or _in_package(compiler) or not _changeable(value) or \
            not root_is_global(compiler, node.value):
        return
    if owner in (math, np) or (isinstance(owner, pytypes.ModuleType) and
                               owner.__name__.split(".")[0] == "quadrants"):
        return
    reason = f"({ast.unparse(node)} is a {type(value).__name__} read at compile time)"
    message = (f"[PURE.VIOLATION] WARNING: Accessing global var {node.attr} from outside "
               f"function scope within pure kernel {reason}")
    _report(compiler, node, message, node.attr.upper() == node.attr or compiler.static_depth > 0)
