"""Kernels defined in a string: written to a module file first, since a
kernel's source must be readable from a file."""
import contextlib
import importlib.util
import pathlib
import sys
import tempfile


def import_kernel_from_file(kernel_filepath, kernel_name):
    """Imports the file as module `kernel_name` and returns its attribute of
    that name."""
    spec = importlib.util.spec_from_file_location(kernel_name, str(kernel_filepath))
    module = importlib.util.module_from_spec(spec)
    sys.modules[kernel_name] = module
    spec.loader.exec_module(module)
    return getattr(module, kernel_name)


@contextlib.contextmanager
def load_kernel_from_string(kernel_str, kernel_name):
    """The object named `kernel_name` that the source `kernel_str` defines,
    for the duration of the with block."""
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / f"{kernel_name}.py"
        path.write_text(kernel_str)
        try:
            yield import_kernel_from_file(path, kernel_name)
        finally:
            sys.modules.pop(kernel_name, None)
