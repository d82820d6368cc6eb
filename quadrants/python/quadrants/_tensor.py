"""Private helpers of the qd.Tensor layer that upstream's tests import."""
from quadrants.lang import ndarray as _ndarray
from quadrants.lang import tensor as _tensor


def _with_layout(value, layout):
    """Tags ndarray `value` (or the ndarray a qd.Tensor wraps), allocated
    at its physical shape, with `layout`: from then on its shape, indices
    and host copies follow the axis order the layout restores, and so do
    its grad's. The tag is kept as given, identity included. Returns the
    ndarray."""
    impl = value._unwrap() if isinstance(value, _tensor.Tensor) else value
    if not isinstance(impl, _ndarray.Ndarray):
        raise TypeError(f"_with_layout() tags an ndarray, got {type(impl).__name__}")
    if impl._element_shape:
        raise TypeError("layout= is not supported with compound dtypes (vector/matrix/struct "
                        "elements)")
    layout = _ndarray.check_layout(layout, len(impl._physical_shape))
    for array in (impl, impl.grad):
        if array is not None:
            array._qd_layout = layout
    return impl
