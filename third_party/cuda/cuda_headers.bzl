"""cuda_headers_repository: exposes cuda.h from a local CUDA toolkit.

Looks in $CUDA_PATH, then /usr/local/cuda. Fails with a clear message when no
cuda.h is found, since the CUDA driver loader is part of every build.
"""

def _cuda_headers_impl(rctx):
    candidates = []
    env_path = rctx.os.environ.get("CUDA_PATH")
    if env_path:
        candidates.append(env_path)
    candidates.append("/usr/local/cuda")
    for root in candidates:
        header = rctx.path(root + "/include/cuda.h")
        if header.exists:
            rctx.symlink(header, "include/cuda.h")
            rctx.file("BUILD.bazel", """
package(default_visibility = ["%s"])

cc_library(
    name = "cuda_headers",
    hdrs = ["include/cuda.h"],
    includes = ["include"],
)
""" % rctx.attr.visible_to)
            return
    fail("cuda.h not found in %s; install the CUDA toolkit headers or set CUDA_PATH" % candidates)

cuda_headers_repository = repository_rule(
    implementation = _cuda_headers_impl,
    attrs = {
        # The package allowed to depend on the headers (a visibility label).
        "visible_to": attr.string(mandatory = True),
    },
    environ = ["CUDA_PATH"],
    local = True,
)
