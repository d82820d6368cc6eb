"""JAX interop: a kernel as a differentiable JAX function
(qd.ad.jax_function).

Each launch runs inside jax.experimental.buffer_callback, which hands the
callback XLA's own buffers: on cpu and cuda the kernel reads and writes
them in place through DLPack (no copies), and on CUDA it runs ordered with
XLA's stream by a pair of events. The output buffers alias the inputs of
the same parameters, so they start with the values passed in, as the
kernel expects. jax.custom_vjp gives the backward pass: kernel.grad over
the memory the forward left (the outputs as written), seeded with the
output cotangents, into buffers that start at zero.
"""
import contextlib
import functools

import numpy as np

from quadrants.lang import kernel as kernel_module
from quadrants.lang import misc, runtime, types
from quadrants.lang import ndarray as ndarray_module
from quadrants.lang.exception import QuadrantsRuntimeError, QuadrantsTypeError
from quadrants.lang.matrix import MatrixType

# DLPack device types whose memory kernels address directly.
_CUDA_LIKE = (2, 10)


def _jax():
    try:
        import jax  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        raise ImportError("qd.ad.jax_function needs JAX, which is not installed "
                          "(pip install jax)") from error
    try:
        from jax.experimental import buffer_callback  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        raise ImportError(f"qd.ad.jax_function needs a JAX with "
                          f"jax.experimental.buffer_callback; this is JAX "
                          f"{jax.__version__}") from error
    return jax, buffer_callback.buffer_callback


def jax_function(kernel, outputs):
    """`kernel` as a differentiable JAX function.

    Returns f(*args), which takes the kernel's arguments (jax.Arrays for its
    ndarray parameters, Python values for the others) and returns the
    arrays the kernel leaves in the parameters named in `outputs` (one
    array, or a tuple in that order); their values passed in are where the
    kernel starts (zeros for a kernel that accumulates). f works under
    jax.jit, jax.grad (reverse mode through kernel.grad, dynamic loops
    included) and jax.vmap (one launch per batch element). The kernel must
    not write its other array arguments: JAX arrays are immutable."""
    jax, buffer_callback = _jax()
    kernel._prepare()  # pylint: disable=protected-access
    specs = kernel._specs  # pylint: disable=protected-access
    names = [spec.name for spec in specs]
    if isinstance(outputs, str):
        outputs = (outputs,)
    outputs = tuple(outputs)
    array_params = [i for i, spec in enumerate(specs)
                    if isinstance(spec, kernel_module._NdarrayParam)]  # pylint: disable=protected-access
    array_names = [names[i] for i in array_params]
    if not outputs or len(set(outputs)) != len(outputs) or \
            any(name not in array_names for name in outputs):
        raise QuadrantsTypeError(f"qd.ad.jax_function(): kernel '{kernel.name}' has ndarray "
                                 f"parameters {array_names}; outputs {list(outputs)} must name "
                                 f"one or more of them, each once")
    plan = _Plan(kernel, specs, array_params, [array_names.index(n) for n in outputs])

    def call(*args):
        if len(args) != len(names):
            raise QuadrantsTypeError(f"kernel '{kernel.name}' takes {len(names)} arguments "
                                     f"({', '.join(names)}), got {len(args)}")
        statics = {}
        for i, arg in enumerate(args):
            if i not in array_params:
                if isinstance(arg, jax.Array):
                    raise QuadrantsTypeError(
                        f"kernel '{kernel.name}' argument '{names[i]}' is not an ndarray "
                        f"parameter: pass a Python value (JAX arrays reach only ndarray "
                        f"parameters, {array_names})")
                statics[i] = arg
        # Host values (numpy arrays, lists) go where the kernels run; JAX
        # arrays stay where they are (the check below names a wrong device).
        arrays = [args[i] if isinstance(args[i], jax.Array) else
                  jax.device_put(np.asarray(args[i]), _session_device(jax))
                  for i in array_params]
        for slot, array in enumerate(arrays):
            plan.check(slot, array)
        results = plan.function(jax, buffer_callback, statics)(*arrays)
        return results[0] if len(results) == 1 else tuple(results)

    return call


class _Plan:
    """What one wrapped kernel needs: its array parameters (slots, in
    parameter order) and which slots are outputs."""

    def __init__(self, kernel, specs, array_params, out_slots):
        self.kernel, self.specs = kernel, specs
        self.array_params, self.out_slots = array_params, out_slots
        self._functions = {}

    def check(self, slot, array):
        """Checks `array` against its parameter as a launch would, now, so
        the error names the argument before XLA runs anything."""
        spec = self.specs[self.array_params[slot]]
        try:
            stand_in = np.broadcast_to(np.zeros((), np.dtype(array.dtype)), array.shape)
        except TypeError as error:
            raise QuadrantsTypeError(f"kernel '{self.kernel.name}' argument '{spec.name}': "
                                     f"JAX dtype {array.dtype} has no Quadrants type") from error
        kernel_module._array_signature(self.kernel.name, spec, stand_in)  # pylint: disable=protected-access
        try:
            platforms = {device.platform for device in array.devices()}
        except Exception:  # pylint: disable=broad-except
            return  # a tracer: the launch checks its buffer's memory
        wanted = "gpu" if misc.session_dlpack_device_type() in _CUDA_LIKE else "cpu"
        found = platforms - {wanted, "cuda", "rocm"} if wanted == "gpu" else platforms - {"cpu"}
        if found:
            raise QuadrantsRuntimeError(
                f"kernel '{self.kernel.name}' argument '{spec.name}': the JAX array is on "
                f"{', '.join(sorted(platforms))}, and {runtime.state.arch.name} kernels "
                f"address {'this GPU' if wanted == 'gpu' else 'host'} memory; put it there "
                f"first (jax.device_put)")

    def function(self, jax, buffer_callback, statics):
        """The custom_vjp function of the array arguments, with the other
        arguments fixed to `statics`; one per hashable `statics`, so eager
        calls reuse XLA's compiled callbacks."""
        try:
            key = tuple(sorted(statics.items()))
            hash(key)
        except TypeError:
            key = None
        cached = self._functions.get(key) if key is not None else None
        if cached is None:
            cached = self._make_function(jax, buffer_callback, statics)
            if key is not None:
                self._functions[key] = cached
        return cached

    def _make_function(self, jax, buffer_callback, statics):
        plan, launchers = self, {}
        run_forward = functools.partial(plan.run_forward, statics)

        def launcher(kind, arrays, float_slots=()):
            shapes = tuple((a.shape, str(a.dtype)) for a in arrays)
            if (kind, shapes) not in launchers:
                if kind == "forward":
                    slots, aliases, callback = plan.out_slots, \
                        {s: k for k, s in enumerate(plan.out_slots)}, run_forward
                else:
                    # The adjoints start as the seeds (outputs' cotangents,
                    # zeros for the others) and kernel.grad adds into them.
                    slots = float_slots
                    aliases = {len(arrays) + k: k for k in range(len(float_slots))}
                    callback = functools.partial(plan.run_backward, statics, float_slots)
                types_ = tuple(jax.ShapeDtypeStruct(arrays[s].shape, arrays[s].dtype)
                               for s in slots)
                launchers[(kind, shapes)] = buffer_callback(
                    callback, types_, input_output_aliases=aliases, vmap_method="sequential")
            return launchers[(kind, shapes)]

        def forward(*arrays):
            return tuple(launcher("forward", arrays)(*arrays))

        def forward_with_residuals(*arrays):
            results = forward(*arrays)
            # The gradient kernel reads the memory the forward left, as
            # under a Tape: the outputs as written, the other arguments.
            left = list(arrays)
            for k, s in enumerate(plan.out_slots):
                left[s] = results[k]
            return results, tuple(left)

        def backward(arrays, cotangents):
            floating = jax.numpy.floating
            float_slots = tuple(s for s, a in enumerate(arrays)
                                if jax.numpy.issubdtype(a.dtype, floating))
            seeds = []
            for s in float_slots:
                if s in plan.out_slots:
                    seeds.append(jax.numpy.asarray(cotangents[plan.out_slots.index(s)],
                                                   arrays[s].dtype))
                else:
                    seeds.append(jax.numpy.zeros_like(arrays[s]))
            grads = dict(zip(float_slots, launcher("backward", arrays, float_slots)(
                *arrays, *seeds)))
            return tuple(grads[s] if s in grads else
                         np.zeros(a.shape, dtype=jax.dtypes.float0)
                         for s, a in enumerate(arrays))

        function = jax.custom_vjp(forward)
        function.defvjp(forward_with_residuals, backward)
        return function

    def _launch_args(self, statics, buffers):
        args = [None] * len(self.specs)
        for i, value in statics.items():
            args[i] = value
        arrays = []
        for slot, i in enumerate(self.array_params):
            args[i] = _KernelArray(buffers[slot], self.kernel.name, self.specs[i])
            arrays.append(args[i])
        return args, arrays

    def run_forward(self, statics, ctx, outs, *buffers):
        buffers = list(buffers)
        for k, s in enumerate(self.out_slots):
            buffers[s] = outs[k]
        args, arrays = self._launch_args(statics, buffers)
        with _on_xla_stream(ctx):
            self.kernel(*[a.array if isinstance(a, _KernelArray) else a for a in args])
        for array in arrays:
            array.write_back()

    def run_backward(self, statics, float_slots, ctx, outs, *buffers):
        args, arrays = self._launch_args(statics, buffers[:len(self.array_params)])
        adjoints = []
        for k, s in enumerate(float_slots):
            adjoint = _KernelArray(outs[k], self.kernel.name,
                                   self.specs[self.array_params[s]], ".grad")
            arrays[s].array.grad = adjoint.array
            adjoints.append(adjoint)
        with _on_xla_stream(ctx):
            self.kernel.grad(*[a.array if isinstance(a, _KernelArray) else a for a in args])
        for adjoint in adjoints:
            adjoint.write_back()


class _KernelArray:
    """An XLA buffer as a kernel argument for parameter `spec`: a qd.ndarray
    over its memory (DLPack, no copy) where the session's kernels address
    that memory, else a qd.ndarray copy written back after the launch.
    Vector and matrix parameters see the trailing axes as their elements."""

    def __init__(self, buffer, kernel_name, spec, role=""):
        self._buffer, self._copy = buffer, False
        param = spec.name + role
        device = _buffer_device(buffer)
        element = _element_type(spec, buffer)
        # Where the session's kernels address memory (0: only their own).
        wanted = misc.session_dlpack_device_type() if misc.session_supports("dlpack") else 0
        if device == wanted:
            array = ndarray_module.from_dlpack(buffer)
            self.array = array if element is None else \
                ndarray_module.with_element_type(array, element)
        elif wanted == 0 and device == 1:
            host = np.asarray(buffer)
            shape = host.shape if element is None else host.shape[:host.ndim - element.ndim]
            dtype = types.from_numpy_dtype(host.dtype) if element is None else element
            self.array = ndarray_module.ndarray(dtype, shape)
            self.array.from_numpy(host)
            self._copy = bool(getattr(buffer, "writeable", True))
        else:
            raise QuadrantsRuntimeError(
                f"kernel '{kernel_name}' argument '{param}': the JAX array is in "
                f"{_DEVICE_NAMES.get(device, device)} memory, which {runtime.state.arch.name} "
                f"kernels do not address; put it there first (jax.device_put)")

    def write_back(self):
        if self._copy:
            np.asarray(self._buffer)[...] = self.array.to_numpy()


def _element_type(spec, buffer):
    """The vector or matrix type whose components a buffer passed to `spec`
    holds along its trailing axes, or None for a scalar parameter."""
    annotation = spec.annotation.dtype
    if not isinstance(annotation, MatrixType):
        return None
    shape, k = tuple(buffer.shape), annotation.ndim
    if len(shape) <= k:
        return None  # the launch's own check names the mismatch
    scalar = types.from_numpy_dtype(np.dtype(buffer.dtype))
    return MatrixType(shape[-k], shape[-1] if k == 2 else 1, k, scalar)


_DEVICE_NAMES = {1: "host (cpu)", 2: "CUDA", 10: "ROCm"}


def _buffer_device(buffer):
    try:
        return int(buffer.__dlpack_device__()[0])
    except (AttributeError, TypeError):
        return 1


def _session_device(jax):
    """The JAX device whose memory this session's kernels address."""
    if misc.session_dlpack_device_type() in _CUDA_LIKE:
        gpus = [d for d in jax.devices() if d.platform in ("gpu", "cuda", "rocm")]
        device_id = runtime.state.options.get("device_id", 0)
        if device_id < len(gpus):
            return gpus[device_id]
        raise QuadrantsRuntimeError(f"the kernels run on GPU {device_id}, and JAX sees "
                                    f"{len(gpus)} GPU(s); pass JAX arrays on that GPU")
    return jax.devices("cpu")[0]


def _stream_of(ctx):
    stream = ctx.stream
    return int(stream() if callable(stream) else stream)


@contextlib.contextmanager
def _on_xla_stream(ctx):
    """Orders the launches inside after the work XLA queued on its stream,
    and XLA's later work after them (events; kernels queue on the default
    stream)."""
    if misc.session_dlpack_device_type() not in _CUDA_LIKE:
        yield
        return
    prog = runtime.program()
    stream = _stream_of(ctx)
    event = prog.create_event()
    try:
        prog.record_event(event, stream)
        prog.wait_event(event, 0)
        yield
        prog.record_event(event, 0)
        prog.wait_event(event, stream)
    finally:
        prog.destroy_event(event)
