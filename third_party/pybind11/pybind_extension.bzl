"""qd_pybind_extension: a Python extension module built from C++ sources."""

def qd_pybind_extension(
        name,
        srcs,
        deps = [],
        visibility = None,
        pybind11 = "//third_party/pybind11",
        linkopts = [],
        py_library = True,
        tags = []):
    """Builds <name>.so (importable as `name`) and a py_library <name>.

    Args:
      name: module name, as passed to PYBIND11_MODULE.
      srcs: C++ sources.
      deps: cc_library dependencies.
      visibility: as for py_library (and the .so when there is none).
      pybind11: pybind11 with the headers of the CPython it targets.
      linkopts: extra link options.
      py_library: whether to declare the py_library.
      tags: as for cc_binary.
    """
    native.cc_binary(
        name = name + ".so",
        srcs = srcs,
        copts = ["-fvisibility=hidden"],
        # A build-id identifies the module to the offline cache without
        # reading it (quadrants/common/binary_identity.h).
        linkopts = ["-Wl,--build-id=sha1"] + linkopts,
        linkshared = True,
        linkstatic = True,
        tags = tags,
        visibility = None if py_library else visibility,
        deps = deps + [pybind11],
    )
    if py_library:
        native.py_library(
            name = name,
            data = [":" + name + ".so"],
            imports = ["."],
            visibility = visibility,
        )
