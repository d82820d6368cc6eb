"""Program reaches backends through the backend registry only: neither its
direct Bazel deps nor its sources name a package of a registered backend."""
import re
import sys
import unittest


def _labels(path):
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


class ProgramNamesNoBackendTest(unittest.TestCase):
    def setUp(self):
        # The query also names the toolchain (@bazel_tools//...).
        registrations = [label for label in _labels(REGISTERED_FILE)
                         if label.startswith("//quadrants/")
                         and label != "//quadrants/runtime:backends"]
        # The packages of the registration libraries, e.g.
        # //quadrants/runtime/cpu.
        self.backend_packages = sorted({label.split(":")[0] for label in registrations})
        self.assertIn("//quadrants/runtime/cpu", self.backend_packages)

    def test_direct_deps_name_no_backend_package(self):
        deps = _labels(DEPS_FILE)
        self.assertIn("//quadrants/runtime:backend_registry", deps)
        offending = [dep for dep in deps for package in self.backend_packages
                     if dep.startswith(package + ":") or dep.startswith(package + "/")]
        self.assertEqual(offending, [], "Program depends on a backend directly")

    def test_sources_include_no_backend_header(self):
        directories = [package[len("//"):] + "/" for package in self.backend_packages]
        offending = []
        for path in SOURCES:
            with open(path) as f:
                for line in f:
                    match = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
                    if match and any(match.group(1).startswith(d) for d in directories):
                        offending.append(f"{path}: {match.group(1)}")
        self.assertEqual(offending, [], "Program includes a backend header")


if __name__ == "__main__":
    DEPS_FILE, REGISTERED_FILE = sys.argv[1], sys.argv[2]
    SOURCES = sys.argv[3:]
    del sys.argv[1:]
    unittest.main()
