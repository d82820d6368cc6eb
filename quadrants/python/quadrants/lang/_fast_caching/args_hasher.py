"""The argument part of a fastcache key: what of each argument the compiled
kernel depends on.

A value compiled into the kernel (a template primitive, a primitive member
of a @qd.data_oriented or dataclass argument) keys by its value; a run-time
argument (a scalar parameter, an ndarray) by its type. Fields cannot be
keyed: their memory bindings are compiled in and depend on every field of
the program, so an argument reaching one disables the fastcache for the
call (silently through a qd.Tensor parameter, with a warning otherwise),
as does a value of a type the key does not understand.
"""
import dataclasses
import enum
import numbers
import sys

import numpy as np

from quadrants import _logging
from quadrants.lang import buffer_view, types
from quadrants.lang import tensor as tensor_module
from quadrants.lang._fast_caching import FIELD_METADATA_CACHE_VALUE
from quadrants.lang._fast_caching.hash_utils import hash_iterable_strings
from quadrants.lang.data_oriented import is_data_oriented
from quadrants.lang.composite_field import MatrixField
from quadrants.lang.field import Field
from quadrants.lang.matrix import Matrix
from quadrants.lang.ndarray import Ndarray
from quadrants.lang.struct import StructField

_FIELDS = (Field, MatrixField, StructField)


class FastcacheSkip(enum.Enum):
    """Why a call's arguments have no key."""

    FIELD_VIA_TENSOR = "field_via_tensor"  # a field through a qd.Tensor: silent
    WARN = "warn"  # a field or an unsupported value: warned about


class _Skip(Exception):
    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def _is_template(arg_meta):
    if arg_meta is None:
        return False
    ann = arg_meta.annotation
    return isinstance(ann, types.Template) or ann in (types.Template, types.template)


def _is_tensor(arg_meta):
    return arg_meta is not None and tensor_module.is_annotation(arg_meta.annotation)


def _warn_param(path, arg):
    _logging.warn(f"[FASTCACHE][PARAM_INVALID] Parameter with path {'.'.join(path)} and "
                  f"type {type(arg)} not allowed by fast cache.")


def _primitive(arg, by_value):
    """The key of a bool, integer or float (None: not one)."""
    if isinstance(arg, (bool, np.bool_)):
        kind = f"{type(arg).__module__}.{type(arg).__name__}"  # numpy 2 names np.bool_ "bool"
        return f"{kind}={bool(arg)}" if by_value else kind
    if isinstance(arg, (numbers.Integral, np.integer)):
        return f"{type(arg).__name__}={int(arg)}" if by_value else type(arg).__name__
    if isinstance(arg, (numbers.Real, np.floating)):
        return f"{type(arg).__name__}={float(arg).hex()}" if by_value else type(arg).__name__
    return None


def _torch_tensor(arg):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(arg, torch.Tensor)


def _members(arg, path, by_value, via_tensor, seen):
    """Keys of the members of a data-oriented object or a dataclass."""
    if id(arg) in seen:
        return "<cycle>"
    seen = seen | {id(arg)}
    parts = [f"{type(arg).__module__}.{type(arg).__qualname__}"]
    if dataclasses.is_dataclass(arg):
        for member in dataclasses.fields(arg):
            # Members are compiled in as a template's are, so a primitive
            # member keys by value here (FIELD_METADATA_CACHE_VALUE asks it
            # of upstream's run-time members; it is the rule here).
            value_keyed = by_value or bool(member.metadata.get(FIELD_METADATA_CACHE_VALUE))
            member_tensor = via_tensor or tensor_module.is_annotation(member.type)
            parts.append(member.name + ":" + _stringify(getattr(arg, member.name),
                                                        path + (member.name,), value_keyed,
                                                        member_tensor, seen))
        return "(" + ",".join(parts) + ")"
    lifted = not getattr(type(arg), "_qd_template_primitives", True)
    members = arg._asdict() if hasattr(arg, "_asdict") else vars(arg)  # a NamedTuple
    for name, value in members.items():
        parts.append(name + ":" + _stringify(value, path + (name,), by_value and not lifted,
                                             via_tensor, seen))
    return "(" + ",".join(parts) + ")"


def _stringify(arg, path, by_value, via_tensor, seen):
    if arg is None:
        return "None"
    if isinstance(arg, enum.Enum):
        return f"enum {type(arg).__module__}.{type(arg).__qualname__}.{arg.name}={arg.value!r}"
    primitive = _primitive(arg, by_value)
    if primitive is not None:
        return primitive
    if isinstance(arg, tensor_module.Tensor):
        return _stringify(tensor_module.unwrap(arg), path, by_value, True, seen)
    if isinstance(arg, Ndarray):
        return f"ndarray {arg.element_type} {arg.ndim} {arg._qd_layout}"
    if isinstance(arg, _FIELDS):
        if via_tensor:
            raise _Skip(FastcacheSkip.FIELD_VIA_TENSOR)
        _warn_param(path, arg)
        raise _Skip(FastcacheSkip.WARN)
    if isinstance(arg, np.ndarray):
        return f"numpy {arg.dtype} {arg.ndim}"
    if _torch_tensor(arg):
        return f"torch {arg.dtype} {arg.dim()}"
    if isinstance(arg, buffer_view.BufferView):
        return f"view {arg.get_ndarray().element_type}"
    if isinstance(arg, Matrix):
        return f"matrix {tuple(arg.to_numpy().shape)}"
    if is_data_oriented(arg) or (dataclasses.is_dataclass(arg) and not isinstance(arg, type)):
        return _members(arg, path, True, via_tensor, seen)
    if isinstance(arg, tuple):
        return "(" + ",".join(_stringify(v, path + (str(k),), by_value, via_tensor, seen)
                              for k, v in enumerate(arg)) + ")"
    _warn_param(path, arg)
    raise _Skip(FastcacheSkip.WARN)


def stringify_obj_type(raise_on_templated_floats, path, obj, arg_meta):
    """The key of one argument, or the FastcacheSkip that prevents one."""
    del raise_on_templated_floats  # refused (or not) when the kernel is bound
    try:
        return _stringify(obj, tuple(path), _is_template(arg_meta), _is_tensor(arg_meta),
                          frozenset())
    except _Skip as skip:
        return skip.reason


def hash_args(raise_on_templated_floats, args, arg_metas):
    """The key of a call's arguments, or the FastcacheSkip of the first one
    that prevents it."""
    parts = []
    for position, (arg, meta) in enumerate(zip(args, arg_metas)):
        name = meta.name if meta is not None and meta.name else f"arg{position}"
        part = stringify_obj_type(raise_on_templated_floats, (name,), arg, meta)
        if isinstance(part, FastcacheSkip):
            return part
        parts.append(part)
    return hash_iterable_strings(parts)
