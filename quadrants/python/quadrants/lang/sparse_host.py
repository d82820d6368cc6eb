"""Host-side operations on sparse SNodes: deactivating all their cells
(SNode.deactivate_all, qd.deactivate_all_snodes) and host access to the
fields under them (x[i], to_numpy, from_numpy, fill).

Their elements are reached through tables and pools, so the host reads and
writes them with small kernels. Inactive cells read as zero; a write
activates its cell. The kernels need the kernel compiler, which builds on
fields, so this module registers them with quadrants.lang.field."""
import numpy as np

from quadrants.lang import context, ops, types
from quadrants.lang import field as field_module
from quadrants.lang.exception import QuadrantsRuntimeError
from quadrants.lang.expr import Expr
from quadrants.lang.field import SNode, element_indices
from quadrants.lang.kernel import kernel
from quadrants.lang.sparse import (_const, _decompose, _index_exprs, _info, _inside, _ptr,
                                   _shape, deactivate)
from quadrants.lang.transformer import grouped
from quadrants.lang.types import f64, i32, i64, ndarray, template


def _deactivate_linear(node, k):
    """qd.deactivate() of cell number k (row-major) of `node`'s cells, or of
    its lists for a dynamic node."""
    info = _info(node._id)
    target = info["parent"] if info["kind"] == "dynamic" else node._id
    shape = _shape(target) if target else ()
    deactivate(node, _decompose(context.to_expr(k), list(shape)) if shape else [])


_deactivate_linear._qd_intrinsic = True
_kernels = {}


def deactivate_all(node_id):
    """Deactivates every cell of sparse SNode `node_id` (for a dynamic one,
    empties every list) and of the sparse levels inside them; for another
    SNode, does so for the outermost sparse levels under it."""
    info = _info(node_id)
    if info["kind"] not in ("pointer", "bitmasked", "dynamic"):
        _, levels = _inside(node_id)
        for level in levels:
            deactivate_all(level)
        return
    target = info["parent"] if info["kind"] == "dynamic" else node_id
    count = 1
    for n in (_shape(target) if target else ()):
        count *= n
    if "deactivate" not in _kernels:
        _kernels["deactivate"] = _make_deactivate_kernel()
    _kernels["deactivate"](SNode(node_id, _shape(node_id)), count)


def _make_deactivate_kernel():

    @kernel
    def deactivate_cells(node: template(), count: template()):
        for k in range(count):
            _deactivate_linear(node, k)
    return deactivate_cells


def deactivate_all_snodes():
    """Deactivates every cell of every sparse SNode."""
    deactivate_all(0)


# ---- host access to fields under sparse levels ----------------------------------

def _field_indices(f, k):
    """Storage indices (one per layout axis) of f's element number k
    (row-major over its dimensions)."""
    return f._physical(_decompose(context.to_expr(k), list(f.shape)), _const(0))


def _field_at(f, k):
    place = f.place_id()
    return Expr(context.builder().global_load(_ptr(place, _field_indices(f, k), f.name)),
                f.dtype)


def _field_store(f, k, value):
    value = ops.cast(context.to_expr(value), f.dtype)
    context.builder().global_store(_ptr(f.place_id(), _field_indices(f, k), f.name),
                                   value.stmt)


for _fn in (_field_at, _field_store):
    _fn._qd_intrinsic = True


def _host_kernels():
    if "read" in _kernels:
        return _kernels

    @kernel
    def read_all(x: template(), out: ndarray()):
        for k in range(out.shape[0]):
            out[k] = _field_at(x, k)

    @kernel
    def write_all(x: template(), src: ndarray()):
        for k in range(src.shape[0]):
            _field_store(x, k, src[k])

    @kernel
    def read_one(x: template(), k: i32, out: ndarray()):
        out[0] = _field_at(x, k)

    @kernel
    def write_float(x: template(), k: i32, value: f64):
        _field_store(x, k, value)

    @kernel
    def write_int(x: template(), k: i32, value: i64):
        _field_store(x, k, value)

    @kernel
    def fill_active(x: template(), value: f64):
        for I in grouped(x):
            _field_store_at(x, I, value)

    _kernels.update(read=read_all, read_one=read_one, write=write_all, write_float=write_float,
                    write_int=write_int, fill=fill_active)
    return _kernels


def _field_store_at(f, I, value):
    idx = [e.stmt for e in _index_exprs(I, len(f.shape), "fill()")]  # element_indices expands
    value = ops.cast(context.to_expr(value), f.dtype)
    context.builder().global_store(
        context.builder().field_ptr(f.place_id(), element_indices(f, idx), f.name),
        value.stmt)


_field_store_at._qd_intrinsic = True


def _flat(f, index):
    k = 0
    for i, n in zip(index, f.shape):
        k = k * n + i
    if k >= 2**31:
        raise QuadrantsRuntimeError(f"field '{f.name}': host access to sparse fields takes "
                                    f"element numbers below 2**31")
    return k


def to_numpy(f):
    size = 1
    for n in f.shape:
        size *= n
    out = np.zeros(size, dtype=types.to_numpy_dtype(f.dtype))
    _host_kernels()["read"](f, out)
    return out.reshape(f.shape)


def from_numpy(f, array):
    flat = np.ascontiguousarray(array, dtype=types.to_numpy_dtype(f.dtype)).reshape(-1)
    _host_kernels()["write"](f, flat)


def read(f, index):
    out = np.zeros(1, dtype=types.to_numpy_dtype(f.dtype))
    _host_kernels()["read_one"](f, _flat(f, index), out)
    return out[0].item()


def write(f, index, value):
    k = _flat(f, index)
    kernels = _host_kernels()
    if f.dtype.is_float:
        kernels["write_float"](f, k, float(value))
    else:
        kernels["write_int"](f, k, int(value))


def fill(f, value):
    _host_kernels()["fill"](f, float(value))


field_module.sparse_host.register(read=read, write=write, to_numpy=to_numpy,
                                  from_numpy=from_numpy, fill=fill,
                                  deactivate_all=deactivate_all)
