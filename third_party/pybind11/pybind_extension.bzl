"""qd_pybind_extension: a Python extension module built from C++ sources."""

def qd_pybind_extension(name, srcs, deps = [], visibility = None):
    """Builds <name>.so (importable as `name`) and a py_library <name>.

    Args:
      name: module name, as passed to PYBIND11_MODULE.
      srcs: C++ sources.
      deps: cc_library dependencies.
      visibility: as for py_library.
    """
    native.cc_binary(
        name = name + ".so",
        srcs = srcs,
        copts = ["-fvisibility=hidden"],
        linkshared = True,
        linkstatic = True,
        deps = deps + ["//third_party/pybind11"],
    )
    native.py_library(
        name = name,
        data = [":" + name + ".so"],
        imports = ["."],
        visibility = visibility,
    )
