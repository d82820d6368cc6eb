"""The library of one GPU target's compiler: `<name>.{h,cc}`, the target's
codegen::GpuTarget hooks over the shared GPU compiler."""

# What every GPU target's hooks use.
_TARGET_DEPS = [
    "//quadrants/codegen/llvm:gpu_compiler",
    "//quadrants/codegen/llvm:gpu_entries",
    "//quadrants/common:options",
    "//third_party/absl",
    "//third_party/llvm",
]

def gpu_target_compiler(name, device_runtime, deps = []):
    """`name`, linking `device_runtime`, the runtime module's bitcode built
    for the target, into every kernel."""
    native.cc_library(
        name = name,
        srcs = [name + ".cc"],
        hdrs = [name + ".h"],
        visibility = [
            "//quadrants:__subpackages__",
            "//tests:__subpackages__",
        ],
        deps = _TARGET_DEPS + [device_runtime] + deps,
    )
