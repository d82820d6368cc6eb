"""qd.BufferView: a contiguous sub-range [offset, offset + size) of a 1-D
ndarray, passed to kernels as the ndarray and two i32 values, so views of
one ndarray at other offsets reuse one compiled kernel.

On the host a view is made by slicing (data[8:24], view[4:12]) or by
BufferView(ndarray, offset, size); in kernel code v[i] reads and writes
data[offset + i], v.size and v.shape give its length, and v.subview(o, n),
v[a:b] and BufferView(arr, offset, size) make narrower views. With
qd.init(debug=True) every access, subview and in-kernel construction is
checked against the view's range, and a failure names the thread, the index,
the view's offset and size, and the kernel and functions it happened in.
"""
import numbers

from quadrants.lang import context, ops, session, types
from quadrants.lang.exception import QuadrantsSyntaxError, QuadrantsTypeError


def _check_range(offset, size, length, what):
    if not (isinstance(offset, numbers.Integral) and isinstance(size, numbers.Integral)):
        raise TypeError(f"{what}: offset and size must be ints, got {offset!r} and {size!r}")
    if offset < 0 or size < 0 or offset + size > length:
        raise ValueError(f"{what}: [{offset}, {offset + size}) is out of range for a buffer "
                         f"of {length} elements")


def slice_bounds(key, length, what):
    """(offset, size) of a slice of a sequence of `length` elements."""
    if key.step not in (None, 1):
        raise ValueError(f"{what}: a BufferView is contiguous: slices need step=1, got "
                         f"step={key.step}")
    start, stop, _ = key.indices(length)
    return start, max(0, stop - start)


class BufferViewType(type):
    """BufferView[dtype] as an annotation names the element type."""

    def __getitem__(cls, dtype):
        return BufferViewAnnotation(dtype)


class BufferViewAnnotation:
    """BufferView[dtype]: a view whose ndarray holds `dtype` elements."""

    def __init__(self, dtype):
        self.dtype = dtype if hasattr(dtype, "_flat_dtypes") else types.normalize(dtype)

    def __repr__(self):
        return f"BufferView[{self.dtype}]"


class BufferView(metaclass=BufferViewType):
    """BufferView(ndarray, offset, size): elements [offset, offset + size) of
    a 1-D ndarray (see the module)."""

    _qd_intrinsic = True  # BufferView(arr, offset, size) in kernel code

    def __new__(cls, ndarray, offset=0, size=None):
        if context.current() is not None:
            return KernelView.construct(ndarray, offset, size)
        return super().__new__(cls)

    def __init__(self, ndarray, offset=0, size=None):
        shape = getattr(ndarray, "shape", None)
        if not hasattr(ndarray, "_core") or shape is None:
            raise TypeError(f"BufferView needs a qd.ndarray, got {type(ndarray).__name__}")
        if len(shape) != 1:
            raise TypeError(f"BufferView views 1D ndarrays only; this one has shape "
                            f"{tuple(shape)}")
        if getattr(ndarray, "grad", None) is not None:
            raise TypeError("BufferView does not support ndarrays with needs_grad=True")
        size = shape[0] - offset if size is None else size
        _check_range(offset, size, shape[0], "BufferView")
        self._ndarray, self.offset, self.size = ndarray, int(offset), int(size)

    @property
    def shape(self):
        return (self.size,)

    def get_ndarray(self):
        return self._ndarray

    def subview(self, offset, size):
        """Elements [offset, offset + size) of this view."""
        try:
            _check_range(offset, size, self.size, "subview")
        except ValueError as e:
            raise ValueError(f"subview out of range: {e}") from None
        return BufferView(self._ndarray, self.offset + offset, size)

    def __getitem__(self, key):
        if not isinstance(key, slice):
            raise TypeError("a BufferView is indexed in kernels; on the host, slice it "
                            "(view[a:b]) or read its ndarray")
        start, size = slice_bounds(key, self.size, "BufferView slice")
        return self.subview(start, size)

    def __repr__(self):
        return f"BufferView(offset={self.offset}, size={self.size})"


def is_annotation(ann):
    return ann is BufferView or isinstance(ann, BufferViewAnnotation)


class KernelView:
    """A BufferView in kernel code: the ndarray parameter, and the offset and
    size as i32 values."""

    def __init__(self, array, offset, size, check_size=True):
        self.array, self.offset, self.size = array, offset, size
        self._check_size = check_size

    @staticmethod
    def construct(array, offset, size):
        """BufferView(arr, offset, size) in kernel code."""
        if isinstance(array, KernelView):
            raise QuadrantsTypeError("BufferView(...) in kernel code takes an ndarray; use "
                                     "view.subview(offset, size) for a view of a view")
        if getattr(array, "ndim", None) != 1 or not hasattr(array, "physical"):
            raise QuadrantsTypeError("BufferView(arr, offset, size) needs a 1D ndarray "
                                     "parameter")
        offset, size = _i32(offset), _i32(array.shape[0] if size is None else size)
        _debug_check(_in_range(offset, size, array.shape[0]),
                     "BufferView construction out of range: offset=%d size=%d ndarray "
                     "length=%d", [offset, size, array.shape[0]])
        return KernelView(array, offset, size)

    @property
    def shape(self):
        return (self.size,)

    @ops.intrinsic
    def subview(self, offset, size):
        offset, size = _i32(offset), _i32(size)
        _debug_check(_in_range(offset, size, self.size),
                     "subview Out Of Range: offset=%d size=%d, parent size=%d",
                     [offset, size, self.size])
        return KernelView(self.array, ops.add(self.offset, offset), size)

    def slice(self, key):
        if key.step is not None:
            raise QuadrantsSyntaxError("a BufferView slice in kernel code takes no explicit "
                                       "step (views are contiguous)")
        start = 0 if key.start is None else key.start
        stop = self.size if key.stop is None else key.stop
        return self.subview(start, ops.sub(stop, start))

    def index(self, i):
        """The ndarray index of element i, checked in debug mode."""
        i = _i32(i)
        # A run-time error carries three values: the index, offset and size.
        _debug_check(ops.bit_and(ops.cmp_ge(i, 0), ops.cmp_lt(i, self.size)),
                     "BufferView Out Of Range: kernel[%s] got index %%d "
                     "(offset=%%d, size=%%d).\nCallstack:\n%s",
                     [i, self.offset, self.size], frames=True)
        return ops.add(self.offset, i)


def _in_range(offset, size, length):
    return ops.bit_and(ops.bit_and(ops.cmp_ge(offset, 0), ops.cmp_ge(size, 0)),
                       ops.cmp_le(ops.add(offset, size), length))


def _i32(value):
    value = context.load(value)
    if isinstance(value, numbers.Integral):
        return context.constant(int(value), types.i32)
    return ops.cast(value, types.i32)


def _debug_check(cond, message, args, frames=False):
    """An assertion of `cond` in debug mode (nothing otherwise)."""
    if not session.option("debug", False):
        return
    ctx = context.current()
    if frames:
        stack = "\n".join("  " * depth + frame for depth, frame in enumerate(ctx.frames))
        message = message % (ctx.frames[0].split(" ")[0], stack.replace("%", "%%"))
    cond = context.to_expr(cond)
    ctx.builder.assert_(cond.stmt, message, [context.to_expr(a).stmt for a in args])
