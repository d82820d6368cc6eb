"""Introspection of the running session: quadrants.lang.impl.current_cfg()."""
from quadrants.lang import ops, runtime
from quadrants.lang.device_caps import DeviceCaps
from quadrants.lang.exception import QuadrantsRuntimeError


class Config:
    """The options of the active session as attributes: arch and every
    option qd.init() accepts (defaults filled in). Setting one
    (qd.cfg.fast_math = False) changes it for what compiles and launches
    afterwards (runtime.update_option)."""

    def __init__(self, options):
        object.__setattr__(self, "_options", dict(options))

    def __getattr__(self, name):
        try:
            return self._options[name]
        except KeyError:
            raise AttributeError(f"qd.init() has no option '{name}'") from None

    def __setattr__(self, name, value):
        runtime.update_option(name, value)
        self._options[name] = runtime.state.options[name]

    def __dir__(self):
        return sorted(self._options)

    def __repr__(self):
        items = ", ".join(f"{k}={v!r}" for k, v in sorted(self._options.items()))
        return f"Config({items})"


def get_cuda_compute_capability():
    """The CUDA device's compute capability as major * 10 + minor (90 for
    an H100/H200); the session must run on qd.cuda."""
    if not runtime.is_initialized() or runtime.state.arch.name != "cuda":
        raise QuadrantsRuntimeError("get_cuda_compute_capability(): the session does not run "
                                    "on qd.cuda")
    # The CUDA backend describes its device as "<name> (sm_<capability>)".
    description = runtime.program().device_description
    return int(description.rsplit("(sm_", 1)[1].rstrip(")"))


def get_max_shared_memory_bytes(*, is_lowerbound_ok):
    """The most block-shared memory (qd.simt.block.SharedArray) one block
    may take on the session's device, in bytes, as the device reports it.
    The CPU has none: 0 when `is_lowerbound_ok`, else a RuntimeError."""
    limit = runtime.program().max_shared_memory_bytes
    if limit == 0 and not is_lowerbound_ok:
        raise RuntimeError(f"get_max_shared_memory_bytes not implemented for arch "
                           f"{runtime.state.arch.name}")
    return limit


def current_cfg():
    """The options of the active session (after qd.init())."""
    if not runtime.is_initialized():
        raise QuadrantsRuntimeError("current_cfg(): Quadrants is not initialized; call "
                                    "qd.init() first")
    return Config(runtime.state.options)


class ProgramView:
    """A Program as upstream's runtime shows it: the core Program's
    attributes, and get_device_caps()."""

    def __init__(self, program):
        object.__setattr__(self, "_program", program)

    def __getattr__(self, name):
        return getattr(self._program, name)

    def get_device_caps(self):
        return DeviceCaps(self._program)


class Runtime:
    """What upstream's runtime object offers that applies here: the session's
    program, arch and default types, and how many kernels it compiled."""

    @property
    def prog(self):
        """The active Program (raises before qd.init()), with upstream's
        get_device_caps()."""
        return ProgramView(runtime.program())

    @property
    def _arch(self):
        return current_cfg().arch

    @property
    def default_fp(self):
        return runtime.default_fp()

    @default_fp.setter
    def default_fp(self, dtype):
        self.set_default_fp(dtype)

    @property
    def default_ip(self):
        return runtime.default_ip()

    @default_ip.setter
    def default_ip(self, dtype):
        self.set_default_ip(dtype)

    def set_default_fp(self, dtype):
        """The float type of unannotated literals and values from now on."""
        runtime.update_option("default_fp", dtype)

    def set_default_ip(self, dtype):
        """The integer type of unannotated literals and values from now on."""
        runtime.update_option("default_ip", dtype)

    def materialize(self):
        """Lays out the fields declared so far (done before a launch anyway)."""
        runtime.program().materialize()

    def get_num_compiled_functions(self):
        """Kernel variants the session compiled or loaded from the offline
        cache: one per kernel and distinct template / dtype / ndim signature,
        and one per gradient or forward-mode version."""
        return runtime.program().num_compiled_kernels


_RUNTIME = Runtime()


def get_runtime():
    """The session's runtime (see Runtime)."""
    return _RUNTIME


def qd_float(x):
    """x cast to qd.init's default_fp (upstream's impl.qd_float)."""
    return ops.cast(x, runtime.default_fp())


def qd_int(x):
    """x cast to qd.init's default_ip (upstream's impl.qd_int)."""
    return ops.cast(x, runtime.default_ip())
