"""Helpers upstream keeps in quadrants.lang.util: optional dependencies,
conversions between Quadrants, numpy and PyTorch dtypes, and scope checks."""
import functools
import shutil
import warnings

from quadrants.lang import context, options, types
from quadrants.lang.exception import QuadrantsSyntaxError, QuadrantsTypeError


def has_pytorch():
    """Whether PyTorch can be imported (and QD_ENABLE_TORCH is not 0)."""
    if options.env_value("enable_torch") is False:
        return False
    try:
        import torch  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        return False
    return True


def get_clangpp():
    """The path of clang++-10, the compiler upstream builds external
    functions with, or None."""
    return shutil.which("clang++-10")


def has_clangpp():
    return get_clangpp() is not None


def to_numpy_type(dt):
    """The numpy dtype of Quadrants type `dt`."""
    return types.to_numpy_dtype(types.normalize(dt, "to_numpy_type()")).type


_TORCH_NAMES = {"u1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
                "f16": "float16", "f32": "float32", "f64": "float64"}


def to_pytorch_type(dt):
    """The torch dtype of Quadrants type `dt` (PyTorch must be installed)."""
    import torch  # pylint: disable=import-outside-toplevel
    dtype = types.normalize(dt, "to_pytorch_type()")
    found = getattr(torch, _TORCH_NAMES[dtype.name], None)
    if found is None:
        raise QuadrantsTypeError(f"to_pytorch_type(): this PyTorch has no {dtype} dtype")
    return found


# Upstream's other name for it.
dtype_to_torch_dtype = to_pytorch_type


def to_quadrants_type(dt):
    """The Quadrants type of a Quadrants, numpy or torch dtype."""
    if isinstance(dt, types.DataType):
        return dt
    if type(dt).__module__ == "torch":
        names = {v: k for k, v in _TORCH_NAMES.items()}
        name = str(dt).rsplit(".", 1)[-1]
        if name in names:
            return types.by_name(names[name])
        raise QuadrantsTypeError(f"to_quadrants_type(): torch dtype {dt} has no Quadrants type")
    return types.normalize(dt, "to_quadrants_type()")


def in_quadrants_scope():
    """Whether a kernel or qd.func is being compiled (Quadrants scope)."""
    return context.current() is not None


def in_python_scope():
    return not in_quadrants_scope()


def quadrants_scope(fn):
    """Decorates a function callable only while a kernel compiles."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if not in_quadrants_scope():
            raise QuadrantsSyntaxError(f"{fn.__name__}() can only be called in a kernel or "
                                       f"qd.func")
        return fn(*args, **kwargs)
    return wrapped


def python_scope(fn):
    """Decorates a function callable only outside kernels."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if in_quadrants_scope():
            raise QuadrantsSyntaxError(f"{fn.__name__}() cannot be called in a kernel or "
                                       f"qd.func")
        return fn(*args, **kwargs)
    return wrapped


def warning(msg, warning_type=UserWarning, stacklevel=1):
    """warnings.warn(msg) attributed to the caller's caller at stacklevel 1."""
    warnings.warn(msg, warning_type, stacklevel=stacklevel + 2)
