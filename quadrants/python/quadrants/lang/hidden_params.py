"""Kernel parameters the user does not declare.

Two kinds follow a kernel's own parameters in its IR:
- the return buffers (kernel_returns.ReturnType), allocated per launch;
- the ndarrays a kernel reaches through a template argument (a member of a
  @qd.data_oriented object, `self.x`, or a template parameter bound to an
  ndarray). Each is found again at every launch by the path that reached it
  at compile time, so a member reassigned to another ndarray of the same
  dtype and dimensions is the one the launch uses; one of another signature
  compiles the kernel again.
"""
import numbers

import numpy as np

from quadrants.lang import runtime, types
from quadrants.lang.exception import QuadrantsRuntimeError
from quadrants.lang.expr import NdarrayArg
from quadrants.lang.ndarray import Ndarray

# Values whose identity says nothing about where they came from.
_ATOMS = (numbers.Number, str, bytes, bool, type(None), np.generic)


class Origins:
    """Where compile-time objects came from: (argument position, then the
    attribute names and constant indices that led to them)."""

    def __init__(self):
        self._paths = {}
        self._roots = {}

    def note_argument(self, value, position):
        if not isinstance(value, _ATOMS):
            self._paths[id(value)] = (position,)
            self._roots[position] = value

    def lifted_path(self, base, step, value):
        """The path of primitive `value` = base.<attr> when the argument it
        was reached from is a @qd.data_oriented(template_primitives=False)
        object (read at every launch), else None."""
        path = self._paths.get(id(base))
        if path is None or isinstance(value, (str, bytes)) or \
                not isinstance(value, (numbers.Number, np.generic)):
            return None
        root = self._roots.get(path[0])
        if getattr(type(root), "_qd_template_primitives", True):
            return None
        return path + (step,)

    def note_step(self, base, step, value):
        """value is base.<attr> (step ("attr", name)) or base[<index>]
        (step ("item", index))."""
        path = self._paths.get(id(base))
        if path is not None and not isinstance(value, _ATOMS):
            self._paths.setdefault(id(value), path + (step,))

    def path(self, value):
        return self._paths.get(id(value))


def resolve(path, args):
    """The object a path leads to from a launch's arguments."""
    value = args[path[0]]
    for kind, key in path[1:]:
        value = getattr(value, key) if kind == "attr" else value[key]
    return value


def _path_record(path):
    return [path[0]] + [[kind, key] for kind, key in path[1:]]


def _path_from_record(record):
    steps = []
    for kind, key in record[1:]:
        if kind not in ("attr", "item") or not isinstance(key, (str, int)):
            raise ValueError("malformed path")
        steps.append((kind, key))
    return (int(record[0]),) + tuple(steps)


def describe_path(path, names):
    text = names[path[0]]
    for kind, key in path[1:]:
        text += f".{key}" if kind == "attr" else f"[{key!r}]"
    return text


def element_layout(dtype):
    """The scalar type and trailing element shape of an ndarray's elements."""
    if hasattr(dtype, "_flat_dtypes") and hasattr(dtype, "shape"):
        return dtype.dtype, tuple(dtype.shape)
    if hasattr(dtype, "_flat_dtypes"):
        leaves = dtype._flat_dtypes()
        return leaves[0], (len(leaves),)
    return dtype, ()


class ImplicitNdarray:
    """An ndarray reached through a template argument, and its IR parameter."""

    def __init__(self, array, path, ir_index, label):
        self.path = path
        self.ir_index = ir_index
        self.label = label
        self.signature = signature(array)
        self.array = array if path is None else None  # no path: bound by identity

    def current(self, args):
        return self.array if self.path is None else resolve(self.path, args)


def signature(array):
    return (array.element_type, array.ndim, array._qd_layout)


class ImplicitScalar:
    """A primitive member of a @qd.data_oriented(template_primitives=False)
    object, read at every launch into a scalar IR parameter."""

    def __init__(self, value, path, ir_index, label, dtype):
        self.path = path
        self.ir_index = ir_index
        self.label = label
        self.dtype = dtype
        self.kind = type(value)

    def current(self, args):
        return resolve(self.path, args)


class Temporary:
    """A local that serial code and a parallel loop share, kept in a fresh
    buffer of `count` elements at every launch (transformer/shared_locals.py)."""

    def __init__(self, ir_index, label, dtype, count):
        self.ir_index = ir_index
        self.label = label
        self.dtype = dtype
        self.count = count

    def allocate(self):
        return np.zeros(self.count, dtype=types.to_numpy_dtype(self.dtype))


def scalar_dtype(value):
    if isinstance(value, (bool, np.bool_)):
        return types.i32
    if isinstance(value, (numbers.Integral, np.integer)):
        return runtime.default_ip()
    return runtime.default_fp()


class HiddenParams:
    """The hidden parameters of one compiled kernel, in IR order after the
    kernel's own: return buffers first, then, in the order the body meets
    them, ndarrays and primitives reached through template arguments and
    the buffers of shared locals."""

    def __init__(self, kernel_ir, return_type):
        self.kernel_ir = kernel_ir
        self.return_type = return_type
        self.return_args = []
        if return_type is not None:
            order, _ = return_type.buffer_dtypes()
            for k, dt in enumerate(order):
                self.return_args.append(
                    kernel_ir.add_ndarray_param(f"<return value {k}>", dt.name, 1))
        self.implicit = []
        # The first `x.grad` the kernel reads, if any: such a kernel has no
        # gradient kernel (its adjoint would be the second derivative).
        self.reads_grad = None
        self._by_id = {}
        self._by_path = {}

    def record(self):
        """The implicit parameters as JSON-able data, for a launch in
        another process (restored()); None when one cannot be found again
        from a launch's arguments (an ndarray bound by identity)."""
        items = []
        for imp in self.implicit:
            if isinstance(imp, Temporary):
                items.append(["temporary", imp.ir_index, imp.label, imp.dtype.name, imp.count])
            elif imp.path is None:
                return None
            elif isinstance(imp, ImplicitScalar):
                items.append(["scalar", imp.ir_index, imp.label, imp.dtype.name,
                              imp.kind.__name__, _path_record(imp.path)])
            else:
                items.append(["ndarray", imp.ir_index, imp.label, _path_record(imp.path)])
        return items

    @classmethod
    def restored(cls, items, return_type, args):
        """The HiddenParams of a record() for a launch with `args` (None
        when malformed, or when `args` do not hold what it names); the
        kernel it describes was compiled in another process."""
        hidden = cls.__new__(cls)
        hidden.kernel_ir = None
        hidden.return_type = return_type
        hidden.return_args = []
        hidden.reads_grad = None
        hidden._by_id, hidden._by_path = {}, {}
        hidden.implicit = []
        kinds = {"int": int, "float": float, "bool": bool}
        try:
            for item in items:
                if item[0] == "temporary":
                    hidden.implicit.append(Temporary(int(item[1]), str(item[2]),
                                                     types.by_name(item[3]), int(item[4])))
                elif item[0] == "scalar":
                    imp = ImplicitScalar.__new__(ImplicitScalar)
                    imp.ir_index, imp.label = int(item[1]), str(item[2])
                    imp.dtype, imp.kind = types.by_name(item[3]), kinds[item[4]]
                    imp.path = _path_from_record(item[5])
                    hidden.implicit.append(imp)
                elif item[0] == "ndarray":
                    imp = ImplicitNdarray.__new__(ImplicitNdarray)
                    imp.ir_index, imp.label = int(item[1]), str(item[2])
                    imp.path, imp.array = _path_from_record(item[3]), None
                    array = resolve(imp.path, args)
                    if not isinstance(array, Ndarray):
                        return None
                    imp.signature = signature(array)
                    hidden.implicit.append(imp)
                else:
                    return None
        except (TypeError, ValueError, KeyError, IndexError, AttributeError):
            return None  # a malformed record, or arguments without its paths
        return hidden

    def ndarray_arg(self, array, path, label):
        """The NdarrayArg standing for `array` in this kernel's IR."""
        known = self._by_id.get(id(array))
        if known is not None:
            return known[1]
        array._check_alive()
        scalar, elem = element_layout(array.element_type)
        index = self.kernel_ir.add_ndarray_param(label, scalar.name, array.ndim + len(elem))
        element = array.element_type if elem else None
        arg = NdarrayArg(index, scalar, array.ndim, label, element=element,
                         layout=array._qd_layout, value=array, path=path)
        self.implicit.append(ImplicitNdarray(array, path, index, label))
        self._by_id[id(array)] = (array, arg)
        return arg

    def temporary(self, label, dtype, count):
        """The NdarrayArg of a new shared-local buffer of `count` elements."""
        storage = types.i32 if dtype == types.u1 else dtype
        index = self.kernel_ir.add_ndarray_param(label, storage.name, 1)
        self.implicit.append(Temporary(index, label, storage, count))
        return NdarrayArg(index, storage, 1, label)

    def scalar_arg(self, value, path, label):
        """A run-time scalar parameter holding the primitive at `path`."""
        known = self._by_path.get(path)
        if known is None:
            dtype = scalar_dtype(value)
            index = self.kernel_ir.add_scalar_param(label, dtype.name)
            known = ImplicitScalar(value, path, index, label, dtype)
            self.implicit.append(known)
            self._by_path[path] = known
        return known

    def up_to_date(self, args):
        """Whether every implicit ndarray found from these arguments has the
        signature this kernel was compiled for."""
        for imp in self.implicit:
            if isinstance(imp, Temporary):
                continue
            try:
                value = imp.current(args)
            except (AttributeError, IndexError, KeyError, TypeError):
                return False
            if isinstance(imp, ImplicitScalar):
                if type(value) is not imp.kind:
                    return False
            elif not isinstance(value, Ndarray) or signature(value) != imp.signature:
                return False
        return True

    def launch_arguments(self, kernel_name, args):
        """The return buffers (fresh), and the implicit parameters' values
        in IR order (ndarrays as Ndarray objects)."""
        buffers = self.return_type.allocate() if self.return_type is not None else []
        arrays = []
        for imp in self.implicit:
            if isinstance(imp, Temporary):
                arrays.append(imp.allocate())
                continue
            array = imp.current(args)
            if isinstance(imp, ImplicitScalar):
                arrays.append(float(array) if imp.dtype.is_float else int(array))
                continue
            if not isinstance(array, Ndarray):
                raise QuadrantsRuntimeError(f"kernel '{kernel_name}': '{imp.label}' was an "
                                            f"ndarray when the kernel was compiled, now it "
                                            f"is a {type(array).__name__}")
            array._check_alive()
            arrays.append(array)
        return buffers, arrays

    def adjoints(self, buffers, arrays):
        """The adjoint arrays of the float hidden parameters, in IR order:
        return buffers get scratch ones (a returned value seeds no
        gradient); implicit ndarrays their .grad, or scratch."""
        out = []
        for buf in buffers:
            if np.issubdtype(buf.dtype, np.floating):
                out.append(np.zeros_like(buf))
        for array in arrays:
            if isinstance(array, np.ndarray):
                if np.issubdtype(array.dtype, np.floating):
                    out.append(np.zeros_like(array))
                continue
            if not isinstance(array, Ndarray) or not array._scalar.is_float:
                continue
            if array.grad is not None:
                out.append(array.grad._core)
            else:
                out.append(np.zeros(array._core_shape,
                                    dtype=types.to_numpy_dtype(array._scalar)))
        return out
