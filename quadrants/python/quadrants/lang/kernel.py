"""@qd.kernel and @qd.func: parsing, specialization, compilation, launch."""
import ast
import dataclasses
import functools
import inspect
import numbers
import sys
import textwrap
import warnings
import weakref

import numpy as np

from quadrants._core import core
from quadrants.lang import (_perf_dispatch, buffer_view, context, ops, python_backend, runtime,
                            session, struct,
                            types)
from quadrants.lang import graph as graph_module
from quadrants.lang.graph_kernel import FORWARD, HVP, PRIMAL, REVERSE, GraphKernelMixin
from quadrants.lang import stream as stream_module
from quadrants.lang import tensor as tensor_module
from quadrants.lang import field as field_module
from quadrants.lang import torch_interop
from quadrants.lang.exception import (ArgumentValueError, QuadrantsArgumentError,
                                      QuadrantsArgumentTypeError,
                                      QuadrantsCompilationError,
                                      QuadrantsGlobalDataAccessError, QuadrantsGradientError,
                                      QuadrantsRuntimeError, QuadrantsSyntaxError,
                                      QuadrantsTypeError, argument_error)
from quadrants.lang.data_oriented import BoundFunc, BoundKernel, is_data_oriented
from quadrants.lang.expr import Composite, Expr, GlobalRef, NdarrayArg, Var
from quadrants.lang import matrix as matrix_module
from quadrants.lang.matrix import MatrixType
from quadrants.lang.struct import StructType
from quadrants.lang.field import Field
from quadrants.lang.hidden_params import HiddenParams, Origins
from quadrants.lang.kernel_returns import ReturnType
from quadrants.lang.ndarray import Ndarray
from quadrants.lang.transformer import FunctionCompiler
from quadrants.lang._fast_caching import kernel_cache
from quadrants.lang._kernel_types import SrcLlCacheObservations
from quadrants.lang.transformer import calls
from quadrants.lang.transformer.shared_locals import shared_locals


class FunctionSource:
    """The source of a kernel or func, parsed at its first use (a kernel
    the fastcache loads never needs its AST)."""

    def __init__(self, fn):
        try:
            lines, start = inspect.getsourcelines(fn)
            self.file = inspect.getsourcefile(fn) or "<unknown>"
        except (OSError, TypeError) as e:
            raise QuadrantsSyntaxError(f"cannot read the source of {fn.__name__}: {e}") \
                from None
        self.lines = lines
        self.line_offset = start - 1
        self.name = fn.__name__
        # Names resolve at each compile, so a kernel defined once sees the
        # fields of the current session after qd.init() / qd.reset().
        self.globals = _LiveNames(fn)

    def __getattr__(self, name):
        # node, indent and assigned: made by the first read of one of them.
        if name not in ("node", "indent", "assigned", "assigned_once"):
            raise AttributeError(name)
        tree = ast.parse(textwrap.dedent("".join(self.lines)))
        self.node = tree.body[0]
        # The columns textwrap.dedent removed (node columns count from there).
        self.indent = min(len(line) - len(line.lstrip()) for line in self.lines if line.strip())
        self.assigned = _assigned_names(self.node)
        self.assigned_once = _single_assignments(self.node)
        return getattr(self, name)

    @property
    def text(self):
        return "".join(self.lines)

    @property
    def def_line(self):
        """The file's line number of the `def` (after any decorators)."""
        if "node" in self.__dict__:
            return self.line_offset + self.node.lineno
        for k, line in enumerate(self.lines):
            if line.lstrip().startswith(("def ", "async def ")):
                return self.line_offset + k + 1
        return self.line_offset + self.node.lineno


def _assigned_names(function_node):
    """Names the function body assigns (parameters among them become locals)."""
    names = set()
    for node in ast.walk(function_node):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = [node.target]
        for target in targets:
            # Names stored to, and the variables whose components are
            # (v in v[0] = ...), not the names an index reads (i in a[i] = ...).
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name) and isinstance(leaf.ctx, ast.Store):
                    names.add(leaf.id)
                elif isinstance(leaf, (ast.Subscript, ast.Attribute)) and \
                        isinstance(leaf.ctx, ast.Store):
                    base = leaf.value
                    while isinstance(base, (ast.Subscript, ast.Attribute)):
                        base = base.value
                    if isinstance(base, ast.Name):
                        names.add(base.id)
    return names


def _single_assignments(function_node):
    """Names the body binds with exactly one plain `name = value`, stores to
    nowhere else and passes to no call (atomics and qd.ref parameters
    write their argument): bound to a Python number, such a name has one
    value directives may use (N = 16; qd.loop_config(block_dim=N))."""
    plain, plain_targets, other = {}, set(), set()
    for node in ast.walk(function_node):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            plain[name] = plain.get(name, 0) + 1
            plain_targets.add(id(node.targets[0]))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and \
                id(node) not in plain_targets:
            other.add(node.id)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and \
                isinstance(node.target, ast.Name):
            other.add(node.target.id)
        elif isinstance(node, ast.Call):
            other.update(a.id for a in node.args if isinstance(a, ast.Name))
    return {name for name, count in plain.items() if count == 1 and name not in other}


class _LiveNames:
    """A function's closure variables, then its module globals, read live."""

    def __init__(self, fn):
        self._globals = fn.__globals__
        self._cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))

    def __contains__(self, name):
        if name in self._cells:
            try:
                self._cells[name].cell_contents
                return True
            except ValueError:
                return False
        return name in self._globals

    def __getitem__(self, name):
        if name in self._cells:
            return self._cells[name].cell_contents
        return self._globals[name]


class CompileContext:
    def __init__(self, name, kind, kernel_ir, program):
        self.name = name
        self.kind = kind
        self.kernel_ir = kernel_ir
        self.program = program
        self.builder = core.Builder(kernel_ir, program)
        self.region = (None, 0)   # where new local variables are declared
        self.in_parallel = False
        self.inline_depth = 0
        self.graph = False  # compiling a @qd.kernel(graph=True)
        self.checkpoints = False  # ... with checkpoints=True
        # qd.graph.parallel_context() regions met, and sections of the
        # current one (their statements' tags, see set_graph_section).
        self.graph_regions = 0
        self.graph_sections = 0
        # The region of the kernel's qd.stream_parallel() blocks, once one
        # is met, and the blocks so far (its sections).
        self.stream_region = None
        self.stream_sections = 0
        # Fields, and ndarrays reached through template arguments, the
        # kernel uses: state outside its ndarray arguments, by name.
        self.outside_state = []
        self.pure = False   # compiling a @qd.kernel(fastcache=True): purity.py
        # Run-time if/while/for bodies around the func being inlined, through
        # every caller up to the kernel (qd.func(requires_top_level=True)).
        self.outer_dynamic_depth = 0
        self.origins = Origins()  # paths from template arguments to objects
        self.hidden = None        # a kernel's HiddenParams
        # "name (file:line)" of the kernel and of each qd.func being inlined
        # into it, outermost first (debug-mode messages show them).
        self.frames = [name]
        # (FunctionSource, call node) of each call inlining a qd.func, from
        # the kernel in: errors quote these lines.
        self.call_sites = []
        # The FunctionSource of every body compiled (the kernel and each
        # func): what a fastcache entry checks is unchanged.
        self.sources = []
        # Places qd.stop_grad(field) named in the task being built: loads
        # of them carry no gradient (see context.load).
        self.stopped_places = set()


# ---- parameter kinds -----------------------------------------------------------

class _ScalarParam:
    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


class _NdarrayParam:
    def __init__(self, name, annotation):
        self.name, self.annotation = name, annotation


class _TemplateParam:
    def __init__(self, name):
        self.name = name


class _TensorParam(_TemplateParam):
    """A qd.Tensor parameter: bound like a template; an ndarray bound to it
    becomes a hidden ndarray parameter (tensor_module.kernel_key)."""


class _CompositeParam:
    """A vector, matrix or struct parameter: passed as its scalar leaves."""

    def __init__(self, name, ctype):
        self.name, self.ctype = name, ctype

    def flat_dtypes(self):
        return self.ctype._flat_dtypes()


class _BufferViewParam:
    """A qd.BufferView parameter: its ndarray, offset and size (i32)."""

    def __init__(self, name, annotation):
        self.name = name
        self.dtype = getattr(annotation, "dtype", None)  # None: any element type


def _view_signature(kernel_name, spec, arg):
    """The element type of BufferView argument `arg` (checked)."""
    if not isinstance(arg, buffer_view.BufferView):
        raise QuadrantsArgumentTypeError(f"kernel '{kernel_name}': argument '{spec.name}' "
                                         f"expects a qd.BufferView (ndarray[a:b] or "
                                         f"qd.BufferView(ndarray, offset, size)), got "
                                         f"{type(arg).__name__}")
    array = arg.get_ndarray()
    array._check_alive()
    if spec.dtype is not None and spec.dtype != array.element_type:
        raise QuadrantsTypeError(f"kernel '{kernel_name}' argument '{spec.name}' expects a "
                                 f"BufferView of {spec.dtype}, got one of {array.element_type}")
    return array.element_type


def _ir_slots(spec):
    """How many IR parameters a parameter spec takes."""
    if isinstance(spec, _TemplateParam):
        return 0
    if isinstance(spec, _CompositeParam):
        return len(spec.flat_dtypes())
    if isinstance(spec, _BufferViewParam):
        return 3
    return 1


def is_method(fn):
    """Whether fn is defined in a class body (its qualified name's last
    scope is a class, not a function's <locals>)."""
    scopes = fn.__qualname__.split(".")
    return len(scopes) > 1 and scopes[-2] != "<locals>"


def resolved_signature(fn, what):
    """inspect.signature(fn) with string annotations (from `from __future__
    import annotations`, or written as strings) evaluated in fn's globals;
    one that does not evaluate is a QuadrantsSyntaxError naming it."""
    try:
        return inspect.signature(fn, eval_str=True)
    except Exception as e:  # pylint: disable=broad-except
        names = [f"'{p.name}': {p.annotation!r}" for p in inspect.signature(fn).parameters.values()
                 if isinstance(p.annotation, str)]
        raise QuadrantsSyntaxError(f"{what} '{fn.__name__}': invalid type annotation "
                                   f"{', '.join(names)} ({type(e).__name__}: {e}); "
                                   f"annotate with Quadrants types (qd.f32, qd.template(), "
                                   f"qd.types.ndarray(), ...)") from None


def _param_specs(fn, source):
    specs = []
    method = is_method(fn)
    for position, p in enumerate(resolved_signature(fn, "kernel").parameters.values()):
        ann = p.annotation
        where = f"{source.file}:{source.def_line}"
        if position == 0 and method and ann is inspect.Parameter.empty:
            specs.append(_TemplateParam(p.name))  # self: its members are compile-time
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise QuadrantsSyntaxError(f"{where}: kernel '{fn.__name__}': *args and "
                                       f"**kwargs parameters are not supported")
        if ann is inspect.Parameter.empty:
            raise QuadrantsSyntaxError(f"{where}: kernel '{fn.__name__}': parameter "
                                       f"'{p.name}' needs a type annotation (e.g. qd.f32, "
                                       f"qd.types.ndarray(), qd.template())")
        if _is_template_annotation(ann):  # qd.template() or qd.Template, as upstream
            specs.append(_TemplateParam(p.name))
        elif tensor_module.is_annotation(ann):
            specs.append(_TensorParam(p.name))
        elif isinstance(ann, types.NdarrayType):
            specs.append(_NdarrayParam(p.name, ann))
        elif buffer_view.is_annotation(ann):
            specs.append(_BufferViewParam(p.name, ann))
        elif isinstance(ann, (MatrixType, StructType)):
            specs.append(_CompositeParam(p.name, ann))
        elif isinstance(ann, type) and dataclasses.is_dataclass(ann):
            # A Python dataclass of fields, ndarrays, tensors and scalars:
            # its members are compile-time, as a template's are.
            specs.append(_TemplateParam(p.name))
        else:
            try:
                dtype = ann if isinstance(ann, types.DataType) else types.normalize(ann)
            except QuadrantsTypeError:
                raise QuadrantsTypeError(f"{where}: kernel '{fn.__name__}': parameter "
                                         f"'{p.name}' has an unsupported annotation "
                                         f"{ann!r}") from None
            specs.append(_ScalarParam(p.name, dtype))
    return specs


def _refuse_float_template(kernel_name, spec, arg):
    """raise_on_templated_floats=True: a float template argument (or a float
    attribute of a data-oriented one) would compile a kernel per value."""
    floats = [spec.name] if type(arg) is float else []
    if not floats and is_data_oriented(arg):
        floats = [f"{spec.name}.{k}" for k, v in vars(arg).items() if type(v) is float]
    if floats:
        raise ArgumentValueError(f"kernel '{kernel_name}': the template argument "
                                 f"{', '.join(floats)} is a Python float, baked into the kernel "
                                 f"at compile time; raise_on_templated_floats=True refuses "
                                 f"that: pass it as a scalar (qd.f32) parameter instead")


def _template_key(value):
    if isinstance(value, (Field, Ndarray)):
        return ("obj", id(value))
    try:
        hash(value)
        return ("val", type(value), value)
    except TypeError:
        return ("obj", id(value))


# Which variant of a kernel a launch runs: the kernel itself, its reverse-mode
# gradient, or its forward-mode (tangent) version.


class Kernel(GraphKernelMixin):
    """A @qd.kernel: compiled per distinct template / dtype / ndim signature."""

    _qd_kernel = True

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__
        self._source = None
        self._specs = None
        self._signature = resolved_signature(fn, "kernel")
        self._cache = {}
        self._cache_generation = -1
        self._return_type = None
        # The last plain launch, replayed when called again with the same
        # arguments (see _replay).
        self._last = None
        self.graph = False  # set by @qd.kernel(graph=True)
        self.is_pure = False  # set by @qd.kernel(fastcache=True) or qd.pure
        self.checkpoints = False  # set by @qd.kernel(graph=True, checkpoints=True)
        self.src_ll_cache_observations = SrcLlCacheObservations()
        self._last_compiled_kernel_data = None  # the last compiled kernel
        self._stages = None  # a checkpoints kernel's graph_module.Stages
        self._outside_state = []  # a compiled variant's CompileContext.outside_state
        self._fine_plan = None  # the plan a gradient replays (_replay_plan)
        # A do_while kernel's ndarray arguments before its last launch, for
        # its gradient: (the arrays, their values).
        self._inputs = None
        # A part of a kernel split at its qd.graph.do_while loops compiles
        # these statements instead of the whole body.
        self._body = None
        self._plan = None
        # The runtime generation in which the device refused to run the
        # plan (GraphKernelMixin._launch_on_device): the host runs it.
        self._device_plan_refused = None
        functools.update_wrapper(self, fn)

    def __get__(self, instance, owner):
        if instance is None:
            return self
        return BoundKernel(self, instance)

    def _prepare(self):
        if self._specs is None:
            source = FunctionSource(self.fn)
            where = f"{source.file}:{source.def_line}"
            self._return_type = ReturnType.of(self.fn, f"{where}: kernel '{self.name}'")
            specs = _param_specs(self.fn, source)
            self._source = source
            if self._body is None and (self.checkpoints or ("do_while" in source.text and
                                       graph_module.uses_do_while(source.node))):
                self._plan = self._graph_plan(source)
            self._specs = specs  # last: another thread takes it as "prepared"

    def _bind(self, args, kwargs):
        # Kernels see the field or ndarray inside a qd.Tensor.
        unwrap = tensor_module.unwrap
        args = [unwrap(a) for a in args]
        if kwargs:
            kwargs = {k: unwrap(v) for k, v in kwargs.items()}
        if kwargs or len(args) < len(self._specs):
            try:
                bound = self._signature.bind(*args, **kwargs)
            except TypeError as e:
                raise argument_error(f"kernel '{self.name}'", e) from None
            bound.apply_defaults()
            return self._tensor_arguments(list(bound.args))
        if len(args) != len(self._specs):
            names = ", ".join(s.name for s in self._specs)
            raise QuadrantsArgumentError(f"kernel '{self.name}': Too many arguments: it takes "
                                         f"{len(self._specs)} ({names}), got {len(args)}")
        return self._tensor_arguments(args)

    def _tensor_arguments(self, args):
        """Torch tensors bound to ndarray parameters, as kernel arrays."""
        if "torch" not in sys.modules:
            return args  # no tensor can exist
        return [torch_interop.kernel_array(self.name, spec.name, arg)
                if isinstance(spec, _NdarrayParam) and torch_interop.is_tensor(arg) else arg
                for spec, arg in zip(self._specs, args)]

    def _signature_key(self, args):
        key = []
        for position, (spec, arg) in enumerate(zip(self._specs, args)):
            if isinstance(spec, _TensorParam):
                key.append(tensor_module.kernel_key(self.name, spec.name, arg))
            elif isinstance(spec, _TemplateParam):
                if session.option("raise_on_templated_floats", False):
                    _refuse_float_template(self.name, spec, arg)
                key.append(_template_key(arg))
            elif isinstance(spec, _NdarrayParam):
                dtype, ndim = _array_signature(self.name, spec, arg)
                layout = arg._qd_layout if isinstance(arg, Ndarray) else None
                key.append((dtype, ndim, layout))
            elif isinstance(spec, _CompositeParam):
                key.append(spec.ctype.dtype if isinstance(spec.ctype, MatrixType) else None)
            elif isinstance(spec, _BufferViewParam):
                key.append(_view_signature(self.name, spec, arg))
            else:
                _check_scalar(self.name, spec, arg, position)
        return tuple(key)

    def _compiled(self, args, mode=PRIMAL):
        if self._cache_generation != runtime.state.generation:
            self._cache = {}
            self._cache_generation = runtime.state.generation
        key = (mode, self._signature_key(args))
        if mode in (FORWARD, HVP):
            # Tangent kernels write the duals placed when they compile:
            # duals placed later (qd.ad.hvp places them) recompile them.
            key += (field_module.placement_generation(),)
        compiled = self._cache.get(key)
        if compiled is None or not compiled[2].up_to_date(args):
            with runtime.compile_lock:  # checked again: another thread may have compiled it
                compiled = self._cache.get(key)
                if compiled is None or not compiled[2].up_to_date(args):
                    compiled = self._compile(args, mode)
                    self._cache[key] = compiled
        return compiled

    def _compile(self, args, mode):
        """(compiled kernel, its IR or None when loaded by the fastcache,
        HiddenParams) for these arguments."""
        fast_key = None
        if mode == PRIMAL and kernel_cache.enabled(self):
            if self._body is None:  # a graph kernel's parts share its observations
                self.src_ll_cache_observations = SrcLlCacheObservations()
            fast_key = kernel_cache.cache_key(self, args)
            loaded = fast_key and kernel_cache.load(self, fast_key, args)
            if loaded:
                self._last_compiled_kernel_data = loaded[0]
                return loaded[0], None, loaded[1]
        elif not self.is_pure and session.option("print_non_pure", False):
            print(f"[NOT_PURE] Debug information: not pure: {self.name}")
        kernel_ir, hidden, ctx = self._build_ir(args)
        if mode in (REVERSE, HVP) and hidden.reads_grad:
            # The first sentence is upstream's wording.
            raise QuadrantsGradientError(
                f"Cannot automatically differentiate through a grad tensor: "
                f"kernel '{self.name}' reads {hidden.reads_grad}, so kernel.grad "
                f"would need its derivative; compute with the gradient in a "
                f"kernel that is not differentiated")
        prog = runtime.program()
        compile_fn = {PRIMAL: prog.compile, REVERSE: prog.compile_grad, HVP: prog.compile_hvp,
                      FORWARD: prog.compile_forward}[mode]
        compiled = compile_fn(kernel_ir)
        for message in prog.compile_warnings:
            warnings.warn(message, stacklevel=5)
        if fast_key:
            kernel_cache.store(self, fast_key, compiled, hidden, ctx)
        self._last_compiled_kernel_data = compiled
        return compiled, kernel_ir, hidden

    @staticmethod
    def _declare_view(kernel_ir, ir_index, spec, view):
        """The IR parameters of a BufferView: its 1-D ndarray, then the
        offset and the size."""
        array = view.get_ndarray()
        dtype = array.element_type
        if isinstance(dtype, (MatrixType, StructType)):
            scalar, elem = _element_layout(dtype)
            kernel_ir.add_ndarray_param(spec.name, scalar.name, 1 + len(elem))
            arg = NdarrayArg(ir_index, scalar, 1, spec.name, element=dtype, value=array)
        else:
            kernel_ir.add_ndarray_param(spec.name, dtype.name, 1)
            arg = NdarrayArg(ir_index, dtype, 1, spec.name, value=array)
        kernel_ir.add_scalar_param(f"{spec.name}.offset", "i32")
        kernel_ir.add_scalar_param(f"{spec.name}.size", "i32")
        return arg

    def _build_ir(self, args):
        prog = runtime.program()
        src = self._source
        kernel_ir = core.Kernel(self.name, src.file, src.line_offset + 1)
        scope = {}
        views = {}  # BufferView parameters: their ndarray parameters
        ir_index = 0
        origins = Origins()
        for position, (spec, arg) in enumerate(zip(self._specs, args)):
            if isinstance(spec, _TemplateParam):
                scope[spec.name] = arg
                origins.note_argument(arg, position)
            elif isinstance(spec, _NdarrayParam):
                dtype, ndim = _array_signature(self.name, spec, arg)
                known = dict(layout=arg._qd_layout if isinstance(arg, Ndarray) else None,
                             value=arg if isinstance(arg, Ndarray) else None,
                             path=(position,), clamp=spec.annotation.boundary == "clamp")
                if isinstance(dtype, (MatrixType, StructType)):
                    scalar, elem = _element_layout(dtype)
                    kernel_ir.add_ndarray_param(spec.name, scalar.name, ndim + len(elem))
                    scope[spec.name] = NdarrayArg(ir_index, scalar, ndim, spec.name,
                                                  element=dtype, **known)
                else:
                    kernel_ir.add_ndarray_param(spec.name, dtype.name, ndim)
                    scope[spec.name] = NdarrayArg(ir_index, dtype, ndim, spec.name, **known)
                ir_index += 1
            elif isinstance(spec, _CompositeParam):
                for k, dt in enumerate(spec.flat_dtypes()):
                    kernel_ir.add_scalar_param(f"{spec.name}[{k}]", dt.name)
                    ir_index += 1
            elif isinstance(spec, _BufferViewParam):
                views[spec.name] = self._declare_view(kernel_ir, ir_index, spec, arg)
                ir_index += 3
            else:
                kernel_ir.add_scalar_param(spec.name, spec.dtype.name)
                ir_index += 1
        ctx = CompileContext(self.name, "kernel", kernel_ir, prog)
        ctx.graph = self.graph
        ctx.checkpoints = self.checkpoints
        ctx.pure = self.is_pure
        ctx.frames = [f"{self.name} ({src.file}:{src.def_line})"]
        ctx.origins = origins
        ctx.hidden = HiddenParams(kernel_ir, self._return_type)
        context.push(ctx)
        try:
            compiler = FunctionCompiler(ctx, src, scope, src.globals, is_kernel=True)
            compiler.shared_locals = shared_locals(src.node, src.globals)
            # Names bound to the objects passed in: assigning them would only
            # rebind a name, never change the argument (scalars are values a
            # kernel may update, as Taichi-era programs do).
            compiler.immutable = {spec.name for spec in self._specs
                                  if isinstance(spec, (_TemplateParam, _NdarrayParam,
                                                       _BufferViewParam))}
            if self._return_type is not None:
                compiler.return_type = self._return_type
                compiler.on_return = functools.partial(_store_return, ctx)
            index = 0
            for spec in self._specs:
                if isinstance(spec, _ScalarParam):
                    value = Expr(ctx.builder.arg_load(index), spec.dtype)
                    if spec.name in src.assigned:
                        compiler.declare(spec.name, value)  # the body reassigns it
                    else:
                        scope[spec.name] = value
                elif isinstance(spec, _BufferViewParam):
                    scope[spec.name] = buffer_view.KernelView(
                        views[spec.name], Expr(ctx.builder.arg_load(index + 1), types.i32),
                        Expr(ctx.builder.arg_load(index + 2), types.i32))
                elif isinstance(spec, _CompositeParam):
                    leaves = [Expr(ctx.builder.arg_load(index + k), dt)
                              for k, dt in enumerate(spec.flat_dtypes())]
                    value = spec.ctype._from_flat(leaves)
                    if spec.name in src.assigned:
                        compiler.declare(spec.name, value)
                    else:
                        scope[spec.name] = value
                index += _ir_slots(spec)
            compiler.template_params = {spec.name: scope[spec.name] for spec in self._specs
                                        if isinstance(spec, _TemplateParam)}
            compiler.compile_body(src.node.body if self._body is None else self._body)
            if self._return_type is not None and not compiler.returned:
                raise QuadrantsSyntaxError(
                    f"{src.file}:{src.def_line}: kernel '{self.name}': "
                    f"Kernel has a return type but does not have a return statement")
        finally:
            context.pop()
        self._outside_state = self._outside_state or ctx.outside_state
        return kernel_ir, ctx.hidden, ctx

    def __call__(self, *args, **kwargs):
        if session.state.interpreted:  # qd.python (python_backend)
            return self.fn(*args, **kwargs)
        if context.current() is not None:
            raise QuadrantsSyntaxError(f"kernel '{self.name}' cannot be called from kernel "
                                       f"code; make it a @qd.func")
        scopes = runtime.state.scopes()
        stream = kwargs.pop("qd_stream", None) if kwargs else None
        if stream is not None and stream_module.handle_of(stream) != 0:
            return self._launch_on_stream(args, kwargs, stream, scopes)
        # Inside qd.ad.FwdMode kernels also propagate tangents into .dual.
        mode = FORWARD if scopes.fwd_mode is not None else PRIMAL
        result = self._launch(args, kwargs, mode, tangents=scopes.fwd_mode)
        if scopes.tape is not None and scopes.grad_replaced_depth == 0:
            scopes.tape.record(self, args, kwargs)
        return result

    def _launch_on_stream(self, args, kwargs, stream, scopes):
        """kernel(..., qd_stream=stream) on a backend with streams: the
        kernel's tasks as a graph replayed on that stream."""
        if self.graph:
            raise QuadrantsRuntimeError(f"kernel '{self.name}': qd_stream= is not compatible "
                                        f"with graph=True kernels; launch it without qd_stream")
        if scopes.tape is not None:
            raise QuadrantsRuntimeError(f"kernel '{self.name}': qd_stream= is not compatible "
                                        f"with autograd Tape; launch it without qd_stream "
                                        f"inside the Tape")
        if scopes.fwd_mode is not None:
            raise QuadrantsRuntimeError(f"kernel '{self.name}': qd_stream= is not compatible "
                                        f"with autodiff (qd.ad.FwdMode)")
        field_module.check_placements()
        self._prepare()
        launch = None if self._plan is not None else self._plan_launch(args, kwargs)
        prog = runtime.program()
        if launch is None or not prog.launch_plan([("part", launch[0], launch[1])],
                                                  stream.handle):
            raise QuadrantsRuntimeError(
                f"kernel '{self.name}' cannot run on a qd_stream: it returns a value, uses "
                f"qd.graph.do_while, sizes adstacks, prints, or takes host (numpy) arrays or "
                f"torch tensors; launch it without qd_stream")
        if session.option("debug", False):
            stream.synchronize()  # debug mode reports a kernel's errors at its call
        return None

    def _replay(self, args):
        """Launches the last plain launch again when `args` are the same
        qd.ndarrays and fields (by identity) and Python scalars: a simulation
        loop's common call, which then skips binding, the signature and
        argument checks. Its kernel has no hidden parameters and returns
        nothing, so nothing else can differ."""
        last = self._last
        if last is None or last[0] != runtime.state.generation or len(args) != len(last[1]):
            return False
        for arg, seen in zip(args, last[1]):
            if type(seen) is weakref.ref:
                if seen() is not arg:
                    return False
            # Floats by identity: -0.0 == 0.0, yet the kernel sees the sign.
            elif arg is not seen and (type(arg) is not type(seen) or type(arg) is float or
                                      arg != seen):
                return False
        # Arrays are taken from this call's arguments: the memory is kept
        # alive by them, not by the remembered launch.
        launch_args = [tensor_module.unwrap(args[x])._core if index else x
                       for index, x in last[3]]
        prog = runtime.program()
        prog.launch(last[2], launch_args, last[4])
        if session.option("debug", False):
            prog.sync()  # debug mode reports a kernel's errors at its call
        return True

    def _as_graph(self, compiled):
        """Whether a launch of `compiled` replays a graph (where the backend
        has graphs): graph=True kernels, and kernels with
        qd.stream_parallel() blocks, whose blocks become its branches (unless
        it sizes adstacks, which a replay cannot)."""
        return self.graph or (compiled.has_graph_sections and not compiled.has_adstacks)

    def _remember(self, args, compiled, hidden, launch_args):
        seen = []
        for arg in args:
            if isinstance(arg, (Ndarray, Field, tensor_module.Tensor)):
                seen.append(weakref.ref(arg))
            elif type(arg) in (int, float, bool):
                seen.append(arg)
            else:
                self._last = None
                return
        if hidden.implicit or hidden.return_type is not None:
            self._last = None
            return
        # Each launch argument: (False, the value), or (True, the index of
        # the argument whose ndarray it is).
        cores = {}
        for i, arg in enumerate(args):
            array = tensor_module.unwrap(arg)
            if isinstance(array, Ndarray):
                cores[id(array._core)] = i
        template = [(True, cores[id(x)]) if id(x) in cores else (False, x) for x in launch_args]
        self._last = (runtime.state.generation, seen, compiled, template,
                      self._as_graph(compiled))

    def _launch(self, args, kwargs, mode, tangents=None):
        """`tangents` (FORWARD and HVP): gives the dual array of each float
        array argument (dual_of(key, shape, numpy dtype))."""
        field_module.check_placements()
        if mode == PRIMAL and not kwargs and self._replay(args):
            return None
        prog = runtime.program()
        self._prepare()
        if self._plan is not None:
            return self._run_plan(args, kwargs, mode)
        given = args
        args = self._bind(args, kwargs)
        compiled, _, hidden = self._compiled(args, mode)
        if self.graph and compiled.has_adstacks:
            raise QuadrantsRuntimeError(
                f"kernel '{self.name}' uses the adstack and cannot be launched with "
                f"graph=True: its adstacks are sized on the host at every launch, which "
                f"a graph replay skips; drop graph=True for this kernel")
        if mode in (REVERSE, HVP):
            self._check_no_aliased_writes(args)
        launch_args, copy_back = _launch_arguments(self._specs, args)
        buffers, arrays = hidden.launch_arguments(self.name, args)
        launch_args += buffers + [a._core if isinstance(a, Ndarray) else a for a in arrays]
        adjoints = []
        if mode in (REVERSE, HVP):
            adjoints = _adjoint_arguments(self.name, self._specs, args, copy_back)
            adjoints += hidden.adjoints(buffers, arrays)
            launch_args += adjoints
        if mode in (FORWARD, HVP):
            launch_args += _dual_arguments(self._specs, args, buffers + list(arrays) + adjoints,
                                           tangents)
        stream = torch_interop.side_stream(args) if "torch" in sys.modules else None
        if stream is not None:
            torch_interop.launches_wait_for(stream)
        prog.launch(compiled, launch_args, self._as_graph(compiled))
        if stream is not None:
            torch_interop.stream_waits_for_launches(stream)
        if session.option("debug", False):
            # Debug mode reports a kernel's failed asserts and bounds checks
            # at its call, as upstream does, not at the next sync.
            prog.sync()
        if mode == PRIMAL and not kwargs and not copy_back:
            self._remember(given, compiled, hidden, launch_args)
        for original, contiguous in copy_back:
            original[...] = contiguous
        if self._return_type is None or mode in (REVERSE, HVP):
            return None
        prog.sync()
        return self._return_type.read(buffers)

    def _plan_launch(self, args, kwargs):
        """(compiled kernel, launch arguments) of a launch of this part of a
        graph kernel, for a plan that runs on the device; None when the
        launch needs more than its arguments (a copy back into a strided
        array, a torch stream to order with, a returned value)."""
        self._prepare()
        args = self._bind(args, kwargs)
        compiled, _, hidden = self._compiled(args, PRIMAL)
        if hidden.return_type is not None or \
                ("torch" in sys.modules and torch_interop.side_stream(args) is not None):
            return None
        launch_args, copy_back = _launch_arguments(self._specs, args)
        if copy_back:
            return None
        buffers, arrays = hidden.launch_arguments(self.name, args)
        launch_args += buffers + [a._core if isinstance(a, Ndarray) else a for a in arrays]
        return compiled, launch_args

    @property
    def grad(self):
        """kernel.grad(*args): runs the reverse-mode gradient kernel with the
        forward call's arguments, accumulating into .grad fields and the
        .grad of ndarray arguments."""
        return _GradLauncher(self)

    def _check_no_aliased_writes(self, args):
        """Two ndarray parameters bound to one array, one of them written,
        break the global data access rule in a way the compiler cannot see
        (it takes parameters to be different memory)."""
        if sum(isinstance(spec, _NdarrayParam) for spec in self._specs) < 2:
            return  # nothing can alias: no lookup on the launch path
        forward, _, _ = self._compiled(args, PRIMAL)
        written = set(forward.written_args)
        arrays, ir_index = [], 0
        for spec, arg in zip(self._specs, args):
            if isinstance(spec, _NdarrayParam):
                arrays.append((ir_index, spec.name, arg))
            ir_index += _ir_slots(spec)
        for a, (ia, name_a, xa) in enumerate(arrays):
            for ib, name_b, xb in arrays[a + 1:]:
                if (ia in written or ib in written) and _same_memory(xa, xb):
                    raise QuadrantsGlobalDataAccessError(
                        f"kernel '{self.name}': ndarray arguments '{name_a}' and "
                        f"'{name_b}' are the same array and the kernel writes it, so its "
                        f"gradient cannot be computed; pass a copy to one of them")

    def check_gradient(self, *args, **kwargs):
        """Compiles the gradient kernel for these arguments without running
        it, raising the errors kernel.grad would (e.g. the global data access
        rule)."""
        self._prepare()
        self._compiled(self._bind(args, kwargs), REVERSE)

    def ir(self, *args):
        """The kernel's IR for these arguments, as text (for inspection)."""
        self._prepare()
        args = self._bind(args, {})
        kernel_ir = self._compiled(args)[1]
        if kernel_ir is None:  # loaded by the fastcache: no IR was built
            kernel_ir = self._build_ir(args)[0]
        return kernel_ir.print()


def _store_return(ctx, leaves):
    """Stores a kernel's returned leaves into its return buffers."""
    order, slots = ctx.hidden.return_type.buffer_dtypes()
    b = ctx.builder
    for (k, i), leaf in zip(slots, leaves):
        index = context.constant(i, types.i32).stmt
        ptr = b.ndarray_ptr(ctx.hidden.return_args[k], [index], "<return value>")
        b.global_store(ptr, ops.cast(leaf, order[k]).stmt)


def _same_memory(a, b):
    if isinstance(a, Ndarray) or isinstance(b, Ndarray):
        return a is b
    if isinstance(a, torch_interop.TorchDeviceArray) or \
            isinstance(b, torch_interop.TorchDeviceArray):
        return getattr(a, "tensor", None) is not None and \
            getattr(b, "tensor", None) is not None and torch_interop.same_memory(a, b)
    return bool(np.may_share_memory(a, b))


def _ir_type(dtype):
    if isinstance(dtype, MatrixType):
        return matrix_module.ir_type_name(dtype.dtype, dtype.shape)
    return str(dtype)


def _any_precision(dtype):
    """Whether an ndarray annotation's vector or matrix type leaves its
    scalar type open (qd.math.vec3 is vector(3, float)): upstream matches it
    with arrays of any scalar type of that shape."""
    return isinstance(dtype, MatrixType) and dtype._dtype in (None, float, int)  # pylint: disable=protected-access


def _array_signature(kernel_name, spec, arg):
    ann = spec.annotation
    if isinstance(arg, Ndarray):
        dtype, ndim = arg.element_type, arg.ndim
    elif isinstance(arg, (np.ndarray, torch_interop.TorchDeviceArray)):
        dtype, ndim = types.from_numpy_dtype(arg.dtype), arg.ndim
        if ann.open_elements:
            # The trailing axes hold the elements, whatever their sizes.
            k = ann.dtype.ndim
            if arg.ndim > k:
                elem = tuple(arg.shape[arg.ndim - k:])
                dtype = MatrixType(elem[0], elem[-1] if k == 2 else 1, k, dtype)
                ndim = arg.ndim - k
        elif isinstance(ann.dtype, (MatrixType, StructType)):
            # A numpy array holds vector elements (a struct's leaves) along its
            # trailing axes.
            scalar, elem = _element_layout(ann.dtype)
            if arg.ndim < len(elem) or tuple(arg.shape[arg.ndim - len(elem):]) != elem:
                what = ann.dtype._describe() if isinstance(ann.dtype, MatrixType) else \
                    repr(ann.dtype)
                kind = "numpy array" if isinstance(arg, np.ndarray) and \
                    not isinstance(arg, torch_interop.TorchView) else "torch tensor"
                if ann.ndim is not None and arg.ndim != ann.ndim + len(elem):
                    upstream = (f"required array has ndim={ann.ndim} element_dim={len(elem)}, "
                                f"array with {arg.ndim} dimensions is provided")
                else:
                    got = tuple(arg.shape[max(0, arg.ndim - len(elem)):])
                    upstream = (f"required element_shape={elem}, array with element shape of "
                                f"{got}")
                raise ArgumentValueError(
                    f"kernel '{kernel_name}' argument '{spec.name}' expects an ndarray of "
                    f"{what} elements (trailing shape {elem}), got a {kind} of shape "
                    f"{arg.shape} (Invalid value for argument {spec.name} - {upstream})")
            if dtype != scalar and not _any_precision(ann.dtype):
                raise QuadrantsTypeError(f"kernel '{kernel_name}' argument '{spec.name}' "
                                         f"expects an ndarray of {ann.dtype}, got one of "
                                         f"{dtype}")
            ndim = arg.ndim - len(elem)
            dtype = MatrixType(ann.dtype.n, ann.dtype.m, ann.dtype.ndim, dtype) \
                if _any_precision(ann.dtype) else ann.dtype
    else:
        raise QuadrantsArgumentTypeError(
            f"kernel '{kernel_name}': Invalid type for argument {spec.name}, got {arg!r}: "
            f"argument '{spec.name}' expects an ndarray (qd.ndarray, numpy array or torch "
            f"tensor), got {type(arg).__name__}")
    if ann.open_elements:
        if not ann.dtype.accepts(dtype):
            raise ArgumentValueError(f"kernel '{kernel_name}': Invalid value for argument "
                                     f"{spec.name}: it expects an ndarray of {ann.dtype} "
                                     f"elements, got one of {dtype}")
    elif ann.dtype is not None and ann.dtype != dtype and not (
            _any_precision(ann.dtype) and isinstance(dtype, MatrixType) and
            dtype.shape == ann.dtype.shape):
        if isinstance(arg, np.ndarray):
            # Upstream's words for a numpy array or torch tensor, then ours.
            raise ArgumentValueError(
                f"kernel '{kernel_name}' argument '{spec.name}' expects an ndarray of "
                f"{ann.dtype}, got one of {dtype} (Invalid value for argument {spec.name} - "
                f"required array has dtype={ann.dtype}, got {arg.dtype})")
        raise QuadrantsTypeError(f"kernel '{kernel_name}' argument '{spec.name}' expects an "
                                 f"ndarray of {ann.dtype}, got one of {dtype} (required "
                                 f"element type: {_ir_type(ann.dtype)}, but get "
                                 f"{_ir_type(dtype)})")
    if ann.ndim is not None and ann.ndim != ndim:
        shape = tuple(arg.shape)[:ndim]
        upstream = f"required ndim={ann.ndim}, but {ndim}d ndarray with shape {shape} is provided"
        if isinstance(arg, np.ndarray):
            upstream = (f"Invalid value for argument {spec.name} - required array has "
                        f"ndim={ann.ndim}, array with {arg.ndim} dimensions is provided")
        raise ArgumentValueError(f"kernel '{kernel_name}' argument '{spec.name}' expects an "
                                 f"ndarray with {ann.ndim} dimensions, got {ndim} "
                                 f"({upstream})")
    return dtype, ndim


_INT_BOUNDS = {}  # integer dtype -> (min, max)


def _int_bounds(dtype):
    if dtype not in _INT_BOUNDS:
        info = np.iinfo(types.to_numpy_dtype(dtype))
        _INT_BOUNDS[dtype] = (int(info.min), int(info.max))
    return _INT_BOUNDS[dtype]


def _check_scalar(kernel_name, spec, arg, position=0):
    kind = type(arg)
    if kind is float and not spec.dtype.is_integral:
        return  # the common case, without the ABC checks below
    if kind is not int and \
            not isinstance(arg, (numbers.Real, np.integer, np.floating, np.bool_)):
        raise QuadrantsTypeError(f"kernel '{kernel_name}' argument '{spec.name}' expects a "
                                 f"scalar of type {spec.dtype}, got {type(arg).__name__}")
    if spec.dtype.is_integral and isinstance(arg, (float, np.floating)):
        raise QuadrantsArgumentTypeError(
            f"kernel '{kernel_name}': Argument {(position,)} (type={type(arg)}) cannot be "
            f"converted into required type {spec.dtype}: argument '{spec.name}' expects an "
            f"integer, got the float {arg!r}")
    if spec.dtype.is_integral and spec.dtype != types.u1:
        low, high = _int_bounds(spec.dtype)
        if not low <= int(arg) <= high:
            raise ArgumentValueError(f"kernel '{kernel_name}' argument '{spec.name}' "
                                     f"({spec.dtype}) must be in [{low}, {high}], "
                                     f"got {int(arg)}")


class _GradLauncher:
    def __init__(self, kernel):
        self.kernel = kernel

    def __call__(self, *args, **kwargs):
        if kwargs.pop("qd_stream", None) is not None:
            raise QuadrantsRuntimeError(f"kernel '{self.kernel.name}': qd_stream= is not "
                                        f"compatible with autodiff (kernel.grad); launch the "
                                        f"gradient without qd_stream")
        self.kernel._launch(args, kwargs, REVERSE)


def _element_layout(dtype):
    """The scalar type and the trailing element shape of an ndarray element
    type: a matrix's own shape, a struct's leaves along one axis."""
    if isinstance(dtype, MatrixType):
        return dtype.dtype, tuple(dtype.shape)
    leaves = dtype._flat_dtypes()
    return leaves[0], (len(leaves),)


def _scalar_dtype(arg):
    if isinstance(arg, Ndarray):
        return arg._scalar
    return types.from_numpy_dtype(arg.dtype)


def _adjoint_arguments(kernel_name, specs, args, copy_back):
    """The adjoint arrays of the float ndarray arguments, in order. An array
    without .grad, or passed to a parameter annotated needs_grad=False, gets
    a scratch one: its gradient is discarded. A torch tensor's is its .grad
    (see torch_interop.adjoint)."""
    adjoints = []
    for spec, arg in zip(specs, args):
        if isinstance(spec, _BufferViewParam) and arg.get_ndarray()._scalar.is_float:
            # A view's ndarray has no .grad (BufferView refuses one): scratch.
            array = arg.get_ndarray()
            adjoints.append(np.zeros(array._core_shape, types.to_numpy_dtype(array._scalar)))
        if not isinstance(spec, _NdarrayParam):
            continue
        dtype = _scalar_dtype(arg)
        if not dtype.is_float:
            continue
        wanted = spec.annotation.needs_grad is not False
        if getattr(arg, "tensor", None) is not None and wanted:
            grad = torch_interop.adjoint(kernel_name, spec.name, arg)
        else:
            grad = getattr(arg, "grad", None) if wanted else None
        if isinstance(grad, core.DeviceArray):
            adjoints.append(grad)
        elif isinstance(grad, Ndarray):
            adjoints.append(grad._core)
        elif isinstance(grad, np.ndarray):
            adjoints.append(grad)
        else:
            shape = arg._core_shape if isinstance(arg, Ndarray) else arg.shape
            adjoints.append(np.zeros(shape, dtype=types.to_numpy_dtype(dtype)))
    return adjoints


def _dual_arguments(specs, args, extra, tangents):
    """The duals of the float array parameters, in parameter order (forward
    mode gives each a dual parameter after all the others): the arguments'
    arrays, then `extra` (hidden arrays and adjoints, as launched)."""
    arrays = []
    for spec, arg in zip(specs, args):
        if isinstance(spec, _BufferViewParam):
            arrays.append(arg.get_ndarray())
        elif isinstance(spec, _NdarrayParam):
            arrays.append(arg)
    duals = []
    for array in arrays + list(extra):
        if isinstance(array, Ndarray):
            shape, dtype = array._core_shape, types.to_numpy_dtype(array._scalar)
            key = array._core
        elif isinstance(array, torch_interop.TorchDeviceArray):
            shape, dtype, key = array.shape, array.dtype, array.core
        elif isinstance(array, core.Ndarray):
            shape, dtype, key = tuple(array.shape), \
                types.to_numpy_dtype(types.by_name(array.dtype)), array
        else:
            shape, dtype, key = array.shape, array.dtype, array
        if np.issubdtype(dtype, np.floating):
            duals.append(tangents.dual_of(key, tuple(shape), dtype) if tangents is not None
                         else np.zeros(shape, dtype))
    return duals


def _launch_arguments(specs, args):
    launch, copy_back = [], []
    for spec, arg in zip(specs, args):
        if isinstance(spec, _TemplateParam):
            continue
        if isinstance(spec, _NdarrayParam):
            if isinstance(arg, Ndarray):
                arg._check_alive()
                launch.append(arg._core)
            elif isinstance(arg, torch_interop.TorchDeviceArray):
                launch.append(arg.core)
            elif arg.flags.c_contiguous and arg.flags.writeable:
                launch.append(arg)
            else:
                # Kernels address arrays densely and may write them: run on a
                # contiguous, writable copy and write it back where allowed.
                contiguous = np.array(arg, order="C", copy=True)
                launch.append(contiguous)
                if arg.flags.writeable:
                    copy_back.append((arg, contiguous))
        elif isinstance(spec, _BufferViewParam):
            launch += [arg.get_ndarray()._core, arg.offset, arg.size]
        elif isinstance(spec, _CompositeParam):
            flat = spec.ctype._flatten_host(arg, f"argument '{spec.name}'")
            for dt, v in zip(spec.flat_dtypes(), flat):
                v = v.item() if isinstance(v, np.generic) else v
                launch.append(float(v) if dt.is_float else int(v))
        else:
            launch.append(arg.item() if isinstance(arg, np.generic) else arg)
    return launch, copy_back


class Func:
    """A @qd.func: inlined into the kernels that call it."""

    _qd_func = True
    _label = "qd.func"  # how errors name the callee

    def __init__(self, fn, requires_top_level=False):
        self.fn = fn
        self.name = fn.__name__
        self._signature = resolved_signature(fn, self._label)
        self._source = None
        self._return_type = None
        self.requires_top_level = requires_top_level
        functools.update_wrapper(self, fn)

    def __get__(self, instance, owner):
        if instance is None:
            return self
        return BoundFunc(self, instance)

    def _parse(self):
        if self._source is None:
            self._source = FunctionSource(self.fn)
            src = self._source
            self._return_type = ReturnType.of(
                self.fn, f"{src.file}:{src.def_line}: "
                         f"{self._label} '{self.name}'")

    def inline(self, ctx, node, caller, args, kwargs, by_reference=0):
        """Inlines the body; the first `by_reference` positional arguments
        (a method's self) are bound as they are, the others by value."""
        self._parse()
        if ctx.inline_depth > 64:
            raise caller.error(node, f"{self._label} '{self.name}': recursion is not "
                               f"supported", QuadrantsCompilationError)
        signature = self._signature
        parameters = signature.parameters
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            error = argument_error(f"{self._label} '{self.name}'", e)
            raise caller.error(node, str(error), QuadrantsArgumentError) from None
        bound.apply_defaults()
        nesting = ctx.outer_dynamic_depth + caller.dynamic_depth
        if self.requires_top_level and nesting:
            raise caller.error(node, f"{self._label} '{self.name}' is marked "
                               f"requires_top_level=True: call it at the top level of the "
                               f"kernel (or through funcs called there), not inside a run-time "
                               f"for, if or while", QuadrantsSyntaxError)
        saved = (ctx.name, ctx.kind, ctx.outer_dynamic_depth)
        ctx.inline_depth += 1
        ctx.outer_dynamic_depth = nesting
        src = self._source
        ctx.frames.append(f"{self.name} ({src.file}:{src.def_line})")
        ctx.call_sites.append((caller.source, node))
        try:
            compiler = FunctionCompiler(ctx, self._source, {}, self._source.globals,
                                        is_kernel=False)
            for position, (name, value) in enumerate(bound.arguments.items()):
                annotation = parameters[name].annotation
                if position < by_reference or (
                        _is_template_annotation(annotation) and
                        (isinstance(value, Var) or matrix_module.is_local(value))):
                    # A qd.template() parameter names the caller's variable
                    # itself (as upstream): assigning it assigns the caller's.
                    compiler.scope[name] = value
                    continue
                # Scalars, vectors and structs are passed by value into locals
                # the func may reassign; fields and ndarrays by reference.
                if isinstance(value, (Var, GlobalRef, Composite)):
                    value = context.load(value)
                if isinstance(annotation, types.NdarrayType) and isinstance(value, NdarrayArg):
                    _check_ndarray_argument(caller, node, f"{self._label} '{self.name}'",
                                            name, annotation, value)
                if isinstance(annotation, MatrixType) and \
                        isinstance(value, matrix_module.Matrix):
                    _check_matrix_argument(caller, node, f"{self._label} '{self.name}'",
                                           name, annotation, value)
                if isinstance(annotation, types.DataType) and \
                        isinstance(value, (Expr, numbers.Number)) and \
                        not isinstance(value, bool):
                    value = ops.cast(value, annotation)  # a scalar parameter's own type
                if name in self._source.assigned and isinstance(value, Composite):
                    compiler.declare(name, value)
                    continue
                if name in self._source.assigned and isinstance(value, (Expr, numbers.Number)):
                    compiler.declare(name, value)  # the body reassigns it
                else:
                    compiler.scope[name] = value
            compiler.depth = 0
            compiler.return_type = self._return_type
            compiler.compile_body(self._source.node.body)
            if self._return_type is not None and not compiler.returned:
                raise caller.error(node, f"{self._label} '{self.name}': Function has a "
                                   f"return type but does not have a return statement")
        finally:
            ctx.inline_depth -= 1
            ctx.frames.pop()
            ctx.call_sites.pop()
            ctx.name, ctx.kind, ctx.outer_dynamic_depth = saved
        return compiler.return_value

    def __call__(self, *args, **kwargs):
        if python_backend.active():
            return self.fn(*args, **kwargs)
        if context.current() is None:
            raise QuadrantsSyntaxError(f"qd.func '{self.name}' can only be called from "
                                       f"kernel code")
        raise QuadrantsSyntaxError(f"qd.func '{self.name}' must be called directly from "
                                   f"kernel source")


def _is_template_annotation(annotation):
    """qd.template() or the class itself (qd.Template)."""
    return isinstance(annotation, types.Template) or \
        annotation in (types.Template, types.template)


def _check_ndarray_argument(caller, node, label, name, annotation, array):
    """An ndarray argument of a func must match its annotation's ndim and
    element type where the annotation gives them; upstream's words first."""
    element = array.element if array.element is not None else array.dtype
    wanted = annotation.dtype
    if isinstance(wanted, MatrixType) and not annotation.open_elements:
        same = isinstance(element, MatrixType) and (element.n, element.m) == \
            (wanted.n, wanted.m) and (_any_precision(wanted) or element == wanted)
    else:
        same = wanted is None or annotation.open_elements or element == wanted
    if same and annotation.ndim in (None, array.ndim):
        return
    got = element._describe() if isinstance(element, MatrixType) else element
    want = "any" if wanted is None else \
        wanted._describe() if isinstance(wanted, MatrixType) else wanted
    raise caller.error(node, f"Invalid value for argument {name}: {label} takes an ndarray "
                       f"of {want} elements with ndim {annotation.ndim}, got one of {got} "
                       f"elements with ndim {array.ndim}", QuadrantsTypeError)


def _check_matrix_argument(caller, node, label, name, annotation, value):
    """A vector/matrix argument must have the annotated shape; upstream's
    words."""
    for axis in ("n", "m"):
        expected, got = getattr(annotation, axis), getattr(value, axis)
        if expected is not None and expected != got:
            raise caller.error(node, f"{label} argument '{name}' is expected to be a Matrix "
                               f"with {axis} {expected}, but got {got}", QuadrantsSyntaxError)


# ---- plain Python functions and lambdas called from kernel code ---------------
#
# Kernel code may call a plain Python function or lambda (not a @qd.func)
# with run-time values, as upstream allows: `y[i] = f(x[i])`. Such a call is
# inlined like a @qd.func, compiled from the callee's AST. Expr has no Python
# operator overloading (`a + b` on two Exprs is not an IR add), so running
# the callee in Python on Exprs is not an option; compiling its AST also
# gives it the kernel language (if/while/loops), its error locations and
# autodiff through it, exactly as for a @qd.func.


class _LambdaSource:
    """The source of a lambda, shaped like a FunctionSource of a one-line
    def whose body returns the lambda's expression.

    inspect gives a lambda only the lines of the statement it sits in, which
    may not parse alone (a lambda in a multi-line call or dict), so the whole
    file is parsed and the Lambda node is found by its line and parameter
    names; several lambdas matching on one line are told apart by the
    column positions the code object records for its instructions (Python
    3.11+), innermost match first.
    """

    def __init__(self, fn):
        code = fn.__code__
        lines, _ = inspect.findsource(fn)  # OSError when there is no source
        self.file = inspect.getsourcefile(fn) or code.co_filename
        self.line_offset = 0               # node line numbers are the file's
        self.indent = 0                    # and so are its columns
        self.name = fn.__name__
        lam = _find_lambda(_parse_cached("".join(lines)), code)
        body = ast.Return(value=lam.body)
        ast.copy_location(body, lam.body)
        self.node = ast.FunctionDef(name="<lambda>", args=lam.args, body=[body],
                                    decorator_list=[], returns=None, type_comment=None)
        ast.copy_location(self.node, lam)
        self.assigned = set()
        self.assigned_once = set()
        self.globals = _LiveNames(fn)

    @property
    def def_line(self):
        return self.node.lineno


@functools.lru_cache(maxsize=16)
def _parse_cached(text):
    return ast.parse(text)


def _lambda_params(code):
    count = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:count])
    if code.co_flags & inspect.CO_VARARGS:
        names.append("*" + code.co_varnames[count])
        count += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        names.append("**" + code.co_varnames[count])
    return names


def _node_params(lam):
    a = lam.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    if a.vararg is not None:
        names.append("*" + a.vararg.arg)
    if a.kwarg is not None:
        names.append("**" + a.kwarg.arg)
    return names


class _AmbiguousLambda(Exception):
    pass


def _find_lambda(tree, code):
    params = _lambda_params(code)
    candidates = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
                  and n.lineno == code.co_firstlineno and _node_params(n) == params]
    if len(candidates) == 1:
        return candidates[0]
    # Zero-width positions belong to synthetic instructions (RESUME, the
    # implicit return) that point at the start of the line, not the body.
    positions = {(line, col) for line, end_line, col, end_col in code.co_positions()
                 if None not in (line, end_line, col, end_col)
                 and (line, col) != (end_line, end_col)}

    def contains(lam, line, col):
        b = lam.body
        return (b.lineno, b.col_offset) <= (line, col) <= (b.end_lineno, b.end_col_offset)
    if positions:
        candidates = [n for n in candidates
                      if all(contains(n, line, col) for line, col in positions)]
        # A lambda nested in another's body matches both: take the innermost.
        candidates.sort(key=lambda n: (n.body.end_lineno - n.body.lineno,
                                       n.body.end_col_offset - n.body.col_offset))
        if candidates:
            return candidates[0]
    raise _AmbiguousLambda(f"cannot tell which lambda on line {code.co_firstlineno} it "
                           f"is; define it with def or put it on a line of its own")


class _PythonFunc(Func):
    """A plain Python function or lambda inlined into kernel code."""

    _qd_func = False  # not a @qd.func: the transformer decides when to inline
    _label = "Python function"

    def __init__(self, fn, source):
        super().__init__(fn)
        self._source = source


def python_callable(fn):
    """The inlinable form of plain Python function `fn` (a _PythonFunc), made
    once per function object; raises QuadrantsSyntaxError (without a
    location: the caller adds the call site) when its source is not
    available."""
    cached = fn.__dict__.get("_qd_inline")
    if cached is not None and cached.fn is fn:
        return cached
    name = fn.__qualname__
    hint = "define it in a source file, or make it a @qd.func"
    try:
        if fn.__name__ == "<lambda>":
            source = _LambdaSource(fn)
        else:
            source = FunctionSource(fn)
            if not isinstance(source.node, ast.FunctionDef) or \
                    source.node.name != fn.__name__:
                raise OSError("its source is not a plain def")
    except _AmbiguousLambda as e:
        raise QuadrantsSyntaxError(f"cannot inline Python lambda {name} called with "
                                   f"run-time values: {e}, or make it a @qd.func") from None
    except QuadrantsSyntaxError as e:
        raise QuadrantsSyntaxError(f"cannot inline Python function {name} called with "
                                   f"run-time values: {e}; {hint}") from None
    except (OSError, TypeError, SyntaxError) as e:
        reason = e
        raise QuadrantsSyntaxError(f"cannot inline Python function {name} called with "
                                   f"run-time values: its source is not available "
                                   f"({reason}); {hint}") from None
    wrapper = _PythonFunc(fn, source)
    # Kept on the function object itself, so it lives exactly as long.
    fn._qd_inline = wrapper
    return wrapper


def kernel(fn=None, *, pure=None, fastcache=False, graph=False, checkpoints=False):
    """@qd.kernel, or @qd.kernel(fastcache=True, graph=True).

    fastcache=True declares the kernel pure: it reads nothing from outside
    its parameters that can change between runs (Python numbers, strings or
    fields captured from globals raise QuadrantsCompilationError; UPPERCASE
    names and qd.static() reads warn). Its compiled code comes from the
    offline cache like every kernel's; the Python front end still runs in
    each process. pure=True is upstream's older spelling (deprecated).

    graph=True asks for the kernel's task launches to be replayed as one
    captured graph where the backend supports it; elsewhere it is a normal
    launch. It also allows qd.graph.do_while loops and qd.graph.parallel
    regions (quadrants.lang.graph). A kernel that uses the adstack cannot be
    captured: its heap is sized on the host at every launch, which a replay
    would skip, so such a kernel raises QuadrantsRuntimeError when launched
    with graph=True.
    """
    for name, value in (("graph", graph), ("fastcache", fastcache),
                        ("checkpoints", checkpoints)):
        if not isinstance(value, bool):
            raise QuadrantsTypeError(f"qd.kernel({name}=...) must be a bool, got {value!r}")
    if pure is not None:
        warnings.warn("@qd.kernel parameter `pure` is deprecated. Please use parameter "
                      "`fastcache`. `pure` parameter is intended to be removed in 4.0.0",
                      stacklevel=2)

    def make(function):
        if isinstance(function, _perf_dispatch.DispatchImpl):
            # The first sentence and the code are upstream's.
            raise QuadrantsSyntaxError(
                "Cant put kernel in front of other annotations (error code: "
                "KERNEL_ANNOTATION_ORDER). A perf_dispatch implementation registers the "
                "kernel: write @dispatcher.register above @qd.kernel")
        if checkpoints and not graph:
            raise QuadrantsSyntaxError(
                f"@qd.kernel({function.__name__!r}, checkpoints=True) requires graph=True; "
                f"the checkpoint resume model is only meaningful for graph kernels.")
        k = Kernel(function)
        k.graph = graph
        k.checkpoints = checkpoints
        k.is_pure = bool(pure) or fastcache or getattr(function, "is_pure", False)
        return k
    return make if fn is None else make(fn)


def pure(fn):
    """@qd.pure above @qd.kernel: upstream's older spelling of
    @qd.kernel(fastcache=True) (deprecated)."""
    warnings.warn("Use of @qd.pure is deprecated. Please use @qd.kernel(fastcache=True). "
                  "@qd.pure is intended to be removed in v4.0.0", stacklevel=2)
    fn.is_pure = True
    return fn


def func(fn=None, *, requires_top_level=False):
    """@qd.func, or @qd.func(requires_top_level=True): a function kernels
    (and other funcs) call; it is inlined at each call, takes values and
    references to fields, and may return values. Differentiable like the
    kernel that calls it. With requires_top_level=True a call nested in
    run-time control flow (directly or through other funcs) is a
    QuadrantsSyntaxError: such a func's own loops must stay top-level
    (parallel) loops of the kernel."""
    if not isinstance(requires_top_level, bool):
        raise QuadrantsTypeError(f"qd.func(requires_top_level=...) must be a bool, got "
                                 f"{requires_top_level!r}")
    if fn is None:
        return lambda f: Func(f, requires_top_level=requires_top_level)
    return Func(fn, requires_top_level=requires_top_level)


struct.functions.register(Func=Func, func=func)
calls.inlining.register(python_callable=python_callable)
