"""quadrants.types (qd.types): data types and parameter annotations.

Everything quadrants.lang.types defines (the scalar types, ndarray / NDArray,
template), the compound types (vector, matrix, struct) and upstream's
submodules: primitive_types, enums, annotations, ndarray_type,
compound_types and utils. Quantized types (upstream's quant) are not
supported by any backend here (qd.extension.quant).
"""
from quadrants.lang import types as _lang_types

# The public names quadrants.lang.types defines (not those it imports).
globals().update({name: value for name, value in vars(_lang_types).items()
                  if not name.startswith("_") and not isinstance(value, type(_lang_types))
                  and getattr(value, "__module__", _lang_types.__name__) == _lang_types.__name__})

# pylint: disable=wrong-import-position
from quadrants.types import (annotations, compound_types, enums, ndarray_type, primitive_types,
                             utils)
from quadrants.types.compound_types import matrix, struct, vector
from quadrants.types.primitive_types import *  # noqa: F401,F403 pylint: disable=wildcard-import
from quadrants.types.utils import is_integral, is_real, is_signed, is_tensor
