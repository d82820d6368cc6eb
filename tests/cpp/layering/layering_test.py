"""Layering of the core on Bazel's dependency graph (genquery outputs).

- No code generator (//quadrants/codegen/...) depends on the runtime
  (//quadrants/runtime/...): both meet in //quadrants/artifact.
- The offline cache depends on no compiler: not LLVM, not a code generator.
"""
import sys
import unittest

CODEGEN_DEPS = OFFLINE_CACHE_DEPS = None


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

    def test_the_check_sees_a_violation(self):
        self.assertEqual(
            offending(["//quadrants/ir:ir", "//quadrants/runtime:backend"],
                      ["//quadrants/runtime"]),
            ["//quadrants/runtime:backend"])


if __name__ == "__main__":
    CODEGEN_DEPS = sys.argv.pop(1)
    OFFLINE_CACHE_DEPS = sys.argv.pop(1)
    unittest.main()
