"""The configuration and device part of a fastcache key."""
from quadrants.lang import runtime
from quadrants.lang.device_caps import DeviceCaps
from quadrants.lang._fast_caching.hash_utils import hash_iterable_strings

# qd.init options that change no compiled kernel: where files go, what is
# printed or logged, memory sizes and run-time limits.
_RUNTIME_ONLY = frozenset({
    "offline_cache", "offline_cache_file_path", "offline_cache_cleaning_policy",
    "offline_cache_max_size_of_files", "offline_cache_cleaning_factor", "log_level",
    "print_non_pure", "src_ll_cache", "gdb_trigger", "print_full_traceback",
    "print_ir", "print_preprocessed_ir", "print_ir_dbg_info", "print_accessor_ir",
    "print_struct_llvm_ir", "print_kernel_llvm_ir", "print_kernel_llvm_ir_optimized",
    "print_kernel_asm", "print_kernel_amdgcn", "debug_dump_path", "verbose",
    "verbose_kernel_launches", "kernel_profiler", "timeline", "device_memory_fraction",
    "sparse_pool_mb", "cuda_stack_limit", "external_metal_command_queue",
    "num_compile_threads", "require_version", "enable_fallback",
})


def hash_compile_config():
    """A hash of the session's options that can change a compiled kernel."""
    options = runtime.state.options
    return hash_iterable_strings(f"{name}={options[name]!r}" for name in sorted(options)
                                 if name not in _RUNTIME_ONLY)


def hash_device_caps():
    """The device part of a key: the device, its capabilities and the
    Quadrants build compiling for it (prog.get_device_caps().hashed_key())."""
    return DeviceCaps(runtime.program()).hashed_key()
