"""@qd.kernel(fastcache=True): a later process finds a pure kernel's
compiled artifact from a key of its source, argument types and options,
and launches it without running the front end or any compiler pass.

Each test writes a module of kernels to a temporary folder and runs it in
fresh Python processes sharing one offline cache. A process asked to
refuse the front end replaces the transformer's FunctionCompiler with one
that raises, so a kernel that reaches it fails the run: the load must
then come from the fastcache alone.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils


def _archs():
    archs = test_utils._wanted([qd.cpu, qd.vulkan, qd.cuda])  # pylint: disable=protected-access
    return [pytest.param(a, id=a.name, marks=pytest.mark.skipif(
        runtime.arch_unavailable_reason(a) is not None,
        reason=f"arch {a.name} unavailable: {runtime.arch_unavailable_reason(a)}"))
            for a in archs]


_KERNELS = '''
import numpy as np
import quadrants as qd
from helpers_{tag} import scale


@qd.kernel(fastcache=True)
def axpy(a: qd.types.NDArray[qd.f32, 1], s: qd.f32) -> qd.f32:
    total = 0.0
    for i in range(a.shape[0]):
        a[i] = scale(a[i]) + s
        total += a[i]
    return total


@qd.kernel(fastcache=True)
def fill(a: qd.types.NDArray[qd.f32, 1], value: qd.template()):
    for i in range(a.shape[0]):
        a[i] = value


@qd.data_oriented
class State:
    def __init__(self, n):
        self.x = qd.ndarray(qd.f32, (n,))
        self.gain = 3

    @qd.kernel(fastcache=True)
    def step(self):
        for i in range(self.x.shape[0]):
            self.x[i] = self.x[i] * self.gain + 1.0


@qd.kernel(graph=True, fastcache=True)
def countdown(x: qd.types.NDArray[qd.i32, 1], counter: qd.types.NDArray[qd.i32, 0]):
    while qd.graph.do_while(counter):
        for i in range(x.shape[0]):
            x[i] = x[i] + 1
        for _ in range(1):
            counter[()] = counter[()] - 1
'''

_HELPERS = '''
import quadrants as qd


@qd.func
def scale(x):
    return {factor} * x
'''

_CHILD = '''
import json, sys
sys.path[:0] = {paths!r}
import numpy as np
import quadrants as qd
if {refuse_front_end!r}:
    from quadrants.lang.transformer import compiler

    def _refuse(*args, **kwargs):
        raise RuntimeError("the front end ran")
    compiler.FunctionCompiler.__init__ = _refuse
qd.init(arch=qd.{arch}, offline_cache_file_path={cache!r}, **{options!r})
import kernels_{tag} as m
out = {{}}
a = qd.ndarray(qd.f32, (5,))
a.from_numpy(np.arange(5, dtype=np.float32))
out["total"] = m.axpy(a, 0.5)
out["a"] = a.to_numpy().tolist()
out["axpy"] = vars(m.axpy.src_ll_cache_observations)
if {run_more!r}:
    m.fill(a, 7)
    out["fill7"] = a.to_numpy().tolist()
    m.fill(a, 9)
    out["fill9"] = a.to_numpy().tolist()
    s = m.State(4)
    s.x.from_numpy(np.ones(4, dtype=np.float32))
    s.step()
    s.x = qd.ndarray(qd.f32, (4,))  # another ndarray of the same type
    s.x.from_numpy(np.full(4, 2.0, dtype=np.float32))
    s.step()
    out["state"] = s.x.to_numpy().tolist()
    out["step"] = vars(m.State.step.src_ll_cache_observations)
    x = qd.ndarray(qd.i32, (3,))
    counter = qd.ndarray(qd.i32, ())
    counter.from_numpy(np.array(4, dtype=np.int32))
    m.countdown(x, counter)
    out["countdown"] = x.to_numpy().tolist()
    out["graph"] = vars(m.countdown.src_ll_cache_observations)
print("RESULT" + json.dumps(out))
'''


class _Program:
    """A module of kernels in `folder` and the processes that run it."""

    def __init__(self, folder, arch, tag):
        self.folder, self.arch, self.tag = folder, arch, tag
        self.cache = os.path.join(folder, "cache")
        with open(os.path.join(folder, f"kernels_{tag}.py"), "w") as f:
            f.write(_KERNELS.format(tag=tag))
        self.set_factor(2.0)

    def set_factor(self, factor):
        path = os.path.join(self.folder, f"helpers_{self.tag}.py")
        with open(path, "w") as f:
            f.write(_HELPERS.format(factor=factor))
        stamp = os.stat(path).st_mtime + 2  # a new mtime even within one second
        os.utime(path, (stamp, stamp))

    def run(self, refuse_front_end=False, run_more=False, **options):
        script = _CHILD.format(paths=[self.folder] + sys.path, arch=self.arch.name,
                               cache=self.cache, tag=self.tag, options=options,
                               refuse_front_end=refuse_front_end, run_more=run_more)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             check=False, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        line = [x for x in out.stdout.splitlines() if x.startswith("RESULT")][0]
        return json.loads(line[len("RESULT"):]), out.stderr


@pytest.mark.parametrize("arch", _archs())
def test_a_later_process_loads_without_the_front_end(tmp_path, arch):
    program = _Program(str(tmp_path), arch, "load")
    cold, _ = program.run(run_more=True)
    assert cold["axpy"] == dict(cache_key_generated=True, cache_validated=False,
                                cache_loaded=False, cache_stored=True)
    warm, _ = program.run(refuse_front_end=True, run_more=True)
    assert warm["axpy"]["cache_loaded"] and warm["step"]["cache_loaded"]
    # 2 * [0..4] + 0.5, and the returned sum of it.
    assert warm["a"] == cold["a"] == [0.5, 2.5, 4.5, 6.5, 8.5]
    assert warm["total"] == cold["total"] == 22.5
    # Template values are compiled in: each value has its own entry.
    assert warm["fill7"] == [7.0] * 5 and warm["fill9"] == [9.0] * 5
    # A data-oriented member reassigned to another ndarray is the one used.
    assert warm["state"] == cold["state"] == [7.0] * 4
    # A graph kernel (a do_while loop) is cached through its parts.
    assert cold["graph"]["cache_stored"] and not cold["graph"]["cache_loaded"]
    assert warm["graph"]["cache_loaded"]
    assert warm["countdown"] == cold["countdown"] == [4, 4, 4]


@pytest.mark.parametrize("arch", _archs())
def test_an_edited_func_compiles_again(tmp_path, arch):
    program = _Program(str(tmp_path), arch, "edit")
    program.run()
    program.set_factor(3.0)
    edited, _ = program.run()
    assert edited["axpy"]["cache_validated"] is False and edited["axpy"]["cache_stored"]
    assert edited["a"] == [0.5, 3.5, 6.5, 9.5, 12.5]
    # The new entry serves the next process.
    again, _ = program.run(refuse_front_end=True)
    assert again["a"] == edited["a"] and again["axpy"]["cache_loaded"]


def test_src_ll_cache_false_turns_it_off(tmp_path):
    program = _Program(str(tmp_path), qd.cpu, "off")
    program.run()
    off, _ = program.run(src_ll_cache=False)
    assert not any(off["axpy"].values())
    assert not os.path.exists(os.path.join(program.cache, "python_side_cache")) or \
        len(os.listdir(os.path.join(program.cache, "python_side_cache"))) == 1


def test_a_corrupt_entry_compiles_again(tmp_path):
    program = _Program(str(tmp_path), qd.cpu, "corrupt")
    program.run()
    folder = os.path.join(program.cache, "python_side_cache")
    for name in os.listdir(folder):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(b"\x00\x0a\xe2\xff\xfe\x80JUNK")
    damaged, _ = program.run()
    assert damaged["axpy"]["cache_key_generated"] and not damaged["axpy"]["cache_loaded"]
    assert damaged["axpy"]["cache_stored"] and damaged["a"][1] == 2.5
    repaired, _ = program.run(refuse_front_end=True)
    assert repaired["axpy"]["cache_loaded"]


@test_utils.test(arch=qd.cpu)
def test_the_key_follows_what_is_compiled_in(tmp_path):
    qd.init(arch=qd.cpu, offline_cache_file_path=str(tmp_path))
    from quadrants.lang._fast_caching import args_hasher
    from quadrants.lang.kernel_arguments import ArgMetadata

    template = ArgMetadata("v", qd.template())
    scalar = ArgMetadata("v", qd.f32)
    # Scalars passed at run time key by type, template values by value.
    assert args_hasher.hash_args(False, [1.5], [scalar]) == \
        args_hasher.hash_args(False, [2.5], [scalar])
    assert args_hasher.hash_args(False, [1.5], [template]) != \
        args_hasher.hash_args(False, [2.5], [template])
    f32 = qd.ndarray(qd.f32, (3,))
    f64 = qd.ndarray(qd.f64, (3,))
    f32_2d = qd.ndarray(qd.f32, (3, 3))
    hashes = {args_hasher.hash_args(False, [x], [None]) for x in (f32, f64, f32_2d)}
    assert len(hashes) == 3
    assert args_hasher.hash_args(False, [qd.ndarray(qd.f32, (9,))], [None]) == \
        args_hasher.hash_args(False, [f32], [None])


@test_utils.test(arch=qd.cpu)
def test_fields_are_not_cached_and_a_template_field_is_reported(tmp_path, capfd):
    qd.init(arch=qd.cpu, offline_cache_file_path=str(tmp_path))
    x = qd.field(qd.f32, shape=4)

    @qd.kernel(fastcache=True)
    def through_template(f: qd.template()):
        for i in range(4):
            f[i] = 2.0

    @qd.kernel(fastcache=True)
    def through_tensor(f: qd.Tensor):
        for i in range(4):
            f[i] = 3.0

    capfd.readouterr()
    through_template(x)
    err = capfd.readouterr().err
    assert "[FASTCACHE][PARAM_INVALID]" in err and "[FASTCACHE][INVALID_FUNC]" in err
    assert "through_template" in err
    assert not through_template.src_ll_cache_observations.cache_key_generated
    through_tensor(x)
    err = capfd.readouterr().err
    assert "[FASTCACHE]" not in err  # a field through qd.Tensor: silently not cached
    assert x.to_numpy().tolist() == [3.0] * 4


@test_utils.test(arch=qd.cpu)
def test_print_non_pure_names_the_kernels_not_marked(tmp_path, capfd):
    qd.init(arch=qd.cpu, offline_cache_file_path=str(tmp_path), print_non_pure=True)

    @qd.kernel(fastcache=True)
    def marked():
        pass

    @qd.kernel
    def unmarked():
        pass

    marked()
    assert "[NOT_PURE]" not in capfd.readouterr().out
    unmarked()
    out = capfd.readouterr().out
    assert "[NOT_PURE]" in out and "unmarked" in out
