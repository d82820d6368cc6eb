"""Runs the code blocks of a user-guide page (Markdown) and compares the
output each one prints with the page's.

A page's blocks run in order in one fresh Python process, as a notebook
would, so later blocks use what earlier ones defined:
  ```python                    runs (on the CPU, in CI);
  ```{code-block} python       with `:class: gpu` among its options runs only
                               where CUDA is (the GPU machine), else is
                               skipped, with the page's later blocks;
  ```{code-block} text         with `:caption: Output` right after a Python
                               block is what that block prints, compared
                               line by line (trailing spaces ignored).
Other blocks (sh, toctree, include) are not code.
"""
import dataclasses
import importlib.util
import os
import re
import subprocess
import sys

MARK = "@@qd-docs-block-{}@@"


@dataclasses.dataclass
class Block:
    line: int            # 1-based line of the opening fence
    code: str
    gpu: bool = False
    output: str = None   # what it prints, when the page shows it


def parse(text):
    """The runnable blocks of a Markdown page, with their outputs."""
    lines = text.split("\n")
    blocks, k = [], 0
    while k < len(lines):
        match = re.match(r"^(`{3,})\s*(.*)$", lines[k])
        if not match:
            k += 1
            continue
        fence, info = match.group(1), match.group(2).strip()
        start = k
        k += 1
        options, body = {}, []
        while k < len(lines) and not lines[k].startswith(fence):
            body.append(lines[k])
            k += 1
        k += 1
        if info.startswith("{"):
            while body and re.match(r"^:(\w+):\s*(.*)$", body[0]):
                name, value = re.match(r"^:(\w+):\s*(.*)$", body[0]).groups()
                options[name] = value
                body.pop(0)
            if body and not body[0].strip():
                body.pop(0)
        code = "\n".join(body)
        if info == "python" or info == "{code-block} python":
            blocks.append(Block(start + 1, code, gpu="gpu" in options.get("class", "")))
        elif info == "{code-block} text" and options.get("caption") == "Output":
            if not blocks or blocks[-1].output is not None:
                raise ValueError(f"line {start + 1}: an Output block follows no Python block")
            blocks[-1].output = code
    return blocks


def _normalize(text):
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n"))


def run_page(path, has_gpu=False, timeout=600):
    """Runs the page's blocks; returns (ran, skipped, failures), failures as
    messages naming the page, the block's line and what went wrong."""
    with open(path, encoding="utf-8") as f:
        blocks = parse(f.read())
    for package in ("torch", "jax"):
        if any(re.search(rf"^\s*import {package}\b", b.code, re.M) for b in blocks) and \
                importlib.util.find_spec(package) is None:
            return 0, len(blocks), []  # the page needs a package that is not here
    runnable = []
    for block in blocks:
        if block.gpu and not has_gpu:
            break
        runnable.append(block)
    skipped = len(blocks) - len(runnable)
    if not runnable:
        return 0, skipped, []
    source, starts = [], []
    for k, block in enumerate(runnable):
        source.append(f"print({MARK.format(k)!r}, flush=True)")
        starts.append(len(source) + 1)
        source.extend(block.code.split("\n"))
    name = os.path.basename(path)
    script = os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"),
                          f"qd_docs_{os.getpid()}_{name[:-3]}.py")
    with open(script, "w", encoding="utf-8") as f:
        f.write("\n".join(source) + "\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    result = subprocess.run([sys.executable, script], capture_output=True, text=True,
                            env=env, timeout=timeout, check=False)
    printed = re.split(r"@@qd-docs-block-(\d+)@@\n", result.stdout)
    outputs = {int(printed[i]): printed[i + 1] for i in range(1, len(printed) - 1, 2)}
    failures = []
    if result.returncode != 0:
        failed = len(runnable) - 1
        for match in re.finditer(rf'File "{re.escape(script)}", line (\d+)', result.stderr):
            line = int(match.group(1))
            failed = max(k for k, s in enumerate(starts) if s <= line)
        block = runnable[failed]
        failures.append(f"{name}:{block.line}: the block raised:\n{result.stderr[-3000:]}")
    for k, block in enumerate(runnable):
        if block.output is None or k not in outputs:
            continue
        if result.returncode != 0 and k == max(outputs):
            continue  # the failing block's output is incomplete
        if _normalize(outputs[k]) != _normalize(block.output):
            failures.append(f"{name}:{block.line}: the block printed\n{outputs[k]}\n"
                            f"but the page shows\n{block.output}")
    return len(runnable), skipped, failures
