"""What a @qd.kernel(graph=True) adds to a kernel: its split at
qd.graph.do_while loops and checkpoint stages (quadrants.lang.graph), the
launch that runs the parts, resume(from_checkpoint=), the gradient that
replays a launch part by part, and upstream's names for the plan.

The launch modes live here too: a kernel launches as itself (PRIMAL), as
its gradient kernel (REVERSE) or in forward mode (FORWARD)."""
import ast
import numbers
import types as types_module

from quadrants.lang import checkpoint as checkpoint_module
from quadrants.lang import field as field_module
from quadrants.lang import graph as graph_module
from quadrants.lang import runtime, session
from quadrants.lang import tensor as tensor_module
from quadrants.lang.exception import QuadrantsGradientError, QuadrantsSyntaxError
from quadrants.lang.ndarray import Ndarray

# HVP: forward mode over the gradient kernel (qd.ad.hvp).
PRIMAL, REVERSE, FORWARD, HVP = "primal", "reverse", "forward", "hvp"


class GraphKernelMixin:
    """Kernel's graph plan; the Kernel sets _plan in _prepare when it has
    one (see Kernel._prepare)."""

    def _syntax_error(self, node, message):
        src = self._source
        return QuadrantsSyntaxError(f"{src.file}:{src.line_offset + node.lineno}: in kernel "
                                    f"'{self.name}': {message}")

    def _graph_plan(self, source):
        """The kernel split at its qd.graph.do_while loops and, in a
        checkpoints kernel, at its stages."""
        uses_loops = graph_module.uses_do_while(source.node)
        first = next((n for n in ast.walk(source.node) if graph_module.is_do_while(n)),
                     source.node)
        if not self.graph:
            raise self._syntax_error(first, "qd.graph.do_while() requires "
                                     "@qd.kernel(graph=True)")
        if self._return_type is not None:
            what = "qd.graph.do_while()" if uses_loops else "checkpoints=True"
            raise self._syntax_error(first, f"a kernel using {what} cannot return a value; "
                                     f"write results to an ndarray")
        self._stages = graph_module.Stages(source.globals) if self.checkpoints else None
        steps = graph_module.plan(self.name, source.node.body, self._syntax_error,
                                  stages=self._stages, strict=uses_loops)
        self._make_parts(steps)
        return steps

    def _make_parts(self, steps):
        for step in steps:
            if isinstance(step, graph_module.Segment):
                part = type(self)(self.fn)
                part._body = step.statements
                part.graph = self.graph
                part.checkpoints = self.checkpoints
                part.is_pure = self.is_pure
                # The graph kernel is fastcached through its parts: what
                # they observe is the kernel's.
                part.src_ll_cache_observations = self.src_ll_cache_observations
                step.kernel = part
            else:
                self._make_parts(step.body)

    def _run_plan(self, args, kwargs, mode):
        if mode in (FORWARD, HVP):
            raise QuadrantsGradientError(
                f"kernel '{self.name}': forward mode (qd.ad.FwdMode, qd.ad.hvp) of a kernel "
                f"with qd.graph.do_while() or checkpoints is not supported; use kernel.grad")
        if mode == REVERSE:
            return self._plan_grad(args, kwargs)
        arrays = self._array_arguments(args, kwargs)
        if any(getattr(a, "grad", None) is not None for a in arrays):
            self._inputs = (arrays, [a.to_numpy() for a in arrays])
        return self._run_stages(args, kwargs, mode, 0)

    def _array_arguments(self, args, kwargs):
        bound = self._signature.bind(*args, **kwargs)
        out = []
        for value in bound.arguments.values():
            value = tensor_module.unwrap(value)
            if isinstance(value, Ndarray) and all(value is not o for o in out):
                out.append(value)
        return out

    def _plan_grad(self, args, kwargs):
        """kernel.grad of a kernel split into parts: the last launch is
        replayed from its saved inputs over the finer plan, the state of its
        ndarray arguments saved after each part, and the parts' gradient
        kernels run in reverse order, each on the state right after its
        part (as a kernel's gradient runs after the kernel)."""
        arrays = self._array_arguments(args, kwargs)
        if self._inputs is None or len(self._inputs[0]) != len(arrays) or \
                any(a is not b for a, b in zip(self._inputs[0], arrays)):
            raise QuadrantsGradientError(
                f"kernel '{self.name}': kernel.grad of a kernel with qd.graph.do_while() "
                f"replays its last launch with the same ndarrays, one of which has a .grad; "
                f"call the kernel with these arguments (and create the .grad first)")
        # The forward launch compiled every part: a field, or an ndarray
        # reached through a template argument, is state the replay could
        # not put back.
        for part in self._parts(self._plan):
            if part._outside_state:
                raise QuadrantsGradientError(
                    f"kernel '{self.name}': kernel.grad of a kernel with qd.graph.do_while() "
                    f"replays it on the state of its ndarray arguments, but it uses "
                    f"'{part._outside_state[0]}', which is not one; pass that state as an "
                    f"ndarray argument")
        final = [a.to_numpy() for a in arrays]
        history = []

        def record(segment):
            segment.kernel._launch(args, kwargs, PRIMAL)
            history.append((segment, [a.to_numpy() for a in arrays]))

        try:
            for array, value in zip(arrays, self._inputs[1]):
                array.from_numpy(value)
            bound = self._signature.bind(*args, **kwargs)
            bound.apply_defaults()
            graph_module.run(self._replay_plan(), bound.arguments, record, self.name,
                             self._syntax_error, graph_module.RunState(0))
            for segment, state in reversed(history):
                for array, value in zip(arrays, state):
                    array.from_numpy(value)
                segment.kernel._launch(args, kwargs, REVERSE)
        finally:
            for array, value in zip(arrays, final):
                array.from_numpy(value)

    # ---- upstream's names for what the graph plan holds ----------------------
    @property
    def _primal(self):
        """The primal kernel (upstream's wrapper keeps it apart from the
        adjoint; here the kernel is both)."""
        return self

    def _graph_arg_id(self, expr, seen):
        """An id per distinct argument expression: a parameter's position,
        or past the parameters for members (self.flag, params.flag)."""
        label = ast.unparse(expr)
        names = [spec.name for spec in self._specs]
        if isinstance(expr, ast.Name) and expr.id in names:
            return names.index(expr.id)
        if label not in seen:
            seen.append(label)
        return len(names) + seen.index(label)

    @property
    def graph_do_while_levels(self):
        """The do_while loops in source order: each with cond_arg_name (the
        counter as written), parent_id (-1 at the top) and cond_cpp_arg_id."""
        self._prepare()
        levels, seen = [], []

        def walk(steps, parent):
            for step in steps:
                if isinstance(step, graph_module.Loop):
                    levels.append(types_module.SimpleNamespace(
                        cond_arg_name=ast.unparse(step.counter), parent_id=parent,
                        cond_cpp_arg_id=self._graph_arg_id(step.counter, seen)))
                    walk(step.body, len(levels) - 1)
        walk(self._plan or [], -1)
        return levels

    @property
    def graph_do_while_arg(self):
        levels = self.graph_do_while_levels
        return levels[0].cond_arg_name if levels else None

    @property
    def checkpoint_user_labels_by_cp_id(self):
        self._prepare()
        return [s.label for s in self._stages.all] if self._stages is not None else []

    @property
    def checkpoint_yield_on_args(self):
        self._prepare()
        stages = self._stages.all if self._stages is not None else []
        return [None if s.yield_on is None else ast.unparse(s.yield_on) for s in stages]

    @property
    def checkpoint_yield_on_cpp_arg_ids(self):
        self._prepare()
        stages = self._stages.all if self._stages is not None else []
        seen = []
        return [-1 if s.yield_on is None else self._graph_arg_id(s.yield_on, seen)
                for s in stages]

    def _replay_plan(self):
        """The plan with every statement a part of its own: each part's
        gradient then runs on the state right after that part, as the
        gradient of a kernel of its own would."""
        if self._fine_plan is None:
            stages = graph_module.Stages(self._source.globals) if self.checkpoints else None
            steps = graph_module.plan(self.name, self._source.node.body, self._syntax_error,
                                      stages=stages, each=True)
            self._make_parts(steps)
            self._fine_plan = steps
        return self._fine_plan

    @staticmethod
    def _parts(steps):
        def walk(steps):
            for step in steps:
                if isinstance(step, graph_module.Segment):
                    yield step.kernel
                else:
                    yield from walk(step.body)
        return list(walk(steps))

    def _device_plan(self, steps, args, kwargs, bound):
        """The plan as Program.launch_plan takes it, or None when a part or
        a counter cannot be in it."""
        spec = []
        for step in steps:
            if isinstance(step, graph_module.Segment):
                launch = step.kernel._plan_launch(args, kwargs)
                if launch is None:
                    return None
                spec.append(("part", launch[0], launch[1]))
                continue
            counter = graph_module.resolve_array(self.name, step.counter, step.node, bound,
                                                 self._syntax_error)
            body = self._device_plan(step.body, args, kwargs, bound)
            if not isinstance(counter, Ndarray) or body is None:
                return None
            spec.append(("loop", counter._core, body))
        return spec

    def _launch_on_device(self, args, kwargs, bound):
        """Runs the whole plan on the device, its loops with no host check
        per iteration, where the backend can (CUDA conditional graph
        nodes); False, having run nothing, elsewhere."""
        if self._device_plan_refused == runtime.state.generation:
            return False  # this backend, or these parts, cannot
        spec = self._device_plan(self._plan, args, kwargs, bound)
        if spec is None:
            return False  # these arguments cannot be in a plan; others may
        prog = runtime.program()
        if not prog.launch_plan(spec):
            self._device_plan_refused = runtime.state.generation
            return False
        if session.option("debug", False):
            prog.sync()  # debug mode reports a kernel's errors at its call
        return True

    def _run_stages(self, args, kwargs, mode, resume):
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        if mode == PRIMAL and self._stages is None and \
                self._launch_on_device(args, kwargs, bound.arguments):
            return None
        state = graph_module.RunState(resume)
        graph_module.run(self._plan, bound.arguments,
                         lambda segment: segment.kernel._launch(args, kwargs, mode),
                         self.name, self._syntax_error, state)
        if self._stages is None or not any(s.yield_on is not None for s in self._stages.all):
            return None
        return checkpoint_module.GraphStatus(state.yielded, state.label)

    def resume(self, *args, from_checkpoint, **kwargs):
        """Runs a checkpoints kernel from the stage labelled
        `from_checkpoint` (an int or IntEnum member, typically the
        GraphStatus.checkpoint of a yield), skipping the stages before it."""
        if isinstance(from_checkpoint, bool) or not isinstance(from_checkpoint, numbers.Integral):
            raise RuntimeError(f"from_checkpoint= must be an int or IntEnum value matching a "
                               f"`qd.checkpoint(cp_id=...)` label in the kernel (typically "
                               f"`status.checkpoint` from the previous launch's GraphStatus); "
                               f"got {from_checkpoint!r}.")
        field_module.check_placements()
        self._prepare()
        # A gradient replays a launch from its start, not a resumed one.
        self._inputs = None
        stages = self._stages.all if self._stages is not None else []
        if not any(s.yield_on is not None for s in stages):
            raise RuntimeError("`from_checkpoint=` is only valid for kernels that contain at "
                               "least one qd.checkpoint(yield_on=...) block; this kernel has "
                               "none.")
        labels = [s.label for s in stages if s.label is not None]
        target = next((s for s in stages if s.label is not None and
                       s.label == from_checkpoint), None)
        if target is None:
            raise RuntimeError(f"from_checkpoint={from_checkpoint!r} does not match any "
                               f"qd.checkpoint(cp_id=...) in kernel {self.name!r}. Available "
                               f"cp_id labels (source-declaration order): {labels}.")
        return self._run_stages(args, kwargs, PRIMAL, target.index)
