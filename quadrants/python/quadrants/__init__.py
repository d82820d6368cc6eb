"""Quadrants: a differentiable kernel compiler.

    import quadrants as qd
    qd.init(arch=qd.cpu)

    @qd.kernel
    def saxpy(a: qd.f32, x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]
"""
from quadrants.lang import ad, impl, types
from quadrants.lang.exception import (QuadrantsAssertionError, QuadrantsCompilationError,
                                      QuadrantsError, QuadrantsRuntimeError,
                                      QuadrantsSyntaxError, QuadrantsTypeError)
from quadrants.lang.field import (Field, field, i, ij, ijk, ijkl, j, k, l, rescale_index,
                                  root)
from quadrants.lang.kernel import func, kernel, pure
from quadrants.lang.data_oriented import data_oriented
from quadrants.lang.misc import extension, is_extension_supported
from quadrants.lang.ndarray import Ndarray, from_dlpack, ndarray
from quadrants.lang.buffer_view import BufferView
from quadrants.lang.fields_builder import FieldsBuilder
from quadrants.lang._perf_dispatch import perf_dispatch
from quadrants.lang import graph
from quadrants.lang.checkpoint import GraphStatus, checkpoint
from quadrants.lang.graph import do_while as graph_do_while
from quadrants.lang.graph import parallel as graph_parallel
from quadrants.lang.graph import parallel_context as graph_parallel_context
from quadrants.lang.stream import create_event, create_stream, stream_parallel
from quadrants.lang import simt
from quadrants.lang.simt._tile import outer
from quadrants.lang import mathlib as math  # qd.math
from quadrants.lang.composite_field import Layout, MatrixField
from quadrants.lang.decompositions import (eig, make_spd, polar_decompose, solve, svd,
                                          sym_eig)
from quadrants.lang.matrix import Matrix, Vector
from quadrants.lang import struct as _struct_module
from quadrants.lang.struct import Struct, StructField, dataclass
from quadrants.lang.transformer import grouped
from quadrants.lang.ops import (abs, acos, asin, atan2, atomic_add, atomic_and, atomic_max,
                                atomic_min, atomic_or, atomic_sub, atomic_xor, cast, ceil, cos,
                                exp, floor, log, max, min, pow, rsqrt, select, sin, sqrt,
                                stop_grad, tan, tanh, volatile_load)
from quadrants.lang.ops import random
from quadrants.lang.ops import atomic_cas, atomic_exchange, atomic_mul, bit_shr, global_thread_idx
from quadrants.lang.numerics import bit_cast, frexp, raw_div, raw_mod, round
from quadrants.lang.ops import (assume_in_range, one, randn, static_assert, static_print,
                                zero)
from quadrants.lang.runtime import (amdgpu, arm64, cpu, cuda, gpu, init, metal, python, reset,
                                    sync, vulkan, x64)
from quadrants.lang.transformer import NdRange as ndrange
from quadrants.lang.transformer import loop_config, static
from quadrants.lang.types import (f16, f32, f64, i8, i16, i32, i64, ref, template, u1, u8,
                                  u16, u32, u64)
from quadrants.lang.real_func import real_func
from quadrants.lang.types import Template
from quadrants.lang.field import ScalarField
from quadrants.lang.ndarray import MatrixNdarray, ScalarNdarray, VectorNdarray
from quadrants.lang.tensor import Backend, MatrixTensor, Tensor, VectorTensor, tensor, wrap

# qd.types.vector / matrix / struct live with their classes; the types
# module cannot import them (they import it).
types.vector = math.vector
types.matrix = math.matrix
types.struct = _struct_module.struct

# qd.algorithms and qd.linalg build on the names above.
from quadrants import algorithms, experimental, linalg  # pylint: disable=wrong-import-position

from quadrants._version import __version__  # pylint: disable=wrong-import-position

# qd.types is the quadrants.types package: quadrants.lang.types and
# upstream's submodules (enums, primitive_types, ...).
import importlib as _importlib  # pylint: disable=wrong-import-position
types = _importlib.import_module("quadrants.types")
# pylint: disable=wrong-import-position
from quadrants._logging import (CRITICAL, DEBUG, ERROR, INFO, TRACE, WARN,
                                is_logging_effective, set_logging_level)
from quadrants.lang.exception import (QuadrantsIndexError, QuadrantsNameError,
                                      QuadrantsRuntimeTypeError)
from quadrants.lang.misc import is_arch_supported, is_extension_enabled
from quadrants.types.primitive_types import (float16, float32, float64, int8, int16, int32,
                                             int64, uint1, uint8, uint16, uint32, uint64)
from quadrants.lang import runtime as _runtime


from quadrants import _lib  # noqa: E402  (upstream's qd._lib.utils)


def __getattr__(name):
    """qd.cfg: the active session's options (impl.current_cfg()), None
    before qd.init()."""
    if name == "cfg":
        return impl.current_cfg() if _runtime.is_initialized() else None
    raise AttributeError(f"module 'quadrants' has no attribute '{name}'")
# Sparse SNodes' kernel operations and host-side deactivation.
from quadrants.lang.sparse import (activate, append, deactivate, is_active, length,
                                   no_activate)
from quadrants.lang.sparse_host import deactivate_all_snodes
