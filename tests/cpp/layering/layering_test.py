"""Layering of the core on Bazel's dependency graph (genquery outputs).

- No code generator (//quadrants/codegen/...) depends on the runtime
  (//quadrants/runtime/...): both meet in //quadrants/artifact.
- The offline cache depends on no compiler: not LLVM, not a code generator.
- Backends are independent of each other: no //quadrants/runtime/<backend>
  depends on another backend's package. A backend may use the libraries of
  its family (runtime/gpu for CUDA and AMDGPU, runtime/llvm/host for the
  LLVM backends) and the libraries every backend shares (runtime/host,
  runtime/adstack, runtime/offline_cache), which depend on no backend.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "tools"))
import dep_graph  # noqa: E402

CODEGEN_DEPS = OFFLINE_CACHE_DEPS = CORE_GRAPH = None

RUNTIME = "quadrants/runtime"
BACKENDS = {RUNTIME + "/" + name for name in ("cpu", "cuda", "amdgpu", "vulkan")}
# Libraries of a backend family -> the packages allowed to use them.
FAMILY_LIBRARIES = {
    RUNTIME + "/gpu": {RUNTIME + "/cuda", RUNTIME + "/amdgpu"},
    RUNTIME + "/llvm/host": {RUNTIME + "/cpu", RUNTIME + "/cuda", RUNTIME + "/amdgpu",
                             RUNTIME + "/gpu"},
}


def backend_violations(graph):
    """'A -> B' for each package under quadrants/runtime/ depending on a
    backend's package or a family library it is not part of. The registry
    package itself (quadrants/runtime, whose :backends links every
    registration) is exempt."""
    specific = BACKENDS | set(FAMILY_LIBRARIES)
    found = []
    for package, deps in sorted(graph.items()):
        if not package.startswith(RUNTIME + "/"):
            continue
        for dep in deps:
            if dep not in specific or dep == package:
                continue
            if package in FAMILY_LIBRARIES.get(dep, ()):
                continue
            found.append("%s -> %s" % (package, dep))
    return found


def read_labels(path):
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


def offending(labels, forbidden_prefixes):
    return sorted(label for label in labels
                  if label.startswith(tuple(forbidden_prefixes)))


class LayeringTest(unittest.TestCase):
    def test_codegen_does_not_depend_on_the_runtime(self):
        labels = read_labels(CODEGEN_DEPS)
        # The closure is real: it holds the generators and the artifact.
        self.assertIn("//quadrants/codegen/llvm:kernel_lowering", labels)
        self.assertIn("//quadrants/codegen/spirv:kernel_codegen", labels)
        self.assertIn("//quadrants/artifact:compiled_kernel_data", labels)
        self.assertEqual(
            offending(labels, ["//quadrants/runtime"]), [],
            "code generators depend on the runtime")

    def test_offline_cache_depends_on_no_compiler(self):
        labels = read_labels(OFFLINE_CACHE_DEPS)
        self.assertIn("//quadrants/runtime/offline_cache:offline_cache",
                      labels)
        self.assertEqual(
            offending(labels, ["//third_party/llvm", "@llvm//",
                               "//quadrants/codegen"]), [],
            "the offline cache depends on a compiler")

    def test_backends_are_independent_of_each_other(self):
        with open(CORE_GRAPH) as f:
            graph = dep_graph.package_graph(f.read())
        # The closure is real: every backend and the shared host library.
        for package in BACKENDS | {RUNTIME + "/host", RUNTIME + "/gpu"}:
            self.assertIn(package, graph)
        self.assertIn(RUNTIME + "/host", graph[RUNTIME + "/vulkan"])
        self.assertEqual(backend_violations(graph), [],
                         "a backend depends on another backend")

    def test_the_backend_check_sees_violations(self):
        graph = {
            RUNTIME + "/vulkan": [RUNTIME + "/cpu", RUNTIME + "/host"],
            RUNTIME + "/vulkan/sub": [RUNTIME + "/llvm/host"],
            RUNTIME + "/gpu": [RUNTIME + "/cpu", RUNTIME + "/llvm/host"],
            RUNTIME + "/cuda": [RUNTIME + "/gpu", RUNTIME + "/amdgpu"],
            RUNTIME + "/host": [RUNTIME + "/cuda"],
            RUNTIME: [RUNTIME + "/cpu", RUNTIME + "/vulkan"],
        }
        self.assertEqual(backend_violations(graph), [
            RUNTIME + "/cuda -> " + RUNTIME + "/amdgpu",
            RUNTIME + "/gpu -> " + RUNTIME + "/cpu",
            RUNTIME + "/host -> " + RUNTIME + "/cuda",
            RUNTIME + "/vulkan -> " + RUNTIME + "/cpu",
            RUNTIME + "/vulkan/sub -> " + RUNTIME + "/llvm/host",
        ])

    def test_the_check_sees_a_violation(self):
        self.assertEqual(
            offending(["//quadrants/ir:ir", "//quadrants/runtime:backend"],
                      ["//quadrants/runtime"]),
            ["//quadrants/runtime:backend"])


if __name__ == "__main__":
    CODEGEN_DEPS = sys.argv.pop(1)
    OFFLINE_CACHE_DEPS = sys.argv.pop(1)
    CORE_GRAPH = sys.argv.pop(1)
    unittest.main()
