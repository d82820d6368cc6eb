"""Unit tests of the gradient fuzzer (tools/gradfuzz): the generator is
deterministic, the oracle flags a wrong gradient, the shrinker keeps the
failure while removing the rest, repro files run on their own, and an
unavailable arch is a clear error."""
import os
import subprocess
import sys
import types

import pytest

from tools.gradfuzz import generator, oracle, runner, shrink


def _load(tmp_path, spec):
    return runner.ModuleLoader(str(tmp_path)).load(spec.source(), f"k{spec.seed}")


def _seed_with(text):
    return next(s for s in range(1000) if text in generator.generate(s).source())


def test_same_seed_gives_same_kernel_and_seeds_differ():
    assert generator.generate(7).source() == generator.generate(7).source()
    sources = {generator.generate(s).source() for s in range(20)}
    assert len(sources) == 20
    for s in range(20):
        compile(generator.generate(s).source(), f"seed{s}", "exec")


class _WrongGradient:
    """A kernel whose .grad adds 0.25 to x.grad[0] after the true gradient."""

    def __init__(self, kernel, x):
        self.kernel, self.x = kernel, x

    def __call__(self, *args):
        return self.kernel(*args)

    def grad(self, *args):
        self.kernel.grad(*args)
        self.x.grad[0] = self.x.grad[0] + 0.25


def test_oracle_passes_a_generated_kernel_and_flags_a_wrong_gradient(tmp_path):
    seed = _seed_with("x[i]")
    module = _load(tmp_path, generator.generate(seed))
    assert oracle.check_module(module, seed)[0] == "ok"

    def build(fp):
        made = module.build(fp)
        made["kernel"] = _WrongGradient(made["kernel"], made["x"])
        return made

    names = ("N", "M", "W", "TS", "DATA", "OP_CLASSES")
    broken = types.SimpleNamespace(build=build, **{n: getattr(module, n) for n in names})
    status, details = oracle.check_module(broken, seed)
    assert status == "mismatch"
    assert {"fd", "tape"} <= set(oracle.failure_key(status, details))


def test_shrinker_keeps_the_failure_and_removes_the_rest():
    seed = next(s for s in range(1000)
                if "qd.sin(" in generator.generate(s).source()
                and len(generator.generate(s).all_stmts()) >= 6)
    spec = generator.generate(seed)

    def still_fails(candidate):
        body = candidate.source().split("def kern", 1)[1]
        return "qd.sin(" in body

    small = shrink.shrink(spec, still_fails)
    assert still_fails(small)
    assert len(small.all_stmts()) < len(spec.all_stmts())
    assert len(small.all_stmts()) <= 2   # a loop around one update, or one statement
    compile(small.source(), "shrunk", "exec")


def test_repro_file_runs_on_its_own(tmp_path):
    spec = generator.generate(3)
    path = runner.write_repro(str(tmp_path), spec, "cpu", "ok", "")
    with open(path) as f:
        source = f.read()
    assert "tools.gradfuzz" not in source and "from tools" not in source
    done = subprocess.run([sys.executable, path], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ok")


@pytest.mark.parametrize("arch", ["vulkan", "cuda"])
def test_unavailable_arch_is_a_clear_error(arch, capsys):
    from quadrants.lang import runtime  # pylint: disable=import-outside-toplevel
    if runtime.arch_unavailable_reason(getattr(runtime, arch)) is None:
        pytest.skip(f"{arch} is available here, so there is no error to see")
    assert runner.main(["--arch", arch, "--count", "1"]) == 2
    err = capsys.readouterr().err
    assert f"cannot run on arch '{arch}'" in err and "not available" in err


def test_arch_passes_through_to_qd_init(tmp_path):
    from quadrants.lang import runtime  # pylint: disable=import-outside-toplevel
    # An arch that cannot run here (metal never runs off macOS).
    arch = next(a for a in ("amdgpu", "metal")
                if runtime.arch_unavailable_reason(getattr(runtime, a)) is not None)
    module = _load(tmp_path, generator.generate(0))
    status, details = oracle.check_module(module, 0, arch=arch)
    assert status == "error" and f"arch {arch} is not available" in details


def test_progress_lines_count_kernels_as_they_finish(tmp_path):
    lines = []
    results, summary = runner.run(range(7000, 7004), workers=1, threads=1,
                                  out=str(tmp_path), log=lines.append, progress_every=2)
    progress = [line for line in lines if "so far" in line]
    assert [line.split()[1] for line in progress] == ["2", "4"]
    assert len(results) == 4 and "4 kernels on cpu" in summary


def test_an_emptied_branch_still_compiles():
    # The shrinker removes statements from branches; an if whose then-branch
    # it emptied must still print as valid Python (a worker crashed on one).
    def plain_ifs(spec):
        return [s for s in spec.all_stmts() if isinstance(s, generator.If) and not s.jump]

    spec = next(generator.generate(s) for s in range(1000) if plain_ifs(generator.generate(s)))
    emptied = 0
    for stmt in spec.all_stmts():
        if isinstance(stmt, generator.If) and not stmt.jump:
            stmt.then.clear()
            emptied += 1
    assert emptied
    compile(spec.source(), "emptied", "exec")


def test_checkpoint_mode_segments_loops_and_flags_a_wrong_segmented_gradient(tmp_path,
                                                                              monkeypatch):
    seed = _seed_with("for ")
    segmented, module = None, None
    for candidate in range(seed, seed + 50):
        module = _load(tmp_path, generator.generate(candidate))
        stats = {}
        assert oracle.check_module(module, candidate, checks=("budget",), stats=stats)[0] == "ok"
        if stats.get("segmented"):
            segmented = candidate
            break
    assert segmented is not None, "no generated kernel ran in segments"

    real = oracle.budget_grad

    def off_by_a_bit(*args):
        grad, ran = real(*args)
        grad = {name: g + 1e-6 * (1 + abs(g)) for name, g in grad.items()}
        return grad, ran

    monkeypatch.setattr(oracle, "budget_grad", off_by_a_bit)
    status, details = oracle.check_module(module, segmented, checks=("budget",))
    assert status == "mismatch"
    assert "budget" in oracle.failure_key(status, details)
