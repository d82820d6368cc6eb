"""@qd.real_func: a function compiled once and called from kernel code.

Unlike a @qd.func, whose body is inlined at every call, a real function
becomes one IR function of the calling kernel per distinct signature
(template arguments, ndarray layouts, argument dtypes), called at run time;
so it may call itself. Parameters are passed by value (scalars, vectors,
matrices, structs: their scalar leaves), by reference (`qd.ref(dtype)`: the
caller's local variable), or baked into the instance (`qd.template()`
values, ndarray parameters of the kernel). The results travel through
pointers to locals of the caller, which the callee's `return` stores before
it leaves, so `return` may appear anywhere, inside run-time if, for and
while too.
"""
import inspect
import numbers

from quadrants.lang import context, ops, types
from quadrants.lang.data_oriented import BoundFunc
from quadrants.lang.exception import (QuadrantsCompilationError, QuadrantsSyntaxError,
                                      QuadrantsTypeError)
from quadrants.lang.expr import Composite, Expr, GlobalRef, NdarrayArg, Var
from quadrants.lang.kernel import FunctionSource, _template_key
from quadrants.lang.kernel_returns import ReturnType
from quadrants.lang.ndarray import Ndarray
from quadrants.lang.transformer import FunctionCompiler

_SCALAR, _REF, _TEMPLATE, _NDARRAY, _VALUE = "scalar", "ref", "template", "ndarray", "value"


def _method(fn):
    scopes = fn.__qualname__.split(".")
    return len(scopes) > 1 and scopes[-2] != "<locals>"


def _where(fn):
    try:
        file = inspect.getsourcefile(fn) or "<unknown>"
        line = inspect.getsourcelines(fn)[1]
    except (OSError, TypeError):
        file, line = "<unknown>", 0
    return file, line


def _param_kinds(fn, where):
    """(name, kind, annotation) per parameter; every parameter but a
    method's self must be annotated."""
    params = []
    method = _method(fn)
    for position, p in enumerate(inspect.signature(fn).parameters.values()):
        ann = p.annotation
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise QuadrantsSyntaxError(f"{where}: qd.real_func '{fn.__name__}': *args and "
                                       f"**kwargs parameters are not supported")
        if position == 0 and method and ann is inspect.Parameter.empty:
            params.append((p.name, _TEMPLATE, None))
        elif ann is inspect.Parameter.empty:
            raise QuadrantsSyntaxError(
                f"{where}: qd.real_func '{fn.__name__}': parameter '{p.name}' must be type "
                f"annotated (e.g. qd.f32, qd.ref(qd.f32), qd.template(), a vector, matrix "
                f"or struct type, or qd.types.ndarray())")
        elif isinstance(ann, types.Template) or ann is types.Template:
            params.append((p.name, _TEMPLATE, ann))
        elif isinstance(ann, types.RefType):
            params.append((p.name, _REF, ann))
        elif isinstance(ann, types.NdarrayType):
            params.append((p.name, _NDARRAY, ann))
        elif hasattr(ann, "_flat_dtypes"):
            params.append((p.name, _VALUE, ann))
        else:
            params.append((p.name, _SCALAR, ann))
    return params


class RealFunc:
    """A @qd.real_func (see the module docstring)."""

    _qd_func = True
    _label = "qd.real_func"

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__
        self._file, self._line = _where(fn)
        self._params = _param_kinds(fn, f"{self._file}:{self._line}")
        self._source = None
        self._return_type = None
        self.__doc__ = fn.__doc__

    def __get__(self, instance, owner):
        if instance is None:
            return self
        return BoundFunc(self, instance)

    def __call__(self, *args, **kwargs):
        raise QuadrantsSyntaxError(f"qd.real_func '{self.name}' can only be called from "
                                   f"kernel code")

    def _what(self):
        return f"{self._label} '{self.name}'"

    def _parse(self):
        if self._source is None:
            self._source = FunctionSource(self.fn)
            self._return_type = ReturnType.of(self.fn, f"{self._file}:{self._line}: "
                                                       f"{self._what()}")

    # ---- a call in kernel code -------------------------------------------------
    def inline(self, ctx, node, caller, args, kwargs, by_reference=0):
        """Emits a call (declaring and compiling the function for this
        kernel and signature at its first call) and returns its result."""
        del by_reference  # a method's self is a template parameter
        self._parse()
        try:
            bound = inspect.signature(self.fn).bind(*args, **kwargs)
        except TypeError as e:
            raise caller.error(node, f"{self._what()}: {e}", QuadrantsTypeError) from None
        bound.apply_defaults()
        values = list(bound.arguments.values())
        layout = [self._layout(caller, node, p, v) for p, v in zip(self._params, values)]
        key = (id(self), tuple(k for k, _ in layout))
        instances = ctx.__dict__.setdefault("real_functions", {})
        instance = instances.get(key)
        if instance is None:
            instance = self._declare(ctx, layout, values)
            instances[key] = instance
            self._compile(ctx, caller, instance, values)
            caller.locate(node)
        return self._emit_call(ctx, caller, node, instance, values)

    def _layout(self, caller, node, param, value):
        """(signature key part, IR parameter types) of one argument."""
        name, kind, ann = param
        if kind == _TEMPLATE:
            return ("t", _template_key(value)), []
        if kind == _NDARRAY:
            if not isinstance(value, NdarrayArg):
                found = "a Python-scope ndarray" if isinstance(value, Ndarray) else \
                    type(value).__name__
                raise caller.error(node, f"{self._what()}: Expected ndarray in the kernel "
                                   f"argument for argument {name}, got {found}; pass the "
                                   f"kernel's ndarray parameter", QuadrantsTypeError)
            return ("n", value.arg, str(value.dtype), value.ndim, repr(value.element),
                    value.layout), []
        if kind == _REF:
            return ("r", ann.dtype.name), [(name, ann.dtype.name, True)]
        dtypes = ReturnType(ann, f"{self._what()} parameter '{name}'").leaf_dtypes
        return ("v", tuple(d.name for d in dtypes)), \
            [(f"{name}[{k}]" if kind == _VALUE else name, d.name, False)
             for k, d in enumerate(dtypes)]

    def _declare(self, ctx, layout, values):
        params = [p for _, ir_params in layout for p in ir_params]
        results = self._return_type.leaf_dtypes if self._return_type else []
        params += [(f"<result {k}>", d.name, True) for k, d in enumerate(results)]
        index = ctx.kernel_ir.add_function(self.name, self._file, self._line, params)
        return {"index": index, "layout": layout, "results": results,
                "first_result": len(params) - len(results)}

    # ---- the body ---------------------------------------------------------------
    def _compile(self, ctx, caller, instance, values):
        src = self._source
        b = ctx.builder
        saved = (ctx.name, ctx.kind, ctx.region, ctx.in_parallel)
        b.enter_function(instance["index"])
        try:
            ctx.name, ctx.kind = self.name, "real_func"
            ctx.region, ctx.in_parallel = (None, 0), False
            compiler = FunctionCompiler(ctx, src, {}, src.globals, is_kernel=False)
            self._bind_params(b, compiler, instance, values)
            compiler.return_type = self._return_type
            first = instance["first_result"]
            compiler.on_real_return = _ResultStore(
                [b.func_arg(first + k) for k in range(len(instance["results"]))])
            compiler.compile_body(src.node.body)
            if self._return_type is not None and not compiler.on_real_return.seen:
                raise QuadrantsSyntaxError(
                    f"{src.file}:{src.line_offset + src.node.lineno}: {self._what()}: "
                    f"Function has a return type but does not have a return statement")
        finally:
            b.leave_function()
            ctx.name, ctx.kind, ctx.region, ctx.in_parallel = saved

    def _bind_params(self, b, compiler, instance, values):
        ir_index = 0
        for (name, kind, ann), value, (_, ir_params) in zip(self._params, values,
                                                              instance["layout"]):
            if kind in (_TEMPLATE, _NDARRAY):
                compiler.scope[name] = value
                continue
            if kind == _REF:
                # Reads and writes of the name go through the caller's variable.
                compiler.scope[name] = GlobalRef(b.func_arg(ir_index), ann.dtype)
                compiler.shared_locals.add(name)
                ir_index += 1
                continue
            leaves = [Expr(b.func_arg(ir_index + k), types.by_name(dt))
                      for k, (_, dt, _) in enumerate(ir_params)]
            ir_index += len(ir_params)
            arg = ann._from_flat(leaves) if kind == _VALUE else leaves[0]
            if name in self._source.assigned:
                compiler.declare(name, arg)  # the body reassigns it
            else:
                compiler.scope[name] = arg

    # ---- the call ---------------------------------------------------------------
    def _emit_call(self, ctx, caller, node, instance, values):
        b = ctx.builder
        operands = []
        for (name, kind, ann), value in zip(self._params, values):
            if kind in (_TEMPLATE, _NDARRAY):
                continue
            if kind == _REF:
                operands.append(self._reference(caller, node, name, ann.dtype, value))
                continue
            what = f"argument '{name}' of {self._what()}"
            try:
                leaves = ReturnType(ann, what).cast_leaves(value, what)
            except QuadrantsCompilationError as e:
                raise caller.error(node, str(e).replace(" returns ", " is given ")
                                   .replace("its return type", "its annotation"),
                                   QuadrantsTypeError) from None
            operands.extend(leaf.stmt for leaf in leaves)
        results = [caller.new_scalar_var(f"<{self.name} result {k}>", dt)
                   for k, dt in enumerate(instance["results"])]
        operands.extend(var.alloca for var in results)
        b.call(instance["index"], operands)
        if self._return_type is None:
            return None
        loaded = [context.load(var) for var in results]
        if ctx.kind == "kernel" and not ctx.in_parallel and ctx.hidden is not None:
            loaded = [_share(ctx, f"<{self.name} result {k}>", leaf)
                      for k, leaf in enumerate(loaded)]
        value, _ = self._return_type._rebuild(self._return_type.shape, loaded)
        return value

    def _reference(self, caller, node, name, dtype, value):
        """The address a qd.ref parameter gets: a local variable of the
        caller (or a qd.ref parameter of a calling real function)."""
        is_ref_param = isinstance(value, GlobalRef) and value.ptr.kind == "func_arg"
        if not isinstance(value, Var) and not is_ref_param:
            found = value._describe() if isinstance(value, Composite) else \
                "a value" if isinstance(value, (Expr, numbers.Number)) else \
                "a field or ndarray element" if isinstance(value, GlobalRef) else \
                type(value).__name__
            raise caller.error(node, f"{self._what()}: parameter '{name}' is "
                               f"qd.ref({dtype}) and needs a local scalar variable, got "
                               f"{found}", QuadrantsTypeError)
        if value.dtype != dtype:
            raise caller.error(node, f"{self._what()}: parameter '{name}' is "
                               f"qd.ref({dtype}) but the variable passed is "
                               f"{value.dtype}", QuadrantsTypeError)
        return value.alloca if isinstance(value, Var) else value.ptr


def _share(ctx, label, leaf):
    """A result of a call in the kernel's serial code, kept in a hidden
    buffer: parallel loops after the call may read it (a value read from
    global memory is carried into a loop, a local variable is not)."""
    b = ctx.builder
    arg = ctx.hidden.temporary(label, leaf.dtype, 1)
    ptr = b.ndarray_ptr(arg.arg, [context.constant(0, types.i32).stmt], label)
    b.global_store(ptr, ops.cast(leaf, arg.dtype).stmt)
    value = Expr(b.global_load(ptr), arg.dtype)
    return ops.cast(value, leaf.dtype) if arg.dtype != leaf.dtype else value


class _ResultStore:
    """What a `return` in a real function does: stores the result leaves
    through the result pointers and leaves the function."""

    def __init__(self, pointers):
        self.pointers = pointers
        self.seen = False

    def __call__(self, builder, leaves):
        for ptr, leaf in zip(self.pointers, leaves):
            builder.global_store(ptr, ops.cast(leaf, types.by_name(ptr.dtype)).stmt)
        builder.return_()
        self.seen = True


def real_func(fn):
    """@qd.real_func: see the module docstring."""
    return RealFunc(fn)
