"""Autodiff helpers: qd.ad.Tape (reverse mode), qd.ad.FwdMode (forward mode),
custom gradients."""
import functools
import numbers

import numpy as np

from quadrants.lang import field as field_module
from quadrants.lang import ndarray as ndarray_module
from quadrants.lang import jax_interop, runtime, torch_interop, types
from quadrants.lang.exception import (QuadrantsGradientError, QuadrantsRuntimeError,
                                      QuadrantsTypeError)
from quadrants.lang.grad_check import GradChecker
from quadrants.lang.tensor import unwrap


class Tape:
    """Records kernel launches and replays their gradients in reverse.

        with qd.ad.Tape(loss=loss):
            forward(x)
            compute_loss()
        # x.grad now holds d loss / d x

    The loss is a 0-D float field with an adjoint, or a float ndarray of one
    element created with needs_grad=True. On entry every gradient (of fields
    and of ndarrays with .grad) is set to zero, the loss to zero and its
    adjoint to 1; on exit each recorded launch is differentiated, last launch
    first, with the arguments it was launched with: a kernel through its
    .grad, a qd.ad.grad_replaced function through its registered backward.

    With validation=True each kernel's gradient is compiled right after its
    forward launch, so a kernel that breaks the global data access rule
    (overwrites an element it read) raises QuadrantsGlobalDataAccessError,
    also a QuadrantsAssertionError, at that launch rather than on exit.

    A tape records the launches of the thread that entered it; other
    threads may run their own tapes meanwhile. Clearing on entry zeroes the
    gradients of the whole session, so threads taping at once pass
    clear_gradients=False and zero the gradients they own.
    """

    def __init__(self, loss=None, clear_gradients=True, validation=False, grad_check=None):
        if not isinstance(validation, bool):
            raise QuadrantsTypeError(f"qd.ad.Tape(validation=...) must be a bool, got "
                                     f"{validation!r}")
        loss = unwrap(loss)  # a qd.Tensor's field or ndarray
        self.loss = loss
        self.clear_gradients = clear_gradients
        self.validation = validation
        self.launches = []
        # grad_check=[fields]: checked against central differences on exit
        # (lang/grad_check.py); the state to replay from is saved now.
        self.grad_checker = None
        if grad_check:
            self.grad_checker = GradChecker(loss, grad_check)

    @property
    def calls(self):
        """The recorded launches as (function, args) pairs, in launch order."""
        return [(fn, args) for fn, args, _ in self.launches]

    def __enter__(self):
        runtime.program()
        if runtime.state.tape is not None:
            raise QuadrantsRuntimeError("qd.ad.Tape cannot be nested")
        if runtime.state.fwd_mode is not None:
            raise QuadrantsRuntimeError("qd.ad.Tape cannot be used inside qd.ad.FwdMode")
        if self.loss is not None:
            _check_loss(self.loss)
        if self.clear_gradients:
            clear_all_gradients()
        if self.loss is not None:
            if torch_interop.is_tensor(self.loss):
                torch_interop.seed_loss(self.loss)
            else:
                self.loss.fill(0)
                self.loss.grad.fill(1)
        runtime.state.tape = self
        return self

    def record(self, fn, args, kwargs):
        if self.validation and getattr(fn, "_qd_kernel", False):
            fn.check_gradient(*args, **kwargs)
        self.launches.append((fn, args, kwargs))

    def __exit__(self, exc_type, exc, traceback):
        runtime.state.tape = None
        if exc_type is not None:
            return False
        for fn, args, kwargs in reversed(self.launches):
            fn.grad(*args, **kwargs)
        if self.grad_checker is not None:
            self.grad_checker.check(self._replay)
        return False

    def _replay(self):
        for fn, args, kwargs in self.launches:
            fn(*args, **kwargs)


def _check_loss(loss):
    if isinstance(loss, field_module.Field):
        if len(loss.shape) != 0:
            raise QuadrantsGradientError(f"qd.ad.Tape(loss=...) needs a 0-D field, got field "
                                         f"'{loss.name}' of shape {loss.shape}")
        if loss.grad is None or not (loss.grad.placed or loss._needs_grad):
            raise QuadrantsGradientError(f"qd.ad.Tape(loss=...): field '{loss.name}' has no "
                                         f"adjoint; create it with needs_grad=True (a float "
                                         f"dtype), or place its .grad")
    elif isinstance(loss, ndarray_module.Ndarray):
        if loss.size != 1:
            raise QuadrantsGradientError(f"qd.ad.Tape(loss=...): The loss of `Tape` must be an "
                                         f"ndarray with only one element, got shape "
                                         f"{loss.shape}")
        if loss.grad is None:
            raise QuadrantsGradientError("qd.ad.Tape(loss=...): Gradients of loss are not "
                                         "allocated, please set needs_grad=True for all "
                                         "ndarrays that are required by autodiff. "
                                         "(qd.ndarray(dtype, shape, needs_grad=True))")
    elif torch_interop.is_tensor(loss):
        if loss.numel() != 1:
            raise QuadrantsGradientError(f"qd.ad.Tape(loss=...): The loss of `Tape` must be a "
                                         f"tensor only contains one element, got shape "
                                         f"{tuple(loss.shape)}")
        if not loss.requires_grad:
            raise QuadrantsGradientError("qd.ad.Tape(loss=...): Gradients of loss are not "
                                         "allocated, please set requires_grad=True for all "
                                         "tensors that are required by autodiff.")
    else:
        raise QuadrantsTypeError(f"qd.ad.Tape(loss=...) needs a qd.field, a qd.ndarray or a "
                                 f"torch tensor, got {type(loss).__name__}")


def clear_all_gradients():
    """Zeroes the adjoints of every field and ndarray of this session."""
    for f in field_module.live_fields():
        if f.grad is not None and f.grad.placed:
            f.grad.fill(0)
    # A copy of the weak references in one step: iterating the WeakSet
    # itself fails when another thread creates an ndarray meanwhile.
    refs = set(ndarray_module._with_grad.data)
    for array in (ref() for ref in refs):
        if array is not None and array._generation == runtime.state.generation:
            array.grad.fill(0)


class _GradReplaced:
    """A Python function whose gradient is given by hand (qd.ad.grad_replaced).

    Called under a Tape it runs as usual but is recorded as one launch, and
    the kernels it launches are not recorded: the Tape's reverse pass calls
    the backward registered with qd.ad.grad_for instead of their .grad.
    """

    def __init__(self, fn):
        if not callable(fn) or getattr(fn, "_qd_kernel", False) or \
                getattr(fn, "_qd_func", False):
            raise QuadrantsTypeError(f"qd.ad.grad_replaced decorates a plain Python function "
                                     f"(which may launch kernels), got {fn!r}")
        self.fn = fn
        self.backward = None
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        tape = runtime.state.tape
        if tape is not None and runtime.state.grad_replaced_depth == 0:
            tape.record(self, args, kwargs)
        runtime.state.grad_replaced_depth += 1
        try:
            return self.fn(*args, **kwargs)
        finally:
            runtime.state.grad_replaced_depth -= 1

    def __get__(self, instance, owner):
        # A method of a class (a @qd.data_oriented one): bound to its object,
        # which the Tape then passes to the backward too.
        if instance is None:
            return self
        return _BoundGradReplaced(self, instance)

    @property
    def grad(self):
        """fn.grad(*args): runs the backward registered with qd.ad.grad_for."""
        if self.backward is None:
            raise QuadrantsRuntimeError(f"'{self.__name__}' is decorated with "
                                        f"qd.ad.grad_replaced but has no backward; register "
                                        f"one with @qd.ad.grad_for({self.__name__})")
        return self.backward


class _BoundGradReplaced:
    """obj.method for a qd.ad.grad_replaced method: calls and .grad take
    `obj` as their first argument."""

    def __init__(self, replaced, instance):
        self._replaced, self._instance = replaced, instance
        functools.update_wrapper(self, replaced.fn)

    def __call__(self, *args, **kwargs):
        return self._replaced(self._instance, *args, **kwargs)

    @property
    def grad(self):
        return functools.partial(self._replaced.grad, self._instance)


def grad_replaced(fn):
    """Decorator: `fn`'s gradient under qd.ad.Tape is the function registered
    with @qd.ad.grad_for(fn), not the gradients of the kernels it launches."""
    return _GradReplaced(fn)


def grad_for(primal):
    """Decorator factory: @qd.ad.grad_for(primal) registers the decorated
    function as the backward of `primal` (a qd.ad.grad_replaced function);
    it is called with the arguments `primal` was called with.

    A primal that is not a qd.ad.grad_replaced function (a kernel, a plain
    function) raises QuadrantsGradientError, which is both a TypeError and
    a RuntimeError (upstream raises RuntimeError)."""
    if not isinstance(primal, _GradReplaced):
        what = "a kernel" if getattr(primal, "_qd_kernel", False) else repr(primal)
        raise QuadrantsGradientError(f"qd.ad.grad_for() needs a function decorated with "
                                 f"qd.ad.grad_replaced, got {what}; wrap the kernels in a "
                                 f"Python function decorated with @qd.ad.grad_replaced")

    def register(backward):
        if not callable(backward):
            raise QuadrantsTypeError(f"qd.ad.grad_for({primal.__name__}) decorates a "
                                     f"function, got {backward!r}")
        if primal.backward is not None:
            raise QuadrantsRuntimeError(f"'{primal.__name__}' already has a backward "
                                        f"('{primal.backward.__name__}')")
        primal.backward = backward
        return backward
    return register


def no_grad(fn):
    """Decorator: `fn` contributes nothing to gradients under qd.ad.Tape (the
    kernels it launches are not recorded)."""
    replaced = _GradReplaced(fn)
    replaced.backward = _no_backward
    return replaced


def _no_backward(*args, **kwargs):  # pylint: disable=unused-argument
    return None


class FwdMode:
    """Forward-mode autodiff: kernels launched inside propagate tangents.

        x = qd.field(qd.f32, shape=(), needs_dual=True)
        loss = qd.field(qd.f32, shape=(), needs_dual=True)
        with qd.ad.FwdMode(loss=loss, param=x):
            compute(x)
        # loss.dual[None] now holds d loss / d x

    On entry every dual is zeroed (unless clear_gradients=False) and
    param.dual is set to `seed`, the direction of the derivative: a number
    or a sequence with one value per element of `param` (row-major); a
    one-element param defaults to 1. Every kernel launched inside computes
    its primal values and, into the .dual of each field it writes, their
    tangents (the Jacobian-vector product with the seed); fields without a
    placed dual, ndarrays and arguments are constants. On exit the seed is
    cleared from param.dual; the tangents of the results stay in their duals.
    """

    def __init__(self, loss, param, seed=None, clear_gradients=True):
        self.loss = [unwrap(l) for l in loss] if isinstance(loss, (list, tuple)) \
            else unwrap(loss)
        self.param = unwrap(param)
        self.seed = seed
        self.clear_gradients = clear_gradients
        self._seed_values = None

    @staticmethod
    def dual_of(key, shape, dtype):  # pylint: disable=unused-argument
        """An ndarray's tangent here: zero, and discarded (forward mode
        carries tangents through fields)."""
        return np.zeros(shape, dtype)

    def __enter__(self):
        runtime.program()
        if runtime.state.fwd_mode is not None or runtime.state.tape is not None:
            raise QuadrantsRuntimeError("qd.ad.FwdMode cannot be nested in another "
                                        "qd.ad.FwdMode or qd.ad.Tape")
        losses = self.loss if isinstance(self.loss, (list, tuple)) else [self.loss]
        for loss in losses:
            _check_has_dual(loss, "loss")
        _check_has_dual(self.param, "param")
        self._seed_values = _seed_values(self.param, self.seed)
        if self.clear_gradients:
            clear_all_duals()
        self._write_seed(self._seed_values)
        runtime.state.fwd_mode = self
        return self

    def _write_seed(self, values):
        dual = self.param.dual
        if hasattr(self.param, "element_shape"):
            dual.from_numpy(np.asarray(values).reshape(
                tuple(self.param.shape) + self.param.element_shape)
                .astype(types.to_numpy_dtype(self.param.dtype)))
            return
        if len(self.param.shape) == 0:
            dual[None] = values[0]
            return
        dual.from_numpy(np.asarray(values).reshape(self.param.shape)
                        .astype(types.to_numpy_dtype(self.param.dtype)))

    def __exit__(self, exc_type, exc, traceback):
        runtime.state.fwd_mode = None
        generation = self.param._leaf_fields()[0]._generation if \
            hasattr(self.param, "_leaf_fields") else self.param._generation
        if runtime.state.generation == generation:
            self.param.dual.fill(0)
        return False


def _check_has_dual(f, role):
    if hasattr(f, "element_shape") and hasattr(f, "_leaf_fields"):
        # A vector/matrix field: every component has the same dtype and dual.
        f = f._leaf_fields()[0]
    if not isinstance(f, field_module.Field):
        raise QuadrantsTypeError(f"qd.ad.FwdMode({role}=...) needs a qd.field, got "
                                 f"{type(f).__name__}")
    if not f.dtype.is_float:
        raise QuadrantsTypeError(f"qd.ad.FwdMode({role}=...): field '{f.name}' has dtype "
                                 f"{f.dtype}; forward mode needs a floating-point field")
    if f.dual is None or not f.dual.placed:
        raise QuadrantsGradientError(f"qd.ad.FwdMode({role}=...): field '{f.name}' has no "
                                     f"dual; create it with needs_dual=True, place its "
                                     f".dual, or call qd.root.lazy_dual()")


def _seed_values(param, seed):
    size = 1
    for extent in tuple(param.shape) + tuple(getattr(param, "element_shape", ())):
        size *= extent
    if seed is None:
        if size != 1:
            raise QuadrantsTypeError(f"qd.ad.FwdMode: param '{param.name}' has {size} "
                                     f"elements, so a seed with one value per element is "
                                     f"needed (seed=[...])")
        return [1.0]
    values = [seed] if isinstance(seed, numbers.Real) else list(seed)
    if len(values) != size or not all(isinstance(v, numbers.Real) for v in values):
        raise QuadrantsTypeError(f"qd.ad.FwdMode: seed must hold {size} number(s), one per "
                                 f"element of param '{param.name}', got {seed!r}")
    return [float(v) for v in values]


def clear_all_duals():
    """Zeroes the tangents (.dual) of every field of this session."""
    for f in field_module.live_fields():
        if f.dual is not None and f.dual.placed:
            f.dual.fill(0)


def torch_function(kernel, outputs):
    """`kernel` as a differentiable PyTorch function.

    Returns f(*args), which takes the kernel's arguments (tensors for its
    ndarray parameters) and returns the tensors passed for the parameters
    named in `outputs` (one tensor, or a tuple in that order), after the
    kernel has written copies of them: the caller's tensors are not
    modified, and an output tensor's values are where the kernel starts
    (zeros for a kernel that accumulates). Inside a torch autograd graph,
    backward runs kernel.grad with the output gradients as seeds, giving
    the gradients of every floating-point tensor argument, outputs'
    starting values included, so torch.autograd.gradcheck applies (f64
    kernels), through dynamic loops too (adstack)."""
    import torch  # pylint: disable=import-outside-toplevel
    kernel._prepare()  # pylint: disable=protected-access
    names = [spec.name for spec in kernel._specs]  # pylint: disable=protected-access
    if isinstance(outputs, str):
        outputs = (outputs,)
    unknown = [name for name in outputs if name not in names]
    if unknown or not outputs:
        raise QuadrantsTypeError(f"qd.ad.torch_function(): kernel '{kernel.name}' has "
                                 f"parameters {names}; outputs {list(outputs)} must name "
                                 f"at least one of them")
    out_index = [names.index(name) for name in outputs]

    def detached(args):
        return [a.detach() if torch.is_tensor(a) else a for a in args]

    class _Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):  # pylint: disable=arguments-differ
            if len(args) != len(names):
                raise QuadrantsTypeError(f"kernel '{kernel.name}' takes {len(names)} "
                                         f"arguments ({', '.join(names)}), got {len(args)}")
            plain = detached(args)
            for i in out_index:
                plain[i] = plain[i].clone()
            kernel(*plain)
            ctx.plain = plain
            results = tuple(plain[i] for i in out_index)
            ctx.save_for_backward(*results)  # torch refuses backward after in-place edits
            return results[0] if len(results) == 1 else results

        @staticmethod
        def backward(ctx, *seeds):  # pylint: disable=arguments-differ
            # The reverse kernel replays the forward over the memory the
            # forward left, as under a Tape: loads of outputs the kernel
            # wrote see those values (it never writes primal memory).
            args = list(ctx.plain)
            for i, result in zip(out_index, ctx.saved_tensors):
                args[i] = result
            for k, i in enumerate(out_index):
                seed = seeds[k] if seeds[k] is not None else torch.zeros_like(args[i])
                args[i].grad = seed.detach().clone().contiguous()
            for i, a in enumerate(args):
                if i not in out_index and torch.is_tensor(a) and a.is_floating_point():
                    a.grad = torch.zeros_like(a)
            kernel.grad(*args)
            grads = []
            for i, a in enumerate(args):
                grads.append(a.grad if torch.is_tensor(a) and a.is_floating_point() else None)
            return tuple(grads)

    return _Function.apply


def jax_function(kernel, outputs):
    """`kernel` as a differentiable JAX function, the twin of
    torch_function: see quadrants.lang.jax_interop.jax_function. Raises
    ImportError naming JAX where JAX is not installed."""
    return jax_interop.jax_function(kernel, outputs)


class _HvpRecorder:
    """Stands in for a Tape and a FwdMode while qd.ad.hvp runs f(): keeps
    the launches, and one dual array per ndarray (and per adjoint array)
    the kernels take, so tangents written by one launch reach the next."""

    def __init__(self):
        self.launches = []
        self._duals = {}  # id(array) -> (array, its dual ndarray)

    def record(self, fn, args, kwargs):
        self.launches.append((fn, args, kwargs))

    def dual_of(self, key, shape, dtype):
        if isinstance(key, np.ndarray):
            return np.zeros(shape, dtype)  # a host copy: its tangent stays local
        entry = self._duals.get(id(key))
        if entry is None:
            dual = ndarray_module.ndarray(types.from_numpy_dtype(np.dtype(dtype)), shape)
            entry = self._duals[id(key)] = (key, dual)
        return entry[1]._core

    def dual(self, key):
        """The dual ndarray of `key` (made zero when new)."""
        entry = self._duals.get(id(key))
        return None if entry is None else entry[1]


def hvp(f, loss, x, v):
    """The Hessian-vector product H v of `loss` with respect to `x`, as a
    numpy array shaped like `x.to_numpy()`.

    `f()` launches the kernels that compute the scalar `loss` (a 0-D float
    field, or a one-element ndarray) from `x`: a float field (scalar,
    vector or matrix) or ndarray with an adjoint (needs_grad=True); `v` is
    a numpy array shaped like `x.to_numpy()`. hvp runs f() once in forward
    mode with x's tangent set to v, then each of its kernels' gradient
    kernels, last first, in forward mode too: the tangents of the adjoints
    are H v. It leaves x.grad holding the gradient and loss its value; the
    duals of the fields involved are placed when missing, and each ndarray
    a kernel takes gets a dual array for the call. Through dynamic loops,
    each adstack carries the tangents beside its values (checkpointed loops
    included). Kernels taking torch tensors or float numpy arrays are
    refused (their tangents would be lost)."""
    runtime.program()
    if runtime.state.tape is not None or runtime.state.fwd_mode is not None:
        raise QuadrantsRuntimeError("qd.ad.hvp cannot run inside qd.ad.Tape or qd.ad.FwdMode")
    _check_loss(loss)
    x_is_array = isinstance(x, ndarray_module.Ndarray)
    if x_is_array:
        if not x._scalar.is_float or x.grad is None:
            raise QuadrantsGradientError(f"qd.ad.hvp(x=...): the ndarray needs a float dtype "
                                         f"and an adjoint (needs_grad=True)")
        shape, x_dtype = tuple(x._core_shape), x._scalar
    else:
        # A vector or matrix field is checked through its first component.
        leaf = x._leaf_fields()[0] if hasattr(x, "_leaf_fields") else x
        if not isinstance(leaf, field_module.Field) or not leaf.dtype.is_float:
            raise QuadrantsTypeError(f"qd.ad.hvp(x=...) needs a float qd.field or qd.ndarray, "
                                     f"got {type(x).__name__}")
        if leaf.grad is None or not (leaf.grad.placed or leaf._needs_grad):
            raise QuadrantsGradientError(f"qd.ad.hvp(x=...): field '{x.name}' has no adjoint; "
                                         f"create it with needs_grad=True")
        shape, x_dtype = tuple(x.shape) + tuple(getattr(x, "element_shape", ())), leaf.dtype
    v = np.asarray(v, dtype=np.float64)
    if v.shape != shape:
        raise QuadrantsTypeError(f"qd.ad.hvp: v must have the shape of x {shape}, got "
                                 f"{v.shape}")
    seed = v.astype(types.to_numpy_dtype(x_dtype))
    _place_second_order_companions()
    clear_all_gradients()
    clear_all_duals()
    recorder = _HvpRecorder()
    if x_is_array:
        recorder.dual_of(x._core, shape, seed.dtype)
        recorder.dual(x._core).from_numpy(seed)
    else:
        x.dual.from_numpy(seed)
    loss.fill(0)
    runtime.state.fwd_mode, runtime.state.tape = recorder, recorder
    try:
        f()
    finally:
        runtime.state.fwd_mode, runtime.state.tape = None, None
    loss.grad.fill(1)
    for fn, args, kwargs in reversed(recorder.launches):
        if not getattr(fn, "_qd_kernel", False):
            raise QuadrantsGradientError(f"qd.ad.hvp: f() called '{fn.__name__}' (a "
                                         f"qd.ad.grad_replaced function or a sparse solve), "
                                         f"whose gradient has no forward mode; hvp "
                                         f"differentiates kernels only")
        _refuse_foreign_arrays(fn, args, kwargs)
        fn._launch(args, kwargs, "hvp", tangents=recorder)  # pylint: disable=protected-access
    if not x_is_array:
        return x.grad.dual.to_numpy().astype(np.float64)
    dual = recorder.dual(x.grad._core)
    if dual is None:  # no kernel took x: its gradient does not depend on it
        return np.zeros(shape)
    return dual.to_numpy().reshape(shape).astype(np.float64)


def _place_second_order_companions():
    """Places, for every placed float field with a placed adjoint, its dual
    and its adjoint's dual (where hvp's tangents go)."""
    for fld in list(field_module.live_fields()):
        if fld._role != "primal" or not fld.placed or fld.grad is None or \
                not fld.grad.placed:
            continue
        for companion in (fld.dual, fld.grad.dual):
            if not companion.placed:
                field_module.place_companion(companion)


def _refuse_foreign_arrays(kernel, args, kwargs):
    """Torch tensors and float numpy arrays would lose their tangents (hvp
    keeps them in fields and qd.ndarrays)."""
    bound = kernel._signature.bind(*args, **kwargs)  # pylint: disable=protected-access
    for name, value in bound.arguments.items():
        if torch_interop.is_tensor(value) or (isinstance(value, np.ndarray) and
                                              np.issubdtype(value.dtype, np.floating)):
            what = f"{type(value).__module__}.{type(value).__name__}"
            raise QuadrantsGradientError(f"qd.ad.hvp: kernel '{kernel.name}' takes '{name}' "
                                         f"({what}); hvp carries tangents in fields and "
                                         f"qd.ndarrays only")


# The public names of qd.ad, as upstream lists them; dir(qd.ad) shows these
# only (helpers, torch_function, hvp and imported modules stay reachable as
# attributes).
__all__ = ["FwdMode", "Tape", "clear_all_gradients", "grad_for", "grad_replaced", "no_grad"]


def __dir__():
    return list(__all__)
