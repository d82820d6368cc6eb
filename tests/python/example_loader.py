"""Loads a script of examples/ as a module, so a test calls its main()."""
import importlib.util
import os
import sys

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    # Registered under its name, so what it hands to spawned processes
    # (pickled by module and name) is found there.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
