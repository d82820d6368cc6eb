"""Runs one pytest file under Bazel, writing JUnit XML where Bazel asks."""
import os
import sys

import pytest

if __name__ == "__main__":
    path = sys.argv[1]
    args = [path, "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"]
    if os.environ.get("XML_OUTPUT_FILE"):
        args.append("--junitxml=" + os.environ["XML_OUTPUT_FILE"])
    args.extend(sys.argv[2:])
    sys.exit(pytest.main(args))
