"""qd_pytest_files: one py_test per pytest file."""

def qd_pytest_files(srcs, data = []):
    for src in srcs:
        native.py_test(
            name = src[:-len(".py")],
            srcs = ["pytest_runner.py", "test_spirv_msl_audit.py", src],
            main = "pytest_runner.py",
            # The SPIR-V/MSL audit of the modules the file's vulkan tests
            # compile runs after them (see pytest_runner.py).
            args = [
                "--spirv-msl-audit=$(location test_spirv_msl_audit.py)",
                "$(location %s)" % src,
            ],
            data = data,
            python_version = "PY3",
            # Each file runs on cpu and vulkan (lavapipe shares the two
            # cores), so a loaded machine needs more than the medium 300 s.
            timeout = "long",
            tags = ["cpu", "vulkan", "cuda", "amdgpu", "metal"],
            deps = [":harness"],
        )
