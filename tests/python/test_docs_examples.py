"""Every code block of the user guide (docs/user_guide/*.md) runs, and
prints what the page shows (tests/python/docs_examples.py says how pages
mark blocks and outputs). Blocks marked for a GPU run where CUDA is."""
import glob
import os

import pytest

import quadrants as qd

from tests.python import docs_examples

GUIDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                     "user_guide")
PAGES = sorted(glob.glob(os.path.join(GUIDE, "*.md")))


def _has_cuda():
    try:
        return qd.is_arch_supported(qd.cuda)
    except qd.QuadrantsError:
        return False


def test_the_guide_has_its_pages():
    names = {os.path.basename(p) for p in PAGES}
    assert {"getting_started.md", "kernels.md", "fields.md", "autodiff.md", "adstack.md",
            "backends.md", "interop.md", "offline_cache.md", "performance.md", "options.md",
            "troubleshooting.md", "sparse.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=[os.path.basename(p) for p in PAGES])
def test_every_block_of_the_page_runs_and_prints_what_it_shows(page):
    ran, skipped, failures = docs_examples.run_page(page, has_gpu=_has_cuda())
    assert not failures, "\n\n".join(failures)
    if skipped and not ran:
        pytest.skip(f"{os.path.basename(page)}: its blocks need a GPU (CUDA) or PyTorch, "
                    f"which this machine lacks")


def test_a_broken_example_fails(tmp_path):
    page = tmp_path / "broken.md"
    page.write_text("# Broken\n\n```python\nx = 1\nprint(x + 1)\n```\n\n"
                    "```{code-block} text\n:caption: Output\n\n3\n```\n\n"
                    "```python\nraise ValueError('on purpose')\n```\n")
    ran, _, failures = docs_examples.run_page(str(page))
    assert ran == 2
    assert len(failures) == 2
    assert "broken.md:3: the block printed\n2" in failures[1] or \
        "broken.md:3: the block printed\n2" in failures[0]
    assert any("broken.md:14: the block raised" in f and "on purpose" in f for f in failures)


def test_parse_reads_gpu_marks_and_outputs():
    blocks = docs_examples.parse("```{code-block} python\n:class: gpu\n\nprint(1)\n```\n"
                                 "```{code-block} text\n:caption: Output\n\n1\n```\n"
                                 "```sh\nls\n```\n")
    assert len(blocks) == 1 and blocks[0].gpu and blocks[0].output == "1"
    assert blocks[0].code == "print(1)"
