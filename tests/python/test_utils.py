"""The Python test harness.

    from tests import test_utils

    @test_utils.test()                       # every arch available here
    def test_saxpy(): ...

    @test_utils.test(arch=qd.cpu, debug=True)  # qd.init options pass through
    def test_assert(): ...

Each test runs once per arch (narrowed by the QD_WANTED_ARCHS environment
variable, e.g. QD_WANTED_ARCHS=cpu,vulkan); an arch or extension that is
missing here skips with the reason. qd.init(arch=..., **options) runs
before the test and qd.reset() after.
"""
import functools
import inspect
import os

import pytest

import quadrants as qd
from quadrants.lang import runtime
from quadrants.lang.misc import extension, is_extension_supported


def _wanted(archs):
    wanted = os.environ.get("QD_WANTED_ARCHS", "").strip()
    if not wanted:
        return archs
    names = {w.strip() for w in wanted.split(",") if w.strip()}
    return [a for a in archs if a.name in names]


def _as_list(value):
    if value is None:
        return None
    return list(value) if isinstance(value, (list, tuple, set)) else [value]


def test(arch=None, require=None, exclude=None, **init_options):
    """Parametrizes a test over archs; see the module docstring."""
    archs = _as_list(arch) or list(runtime.ALL_ARCHS)
    archs = [a for a in archs if a not in (_as_list(exclude) or [])]
    requirements = _as_list(require) or []

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


def approx(expected, rel=None, abs=None, bits=32):  # pylint: disable=redefined-builtin
    """pytest.approx with a per-arch floor on the relative tolerance."""
    arch = runtime.state.options.get("arch", runtime.cpu) if runtime.is_initialized() \
        else runtime.cpu
    floor = _REL_FLOOR.get(arch.name, _REL_FLOOR["cpu"])[bits]
    rel = floor if rel is None else max(rel, floor)
    return pytest.approx(expected, rel=rel, abs=abs)


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
