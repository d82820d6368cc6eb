"""The wheel installs into a fresh virtual environment and runs a kernel."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = """
import numpy as np
import quadrants as qd
qd.init(arch=qd.cpu)

@qd.kernel
def scale(x: qd.types.ndarray(qd.f32, 1), s: qd.f32):
    for i in range(x.shape[0]):
        x[i] *= s

a = np.arange(8, dtype=np.float32)
scale(a, 3.0)
assert a.tolist() == [3.0 * i for i in range(8)], a
print("installed from", qd.__file__)
"""


class WheelInstallTest(unittest.TestCase):
    def test_wheel_runs_a_kernel_in_a_fresh_venv(self):
        wheel = os.path.abspath(WHEEL)
        with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as tmp:
            venv = os.path.join(tmp, "venv")
            # Debian's numpy comes from the system site packages.
            subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv],
                           check=True)
            python = os.path.join(venv, "bin", "python")
            subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-deps",
                            "--quiet", wheel], check=True)
            # Kernels are compiled from their source file; run from an empty
            # directory so the source tree cannot be imported instead.
            script = os.path.join(tmp, "use_wheel.py")
            with open(script, "w") as f:
                f.write(SCRIPT)
            result = subprocess.run([python, script], cwd=tmp, capture_output=True,
                                    text=True, env={"PATH": "/usr/bin:/bin"})
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn(os.path.join(venv, "lib"), result.stdout)


if __name__ == "__main__":
    WHEEL = sys.argv.pop(1)
    unittest.main()
