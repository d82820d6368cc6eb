"""The IR and transform libraries must not depend on any backend library."""
import sys
import unittest

FORBIDDEN = {
    "//third_party/llvm": "LLVM",
    "@llvm//": "LLVM",
    "//third_party/vulkan": "Vulkan",
    "//third_party/spirv_tools": "SPIR-V",
    "//third_party/spirv_cross": "SPIR-V",
    "//third_party/spirv_headers": "SPIR-V",
    "//third_party/pybind11": "pybind11",
    "//third_party/python": "Python headers",
    "@python_headers//": "Python headers",
    "//third_party/cuda": "CUDA",
    "@cuda_headers//": "CUDA",
    "//third_party/hip": "HIP",
}


class IrTransformsDepsTest(unittest.TestCase):
    def test_no_backend_dependencies(self):
        with open(DEPS_FILE) as f:
            labels = [line.strip() for line in f if line.strip()]
        # The closure must be real: it includes the libraries themselves.
        self.assertIn("//quadrants/ir:ir", labels)
        self.assertIn("//quadrants/transforms:offload", labels)
        offending = [(label, name) for label in labels
                     for prefix, name in FORBIDDEN.items()
                     if label.startswith(prefix)]
        self.assertEqual(offending, [], "backend dependencies found")


if __name__ == "__main__":
    DEPS_FILE = sys.argv.pop(1)
    unittest.main()
