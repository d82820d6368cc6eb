"""PyTorch interop: torch tensors as ndarray arguments, used in place;
copies between fields or ndarrays and tensors; kernels as autograd
functions (qd.ad.torch_function).

A CPU tensor reaches a kernel as a numpy view of its memory (TorchView), so
the numpy argument path applies unchanged: zero-copy on cpu, staged on
vulkan. Non-contiguous tensors are refused, as upstream refuses them. A CUDA tensor on
the device the session runs on goes to the kernel as its device pointer
(TorchDeviceArray). The tensor travels with either, so kernel.grad finds its
.grad (the adjoint buffer it adds into, or reads as the seed of an output).
"""
import sys

import numpy as np

from quadrants._core import core
from quadrants.lang import runtime, types
from quadrants.lang.exception import (ArgumentValueError, QuadrantsGradientError,
                                      QuadrantsRuntimeError, QuadrantsTypeError)


def is_tensor(value):
    """Whether `value` is a torch.Tensor (without importing torch: a tensor
    exists only once torch is imported)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


class TorchView(np.ndarray):
    """A numpy view of a CPU tensor's memory that keeps the tensor."""

    tensor = None


class TorchDeviceArray:
    """A CUDA tensor as a kernel argument: its device pointer, with the
    numpy-like dtype, shape and ndim the argument checks read."""

    def __init__(self, tensor, dtype):
        self.tensor = tensor
        self.dtype = dtype
        self.shape = tuple(tensor.shape)
        self.ndim = tensor.dim()
        self.core = core.DeviceArray(tensor.data_ptr(), types.from_numpy_dtype(dtype).name,
                                     list(self.shape))


def _numpy_dtype(tensor, where):
    torch = sys.modules["torch"]
    names = {torch.bool: "bool", torch.int8: "int8", torch.int16: "int16",
             torch.int32: "int32", torch.int64: "int64", torch.uint8: "uint8",
             torch.float16: "float16", torch.float32: "float32", torch.float64: "float64"}
    if tensor.dtype not in names:
        raise QuadrantsTypeError(f"{where}: torch dtype {tensor.dtype} has no Quadrants type "
                                 f"(use one of {', '.join(str(d) for d in names)})")
    return np.dtype(names[tensor.dtype])


# DLPack device types of the memory a backend keeps arrays in (the backend
# registry says which); 0: memory other libraries cannot address, which
# kernel arguments reach from host memory.
_HOST, _CUDA = (0, 1), 2


def _device_text(arch, dlpack_type):
    return "cpu" if dlpack_type in _HOST else \
        f"{arch.name}:{runtime.state.options.get('device_id', 0)}"


def kernel_array(kernel_name, param, tensor):
    """`tensor` as the kernel argument for ndarray parameter `param`. A
    tensor that requires grad and has no .grad gets a zero one, as
    upstream's launches give it: kernel.grad adds into it later."""
    where = f"kernel '{kernel_name}' argument '{param}'"
    dtype = _numpy_dtype(tensor, where)
    if tensor.requires_grad and tensor.grad is None:
        tensor.grad = sys.modules["torch"].zeros_like(tensor)
    arch = runtime.state.arch
    dlpack_type = core.arch_dlpack_device_type(arch.name)
    device = tensor.device
    if not tensor.is_contiguous():
        # Refused as upstream does: a dense copy would not alias the tensor.
        raise ArgumentValueError(f"{where}: Non contiguous tensors are not supported (strides "
                                 f"{tuple(tensor.stride())}); pass tensor.contiguous()")
    if device.type == "cpu":
        # Host memory: CPU kernels use it in place; GPU kernels copy it in and
        # back around the launch, as they do numpy arrays (upstream does too).
        view = tensor.detach().numpy().view(TorchView)
        view.tensor = tensor
        return view
    if device.type == "cuda" and dlpack_type == _CUDA:
        device_id = runtime.state.options.get("device_id", 0)
        if device.index != device_id:
            raise QuadrantsRuntimeError(f"{where}: the tensor is on cuda:{device.index}, the "
                                        f"kernels run on cuda:{device_id} "
                                        f"(qd.init(device_id=...))")
        return TorchDeviceArray(tensor, dtype)
    raise QuadrantsRuntimeError(f"{where}: expected a tensor on "
                                f"{_device_text(arch, dlpack_type)} (the "
                                f"kernels run on {arch.name}), got one on {device}")


def side_stream(args):
    """The torch stream that a launch taking CUDA tensors `args` must be
    ordered with: torch's current stream on the kernels' device when it is
    not the default stream (None otherwise, and for launches without CUDA
    tensors). Launches queue on the legacy default stream, which is torch's
    default stream: work there is ordered with them already."""
    if not any(isinstance(a, TorchDeviceArray) for a in args):
        return None
    torch = sys.modules["torch"]
    device = torch.device("cuda", runtime.state.options.get("device_id", 0))
    current = torch.cuda.current_stream(device)
    return None if current == torch.cuda.default_stream(device) else current


def launches_wait_for(stream):
    """Orders the next launch after the work queued on `stream`."""
    torch = sys.modules["torch"]
    torch.cuda.default_stream(stream.device).wait_stream(stream)


def stream_waits_for_launches(stream):
    """Orders the work queued on `stream` from now on after the launches
    queued so far (recorded as an event on the default stream)."""
    torch = sys.modules["torch"]
    stream.wait_stream(torch.cuda.default_stream(stream.device))


def adjoint(kernel_name, param, arg):
    """The adjoint buffer of tensor argument `arg` for kernel.grad: its
    tensor's .grad (given at launch to a tensor that requires grad), or None
    (a scratch buffer) for a tensor that has none."""
    tensor = arg.tensor
    grad = tensor.grad
    where = f"kernel '{kernel_name}' argument '{param}'"
    if grad is None:
        return None
    if tuple(grad.shape) != tuple(tensor.shape) or grad.dtype != tensor.dtype:
        raise QuadrantsGradientError(f"{where}: .grad has shape {tuple(grad.shape)} and dtype "
                                     f"{grad.dtype}, the tensor {tuple(tensor.shape)} and "
                                     f"{tensor.dtype}")
    if isinstance(arg, TorchDeviceArray):
        return kernel_array(kernel_name, f"{param}.grad", grad).core
    if not grad.is_contiguous():
        raise ArgumentValueError(f"{where}: its .grad is not contiguous; kernel.grad adds "
                                 f"into it in place")
    return grad.detach().numpy()


def seed_loss(loss):
    """A Tape's tensor loss starts at zero with a gradient seed of one."""
    torch = sys.modules["torch"]
    with torch.no_grad():
        loss.fill_(0)
    if loss.grad is None:
        loss.grad = torch.ones_like(loss)
    else:
        loss.grad.fill_(1)


def same_memory(a, b):
    """Whether two tensor arguments overlap."""
    ta, tb = a.tensor, b.tensor
    if ta.device != tb.device:
        return False
    start_a, start_b = ta.data_ptr(), tb.data_ptr()
    end_a = start_a + ta.numel() * ta.element_size()
    end_b = start_b + tb.numel() * tb.element_size()
    return start_a < end_b and start_b < end_a


def _torch():
    try:
        import torch  # pylint: disable=import-outside-toplevel
    except ImportError as e:
        raise QuadrantsRuntimeError(f"PyTorch is not installed: {e}") from None
    return torch


def _to_tensor(array, device):
    torch = _torch()
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    return tensor if device is None else tensor.to(device)


def to_torch(holder, device, copy, label, view_fn=None):
    """A tensor (a dict of them for struct fields) with what
    holder.to_numpy() returns, on `device` (default: the CPU, or the
    holder's device for a view). copy=True copies; copy=False shares the
    holder's memory or raises ValueError; copy=None shares it where it can
    and copies otherwise. `view_fn(torch)` gives (a tensor sharing the
    memory or None, why not); without it there is no view (struct fields)."""
    if copy not in (True, None, False):
        raise QuadrantsTypeError(f"to_torch(copy=...) takes True, False or None, got {copy!r}")
    if copy is not True:
        view, why = view_fn(_torch()) if view_fn is not None else \
            (None, "it gives a dict of tensors, one per member")
        if view is not None and device is not None and \
                not _same_device(view.device, _torch().device(device)):
            view, why = None, (f"copy=False is incompatible with device transfer (data on "
                               f"{view.device}, requested {device})")
        if view is not None:
            return view
        if copy is False:
            raise ValueError(f"to_torch(copy=False): Zero-copy not available for {label}: {why}")
    values = holder.to_numpy()
    if isinstance(values, dict):
        return {name: _to_tensor(v, device) for name, v in values.items()}
    return _to_tensor(values, device)


def numpy_view_tensor(view_fn):
    """A to_torch view function from a numpy one (or one giving a CUDA
    array): the tensor shares the view's memory and keeps the view, which
    keeps the memory."""
    def view(torch):
        array, why = view_fn()
        if array is None:
            return None, why
        if isinstance(array, np.ndarray):
            return torch.from_numpy(array), None
        return torch.as_tensor(array, device="cuda"), None
    return view


def _same_device(have, want):
    return have.type == want.type and (want.index is None or have.index == want.index)


def dlpack_tensor(torch, array):
    """A tensor viewing ndarray `array`'s memory through DLPack."""
    import torch.utils.dlpack  # pylint: disable=import-outside-toplevel,redefined-outer-name
    return torch.utils.dlpack.from_dlpack(array.to_dlpack())


def from_torch(holder, tensor):
    """holder.from_numpy() of a tensor (a dict of them for struct fields)."""
    if isinstance(tensor, dict):
        holder.from_numpy({name: _host_array(t) for name, t in tensor.items()})
        return
    holder.from_numpy(_host_array(tensor))


def _host_array(tensor):
    if not is_tensor(tensor):
        raise QuadrantsTypeError(f"from_torch() takes a torch.Tensor, got "
                                 f"{type(tensor).__name__}")
    return tensor.detach().cpu().numpy()
