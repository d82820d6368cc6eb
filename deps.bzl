"""The external repositories and toolchains Quadrants builds with.

This repository's WORKSPACE and every workspace that imports Quadrants (see
examples/bazel_consumer) call these, so both resolve the same Debian-backed
LLVM, Python and CUDA headers, Bazel's rule shims and pinned toolchains.
Everything comes from Debian packages (see third_party/debian_packages.txt);
nothing is downloaded, so the build works without a network.

    load("@quadrants//:deps.bzl", "quadrants_dependencies",
         "quadrants_register_toolchains")
    quadrants_dependencies()
    quadrants_register_toolchains()
"""

load("@bazel_tools//tools/build_defs/repo:utils.bzl", "maybe")
load("//third_party/cuda:cuda_headers.bzl", "cuda_headers_repository")

def _in_this_repo(package_spec):
    # Labels in the generated BUILD files must name this repository however
    # the importing workspace spells it ("@" when it is the main one).
    return "@%s//%s" % (Label("//:BUILD.bazel").workspace_name, package_spec)

def _local_dir_repository_impl(rctx):
    # Like local_repository, but located through a label, so the path is
    # right whichever workspace calls the macro.
    directory = rctx.path(rctx.attr.marker).dirname
    for child in directory.readdir():
        rctx.symlink(child, child.basename)

_local_dir_repository = repository_rule(
    implementation = _local_dir_repository_impl,
    attrs = {"marker": attr.label(mandatory = True, allow_single_file = True)},
    local = True,
)

def _local_tree_repository_impl(rctx):
    # Like new_local_repository, with the BUILD file's visibility filled in.
    for child in rctx.path(rctx.attr.path).readdir():
        rctx.symlink(child, child.basename)
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)
    rctx.template("BUILD.bazel", rctx.attr.build_file, {
        "%{visible_to}": rctx.attr.visible_to,
    })

_local_tree_repository = repository_rule(
    implementation = _local_tree_repository_impl,
    attrs = {
        "path": attr.string(mandatory = True),
        "build_file": attr.label(mandatory = True, allow_single_file = True),
        "visible_to": attr.string(mandatory = True),
    },
    local = True,
)

def _headers_archive_repository_impl(rctx):
    # Unpacks a committed archive of headers into Bazel's external tree (a
    # build cache, never the source tree).
    rctx.extract(rctx.attr.archive)
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)
    rctx.template("BUILD.bazel", rctx.attr.build_file, {
        "%{visible_to}": rctx.attr.visible_to,
    })

_headers_archive_repository = repository_rule(
    implementation = _headers_archive_repository_impl,
    attrs = {
        "archive": attr.label(mandatory = True, allow_single_file = True),
        "build_file": attr.label(mandatory = True, allow_single_file = True),
        "visible_to": attr.string(mandatory = True),
    },
)

def quadrants_dependencies():
    """Declares the external repositories Quadrants needs (unless present)."""
    maybe(
        native.local_repository,
        name = "rules_java",
        path = "/usr/share/bazel/rules/java",
    )
    maybe(
        native.local_repository,
        name = "platforms",
        path = "/usr/share/bazel/tools/platforms",
    )

    # Bazel 4.2.3 asks for these two; small local shims stand in for them.
    maybe(
        _local_dir_repository,
        name = "rules_cc",
        marker = Label("//third_party/shims/rules_cc:WORKSPACE"),
    )
    maybe(
        _local_dir_repository,
        name = "remote_coverage_tools",
        marker = Label("//third_party/shims/remote_coverage_tools:WORKSPACE"),
    )

    maybe(
        _local_tree_repository,
        name = "llvm",
        build_file = Label("//third_party/llvm:llvm.BUILD"),
        path = "/usr/lib/llvm-19",
        visible_to = _in_this_repo("third_party/llvm:__pkg__"),
    )
    maybe(
        _local_tree_repository,
        name = "eigen",
        build_file = Label("//third_party/eigen:eigen.BUILD"),
        path = "/usr/include/eigen3",
        visible_to = _in_this_repo("third_party/eigen:__pkg__"),
    )
    maybe(
        _local_tree_repository,
        name = "python_headers",
        build_file = Label("//third_party/python:python_headers.BUILD"),
        path = "/usr/include/python3.11",
        visible_to = _in_this_repo("third_party:__subpackages__"),
    )
    # CPython 3.12's headers and pybind11 3.1's (which read numpy 2's
    # dtypes), as no Debian 12 package has them.
    maybe(
        _headers_archive_repository,
        name = "python312_pybind11",
        archive = Label("//third_party/python:python3.12-and-pybind11-3.1-headers.tgz"),
        build_file = Label("//third_party/python:python312_pybind11.BUILD"),
        visible_to = _in_this_repo("third_party:__subpackages__"),
    )
    maybe(
        cuda_headers_repository,
        name = "cuda_headers",
        visible_to = _in_this_repo("third_party/cuda:__pkg__"),
    )

def quadrants_register_toolchains():
    """Registers the pinned clang-19 C++ and Debian Python 3 toolchains."""
    native.register_toolchains(
        str(Label("//toolchain/cc:clang19_toolchain")),
        str(Label("//toolchain/python:python3_toolchain")),
    )
