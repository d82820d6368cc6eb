"""qd_cc_proto_library: .proto files to a C++ library with Debian's protoc.

Bazel 4.2.3's native proto rules want a protobuf source repository; this rule
runs the system /usr/bin/protoc instead, so it works offline.
"""

def qd_cc_proto_library(name, srcs, deps = [], visibility = None):
    """Generates <name> (a cc_library) from srcs (.proto files of this package).

    Args:
      name: the cc_library's name.
      srcs: .proto files in this package; imports resolve from the workspace root.
      deps: other qd_cc_proto_library targets the protos import.
      visibility: as for cc_library.
    """
    root = Label("//:BUILD.bazel").workspace_root
    headers = [src[:-len(".proto")] + ".pb.h" for src in srcs]
    sources = [src[:-len(".proto")] + ".pb.cc" for src in srcs]
    native.genrule(
        name = name + "_protoc",
        srcs = srcs,
        outs = headers + sources,
        # Paths are relative to this repository's root, also when another
        # workspace imports it (then it lies under external/).
        cmd = "/usr/bin/protoc --proto_path=%s --cpp_out=%s $(SRCS)" % (
            root or ".",
            "$(GENDIR)/" + root if root else "$(GENDIR)",
        ),
        message = "protoc " + native.package_name(),
    )
    native.cc_library(
        name = name,
        srcs = sources,
        hdrs = headers,
        deps = deps + ["//third_party/protobuf"],
        visibility = visibility,
    )
