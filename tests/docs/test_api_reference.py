"""The API reference lists every public name of `import quadrants as qd`,
and every one of them has a docstring.

The first test needs the built site (QD_DOCS_SITE, set by
tools/run_tests.py after tools/build_docs.py); the second only the package.
"""
import html
import inspect
import os
import re

import pytest

import quadrants as qd

SITE = os.environ.get("QD_DOCS_SITE", "")


def public_names():
    return sorted(n for n in dir(qd) if not n.startswith("_")
                  and not inspect.ismodule(getattr(qd, n)))


def test_every_public_name_has_a_docstring():
    missing = [n for n in public_names() if not (inspect.getdoc(getattr(qd, n)) or "").strip()]
    assert not missing, f"public names without a docstring: {missing}"


@pytest.mark.skipif(not SITE, reason="QD_DOCS_SITE is not set: no built site")
def test_the_api_reference_lists_every_public_name():
    with open(os.path.join(SITE, "_generated", "api.html"), encoding="utf-8") as f:
        page = html.unescape(re.sub(r"<[^>]+>", "", f.read()))
    listed = set(re.findall(r"^qd\.(\w+)¶?$", page, re.M))
    missing = [n for n in public_names() if n not in listed]
    assert not missing, f"missing from the API reference: {missing}"
    assert len(listed) >= 100
