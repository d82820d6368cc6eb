"""The libraries of a GPU backend over the shared driver backend
(gpu::DriverBackend): its vendor's driver loader, the backend and its
registration."""

# What loading a vendor's driver library with dlopen takes.
_DRIVER_DEPS = [
    "//quadrants/common:status_macros",
    "//quadrants/runtime/gpu:driver_library",
    "//third_party/absl",
]

# What every backend over the shared driver backend uses.
_BACKEND_DEPS = [
    "//quadrants/codegen/llvm:gpu_compiler",
    "//quadrants/common:status_macros",
    "//quadrants/runtime:backend",
    "//quadrants/runtime:compile_config",
    "//quadrants/runtime/gpu:driver_backend",
    "//quadrants/runtime/gpu:gpu_codegen",
    "//third_party/absl",
]

def gpu_backend_package(
        name,
        driver_api,
        deps,
        driver = None,
        registration_deps = []):
    """Declares a GPU backend's libraries:

    `<driver>` (`<name>_driver` unless given): the vendor's driver API, whose
    headers `driver_api` holds, loaded with dlopen from `<driver>.{h,cc}`, so
    builds run on machines without the GPU and report why it is unavailable;
    `<name>_backend`: `<name>_backend.{h,cc}` over the driver, `deps` and the
    shared driver backend;
    `<name>_registration`: `<name>_registration.cc`, which registers the
    backend when linked through //quadrants/runtime:backends.
    """
    driver = driver or name + "_driver"
    native.cc_library(
        name = driver,
        srcs = [driver + ".cc"],
        hdrs = [driver + ".h"],
        visibility = [
            "//examples:__subpackages__",
            "//quadrants:__subpackages__",
            "//tests:__subpackages__",
        ],
        deps = _DRIVER_DEPS + [driver_api],
    )
    native.cc_library(
        name = name + "_backend",
        srcs = [name + "_backend.cc"],
        hdrs = [name + "_backend.h"],
        visibility = [
            "//quadrants:__subpackages__",
            "//tests:__subpackages__",
        ],
        deps = _BACKEND_DEPS + [":" + driver] + deps,
    )
    native.cc_library(
        name = name + "_registration",
        srcs = [name + "_registration.cc"],
        visibility = [
            "//quadrants/runtime:__pkg__",
            "//tests:__subpackages__",
        ],
        deps = [
            ":" + name + "_backend",
            "//quadrants/runtime:backend_registry",
        ] + registration_deps,
        alwayslink = True,
    )
