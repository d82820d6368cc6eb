"""The Python test harness.

    from tests import test_utils

    @test_utils.test()                       # every arch available here
    def test_saxpy(): ...

    @test_utils.test(arch=qd.cpu, debug=True)  # qd.init options pass through
    def test_assert(): ...

Each test runs once per arch (narrowed by the QD_WANTED_ARCHS environment
variable, e.g. QD_WANTED_ARCHS=cpu,vulkan; `gpu` stands for every GPU arch
and a leading `^` excludes the listed archs instead); an arch or extension
that is missing here skips with the reason. qd.init(arch=..., **options)
runs before the test and qd.reset() after.

Upstream's helpers are here too, so its scenarios port unchanged:
approx / allclose / get_rel_eps (tolerances per arch), expected_archs(),
skip_if_f64_unsupported(dtype), mkdir_p, make_temp_file and torch_op.
"""
import errno
import functools
import inspect
import os
import platform
import tempfile

import pytest

import quadrants as qd
from quadrants.lang import runtime
from quadrants.lang.misc import extension, is_extension_supported


def _wanted_names():
    """The arch names QD_WANTED_ARCHS selects (None: every arch)."""
    wanted = os.environ.get("QD_WANTED_ARCHS", "").strip()
    exclude = wanted.startswith("^")
    names = set()
    for name in wanted.lstrip("^").split(","):
        name = name.strip()
        if name == "gpu":
            names.update(a.name for a in runtime.GPU_ARCHS)
        elif name:
            names.add(name)
    if not names:
        return None
    if exclude:
        return {a.name for a in runtime.ALL_ARCHS} - names
    return names


def _wanted(archs):
    names = _wanted_names()
    return list(archs) if names is None else [a for a in archs if a.name in names]


def expected_archs():
    """The archs tests run on: those QD_WANTED_ARCHS selects (see the module
    docstring) that can run on this machine."""
    return [a for a in _wanted(runtime.ALL_ARCHS) if runtime.is_arch_available(a)]


def _as_list(value):
    if value is None:
        return None
    return list(value) if isinstance(value, (list, tuple, set)) else [value]


def _excluded(arch, exclude):
    """Whether `exclude` lists `arch`: as an arch, (arch,), or (arch, system)
    for this platform.system() ((None, system) excludes every arch there)."""
    for item in exclude:
        if not isinstance(item, (list, tuple)):
            item = (item,)
        excluded_arch, system = (tuple(item) + (None,))[:2]
        if (excluded_arch is None or excluded_arch == arch) and \
                (system is None or system == platform.system()):
            return True
    return False


def test(arch=None, require=None, exclude=None, **init_options):
    """Parametrizes a test over archs; see the module docstring."""
    archs = _as_list(arch) or list(runtime.ALL_ARCHS)
    # qd.gpu stands for every GPU arch, as upstream.
    archs = [g for a in archs for g in (runtime.GPU_ARCHS if a is qd.gpu else [a])]
    archs = list(dict.fromkeys(a for a in archs if not _excluded(a, _as_list(exclude) or [])))
    requirements = _as_list(require) or []
    if extension.adstack in requirements:  # as upstream: the adstack is turned on
        init_options.setdefault("ad_stack_experimental_enabled", True)

    def decorator(fn):
        params = _wanted(archs)

        @pytest.mark.parametrize("qd_arch", params, ids=[a.name for a in params])
        @functools.wraps(fn)
        def wrapper(qd_arch, *args, **kwargs):
            reason = runtime.arch_unavailable_reason(qd_arch)
            if reason is not None:
                pytest.skip(f"arch {qd_arch.name} unavailable: {reason}")
            for ext in requirements:
                if not is_extension_supported(qd_arch, ext):
                    pytest.skip(f"arch {qd_arch.name} does not support extension {ext}")
            qd.init(arch=qd_arch, **init_options)
            try:
                fn(*args, **kwargs)
            finally:
                qd.reset()

        # pytest must see the wrapper's own signature (plus qd_arch), not fn's.
        original = inspect.signature(fn)
        wrapper.__signature__ = original.replace(
            parameters=[inspect.Parameter("qd_arch", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
            + list(original.parameters.values()))
        if not params:
            return pytest.mark.skip(reason="no wanted arch among "
                                    f"{[a.name for a in archs]} (QD_WANTED_ARCHS)")(wrapper)
        return wrapper

    return decorator


# `test` is a decorator factory, not a test for pytest to collect.
test.__test__ = False

# Relative tolerance floors per arch and float width: values below these
# would test the hardware's rounding rather than Quadrants.
_REL_FLOOR = {
    "cpu": {32: 1e-6, 64: 1e-12},
    "cuda": {32: 1e-5, 64: 1e-12},
    "amdgpu": {32: 1e-5, 64: 1e-12},
    "vulkan": {32: 1e-5, 64: 1e-11},
    "metal": {32: 1e-5, 64: 1e-11},
}


def _current_arch():
    return runtime.state.options.get("arch", runtime.cpu) if runtime.is_initialized() \
        else runtime.cpu


def get_rel_eps(bits=32):
    """The relative tolerance below which a comparison would test the
    current arch's rounding (qd.cpu before qd.init)."""
    return _REL_FLOOR.get(_current_arch().name, _REL_FLOOR["cpu"])[bits]


class _TruthEqual:
    """Compares equal to any value of the same truth (approx(True))."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return bool(self.value) == bool(other)

    def __ne__(self, other):
        return bool(self.value) != bool(other)

    def __repr__(self):
        return f"approx({self.value!r})"


def approx(expected, rel=None, abs=None, bits=32, **kwargs):  # pylint: disable=redefined-builtin
    """pytest.approx with a per-arch floor on the relative tolerance
    (get_rel_eps); a bool expects a value of the same truth. Other keywords
    (nan_ok) pass to pytest.approx."""
    if isinstance(expected, bool):
        return _TruthEqual(expected)
    floor = get_rel_eps(bits)
    rel = floor if rel is None else max(rel, floor)
    return pytest.approx(expected, rel=rel, abs=abs, **kwargs)


def allclose(x, y, **kwargs):
    """x == approx(y, **kwargs)."""
    return x == approx(y, **kwargs)


def skip_if_f64_unsupported(dtype):
    """Skips the running test when `dtype` is qd.f64 and its arch has no
    64-bit data (qd.extension.data64)."""
    if dtype != qd.f64:
        return
    arch = _current_arch()
    if not is_extension_supported(arch, extension.data64):
        pytest.skip(f"arch {arch.name} does not support f64 (qd.extension.data64)")


def mkdir_p(dir_path):
    """os.makedirs that accepts an existing directory."""
    try:
        os.makedirs(dir_path)
    except OSError as exc:
        if exc.errno != errno.EEXIST or not os.path.isdir(dir_path):
            raise


def make_temp_file(*args, **kwargs):
    """The name of a new empty temporary file (tempfile.mkstemp's
    arguments); the caller removes it."""
    fd, name = tempfile.mkstemp(*args, **kwargs)
    os.close(fd)
    return name


def torch_op(*, output_shapes=((1,),), output_dtype=None):
    """Wraps a kernel f(*inputs, *outputs) as a torch autograd op: forward
    allocates the outputs (f64 unless output_dtype) and runs f; backward
    runs f.grad with the outputs' .grad set to the incoming gradients and
    returns the inputs' .grad."""
    import torch  # pylint: disable=import-outside-toplevel

    out_dtype = torch.double if output_dtype is None else output_dtype

    def wrap(f):
        class Op(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *inputs):  # pylint: disable=arguments-differ
                outputs = tuple(torch.zeros(shape, dtype=out_dtype, requires_grad=True)
                                for shape in output_shapes)
                f(*inputs, *outputs)
                ctx.save_for_backward(*inputs, *outputs)
                return outputs

            @staticmethod
            def backward(ctx, *grad_outputs):  # pylint: disable=arguments-differ
                saved = ctx.saved_tensors
                inputs, outputs = saved[:-len(grad_outputs)], saved[-len(grad_outputs):]
                for tensor in inputs:
                    tensor.grad = torch.zeros_like(tensor)
                for tensor, grad in zip(outputs, grad_outputs):
                    tensor.grad = grad
                f.grad(*inputs, *outputs)
                return tuple(tensor.grad for tensor in inputs)

        return Op.apply

    return wrap


def run_debug_logged(code, tmp_path):
    """Runs `code` (dedented) as a script with QD_LOG_LEVEL=debug and the
    default cpu_simd; returns its stderr, where the compiler's debug log
    goes. Kernels need their source in a file, hence the script."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "kernels.py"
    script.write_text(textwrap.dedent(code))
    env = dict(os.environ, QD_LOG_LEVEL="debug")
    env.pop("QD_CPU_SIMD", None)
    done = subprocess.run([sys.executable, str(script)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr
