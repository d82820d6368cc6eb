"""qd.types.struct, @qd.dataclass, struct values and struct fields.

Like matrices, structs are scalarized in the front end: a Struct value maps
member names to scalars (Expr, Var, GlobalRef, numbers), Matrices or nested
Structs; a StructField holds one field per member.
"""
import numbers

import numpy as np

from quadrants.lang import context, matrix, ops, python_backend, runtime, torch_interop, types
from quadrants.lang import field as field_module
from quadrants.lang.composite_field import _check_flags, _check_layout, _new_name, \
    _place_new, _matrix_components, MatrixField
from quadrants.lang.exception import ArgumentValueError, QuadrantsSyntaxError, QuadrantsTypeError
from quadrants.lang.expr import Composite, Expr, GlobalRef, is_runtime
from quadrants.lang.hooks import Hooks
from quadrants.lang.matrix import Matrix, MatrixType

# @qd.dataclass turns the class's functions into qd.func methods; the kernel
# compiler (quadrants.lang.kernel, which builds on struct types) registers
# its Func class and func decorator here.
functions = Hooks("quadrants.lang.kernel", "Func", "func")


def _in_kernel():
    return context.current() is not None


class Struct(Composite):
    """A struct value: members by name, in declaration order."""

    __slots__ = ("_stype", "_members")
    _qd_intrinsic = True  # qd.Struct(...) in kernel code runs this class

    def __init__(self, *args, **kwargs):
        """Struct(stype, members) internally; qd.Struct({"a": 1, ...}) or
        qd.Struct(a=1, ...) builds a struct whose member types come from the
        values (upstream's anonymous struct)."""
        if len(args) == 2 and isinstance(args[0], StructType) and not kwargs:
            stype, members = args
        else:
            stype, members = _anonymous(args, kwargs)
        object.__setattr__(self, "_stype", stype)
        object.__setattr__(self, "_members", dict(members))

    def _load(self):
        if not _in_kernel():
            return self
        return Struct(self._stype, {k: context.load(v) for k, v in self._members.items()})

    def _leaves(self):
        out = []
        for v in self._members.values():
            out.extend(v._leaves() if isinstance(v, Composite) else [v])
        return out

    def _describe(self):
        return f"a struct {self._stype!r}"

    def _make_local(self, compiler, name):
        members = {}
        for k, v in self._members.items():
            if isinstance(v, Composite):
                members[k] = matrix.make_local(compiler, f"{name}.{k}", v)
            else:
                dt = self._stype.members[k]
                e = context.to_expr(v, like=dt)
                var = compiler.new_scalar_var(f"{name}.{k}", dt)
                compiler.ctx.builder.local_store(var.alloca, ops.cast(e, dt).stmt)
                members[k] = var
        return Struct(self._stype, members)

    def _store(self, value, what):
        value = context.load(value)
        if not isinstance(value, Struct) or value._stype.members.keys() != \
                self._stype.members.keys():
            desc = value._describe() if isinstance(value, Composite) else "a scalar"
            raise QuadrantsTypeError(f"{what}: {self._describe()} is assigned {desc}")
        for k, ref in self._members.items():
            matrix.store(ref, value._members[k], what)

    def __getattr__(self, name):
        members = object.__getattribute__(self, "_members")
        if name in members:
            return members[name]
        stype = object.__getattribute__(self, "_stype")
        method = stype.methods.get(name)
        if method is not None:
            return BoundMethod(method, self)
        group = stype._unpacked_groups.get(name)  # pylint: disable=protected-access
        if group is not None:
            return UnpackedVector(self, name, group)
        raise AttributeError(f"struct {stype!r} has no member '{name}'")

    def __setattr__(self, name, value):
        if _in_kernel():
            raise AttributeError("internal: kernel stores go through the compiler")
        if name not in self._members:
            raise AttributeError(f"struct {self._stype!r} has no member '{name}'")
        self._members[name] = value

    def __getitem__(self, name):
        return self._members[name]

    @staticmethod
    def field(members, shape=None, needs_grad=False, needs_dual=False, name=None,
              order=None, offset=None, layout=None):  # pylint: disable=unused-argument
        """qd.Struct.field({member: type, ...}, shape=None, ...)."""
        return StructType(members).field(shape=shape, needs_grad=needs_grad,
                                         needs_dual=needs_dual, name=name)

    def keys(self):
        return list(self._members.keys())

    def items(self):
        return list(self._members.items())

    def to_dict(self):
        return {k: (v.to_dict() if isinstance(v, Struct) else
                    v.to_numpy() if isinstance(v, Matrix) else v)
                for k, v in self._load()._members.items()}

    def __repr__(self):
        return f"Struct({self._members!r})"


class UnpackedVector:
    """s.<name> of a struct whose member <name> is an unpacked vector: s.<name>[i]
    (i known at compile time) is the scalar member _<name><i>."""

    def __init__(self, owner, name, group):
        self._owner, self._name = owner, name
        self._count, _, self._prefix = group

    def __len__(self):
        return self._count

    def _member(self, index):
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise QuadrantsTypeError(f"'{self._name}' is an unpacked vector: index it with a "
                                     f"python-int known at compile time (a literal or a "
                                     f"qd.static loop variable), got {index!r}")
        if not 0 <= index < self._count:
            raise QuadrantsTypeError(f"index {index} is out of bounds for the unpacked vector "
                                     f"'{self._name}' of {self._count}")
        return f"{self._prefix}{int(index)}"

    def __getitem__(self, index):
        return getattr(self._owner, self._member(index))

    def __setitem__(self, index, value):
        setattr(self._owner, self._member(index), value)


def _value_type(name, value):
    """The member type of a value given to an anonymous qd.Struct."""
    if isinstance(value, Struct):
        return value._stype  # pylint: disable=protected-access
    if isinstance(value, Matrix):
        return MatrixType(value.n, value.m, value.ndim, value.dtype)
    if isinstance(value, Composite):
        raise QuadrantsTypeError(f"qd.Struct(): member '{name}' is {value._describe()}")
    value = context.load(value) if _in_kernel() else value
    if isinstance(value, Expr):
        return value.dtype
    if not isinstance(value, numbers.Number):
        raise QuadrantsTypeError(f"qd.Struct(): member '{name}' must be a number, a vector, "
                                 f"a matrix, a struct or a dict of members, got {value!r}")
    return context.literal_type(value)


def _anonymous(args, kwargs):
    """The type and members of qd.Struct(dict) / qd.Struct(**members)."""
    if len(args) > 1 or (args and not isinstance(args[0], dict)):
        raise QuadrantsTypeError("qd.Struct() takes a dict of members or the members as "
                                 "keywords")
    given = dict(args[0]) if args else {}
    given.update(kwargs)
    members, member_types = {}, {}
    for name, value in given.items():
        if isinstance(value, dict):
            value = Struct(value)
        members[name] = value
        member_types[name] = _value_type(name, value)
    stype = StructType(member_types)
    return stype, stype(**members)._members  # pylint: disable=protected-access


class HostStruct(Struct):
    """A struct field element read on the host: setting a member also writes
    the field."""

    __slots__ = ("_writer",)

    def __init__(self, stype, members, writer):
        super().__init__(stype, members)
        object.__setattr__(self, "_writer", writer)

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        self._writer(name, value)


class BoundMethod:
    """A dataclass method bound to its struct: inlined like a @qd.func with
    the struct (by reference) as `self`."""

    _qd_func = True

    def __init__(self, func, obj):
        self.func, self.obj = func, obj

    def inline(self, ctx, node, caller, args, kwargs):
        return self.func.inline(ctx, node, caller, [self.obj] + list(args), kwargs,
                                by_reference=1)

    def __call__(self, *args, **kwargs):
        if _in_kernel():
            raise QuadrantsTypeError("a struct method is called from kernel source")
        return self.func.fn(self.obj, *args, **kwargs)


class StructType:
    """qd.types.struct(**members): members are scalar dtypes, vector/matrix
    types or struct types."""

    _qd_intrinsic = True

    def __init__(self, members, name="struct", methods=None):
        self.members = {}
        # name -> (count, scalar type, member prefix) of each unpacked vector
        self._unpacked_groups = {}
        for k, t in members.items():
            if k in self.members:
                raise QuadrantsSyntaxError(f"struct member '{k}' collides with a member of an "
                                           f"unpacked vector (unpacked=True stores "
                                           f"'<name>' as _<name>0, _<name>1, ...)")
            if getattr(t, "unpacked", False):
                for i in range(t.n):
                    if f"_{k}{i}" in members:
                        raise QuadrantsSyntaxError(
                            f"struct member '_{k}{i}' collides with component {i} of the "
                            f"unpacked vector '{k}' (unpacked=True stores it as _{k}{i})")
                    self.members[f"_{k}{i}"] = t.dtype
                self._unpacked_groups[k] = (t.n, t.dtype, f"_{k}")
            elif isinstance(t, (MatrixType, StructType)):
                self.members[k] = t
            else:
                self.members[k] = types.normalize(t, f"struct member '{k}'")
        self.name = name
        self.methods = dict(methods or {})

    def __repr__(self):
        return self.name if self.name != "struct" else \
            f"struct({', '.join(f'{k}={v!r}' for k, v in self.members.items())})"

    def __eq__(self, other):
        return isinstance(other, StructType) and other.members == self.members and \
            other.name == self.name

    def __hash__(self):
        return hash((self.name, tuple(self.members)))

    def __call__(self, *args, **kwargs):
        names = list(self.members)
        if len(args) > len(names):
            raise QuadrantsTypeError(f"{self!r} takes {len(names)} members, got {len(args)}")
        given = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in self.members:
                raise QuadrantsTypeError(f"{self!r} has no member '{k}'")
            given[k] = v
        values = {}
        for k, t in self.members.items():
            v = given.get(k, 0)
            values[k] = self._member_value(k, t, v)
        return Struct(self, values)

    @staticmethod
    def _member_value(k, t, v):
        if _in_kernel():
            v = context.load(v)
        if isinstance(t, MatrixType):
            return t.cast(v)
        if isinstance(t, StructType):
            if isinstance(v, dict):
                return t(**v)
            if isinstance(v, Struct):
                return v
            if isinstance(v, numbers.Number) or is_runtime(v):
                return t(v)  # the first member from v, as positional members go
            raise QuadrantsTypeError(f"member '{k}' needs a {t!r}")
        if isinstance(v, Composite):
            raise QuadrantsTypeError(f"member '{k}' is a {t}, got {v._describe()}")
        return ops.cast(v, t)

    def cast(self, value):
        value = context.load(value) if _in_kernel() else value
        if isinstance(value, dict):
            return self(**value)
        if not isinstance(value, Struct):
            raise QuadrantsTypeError(f"expected a {self!r}")
        return self(**value._members)

    def field(self, shape=None, needs_grad=False, needs_dual=False, name=None, order=None,
              offset=None, layout=None):
        """MyStruct.field(shape=None, needs_grad=False, ...): one field per
        member, placed together (order=, offset= and layout= as for
        qd.field and qd.Vector.field)."""
        if python_backend.active():
            return python_backend.storage(self, shape)
        runtime.program()
        shape = field_module._shape_tuple(shape)  # pylint: disable=protected-access
        what = f"{self!r}.field()"
        order, offset = field_module.layout_options(shape, order, offset, what)
        _check_layout(layout, what)
        name = _new_name(name)
        f = self._make_field(shape, needs_grad, needs_dual, name)
        _place_new(f._leaf_fields(), shape, order, offset, layout)
        return f

    def _make_field(self, shape, needs_grad, needs_dual, name):
        members = {}
        for k, t in self.members.items():
            member_name = f"{name}.{k}"
            if isinstance(t, StructType):
                members[k] = t._make_field(shape, needs_grad, needs_dual, member_name)
                continue
            dt = t.dtype if isinstance(t, MatrixType) else t
            # Every member must be differentiable, as upstream requires.
            grad, dual = needs_grad, needs_dual
            _check_flags(dt, grad, dual, f"struct member '{k}'")
            if isinstance(t, MatrixType):
                members[k] = MatrixField(_matrix_components(t.n, t.m, dt, shape, grad, dual,
                                                            member_name),
                                         t.n, t.m, t.ndim, member_name)
            else:
                members[k] = field_module.Field(dt, shape, member_name, needs_grad=grad,
                                                needs_dual=dual)
        return StructField(self, members, name)

    # Kernel parameters of struct type are passed as their scalar leaves.
    def _flat_dtypes(self):
        out = []
        for t in self.members.values():
            out.extend(t._flat_dtypes() if isinstance(t, (MatrixType, StructType)) else [t])
        return out

    def _from_flat(self, values):
        members, pos = {}, 0
        for k, t in self.members.items():
            count = len(t._flat_dtypes()) if isinstance(t, (MatrixType, StructType)) else 1
            part = values[pos:pos + count]
            pos += count
            members[k] = t._from_flat(part) if isinstance(t, (MatrixType, StructType)) \
                else part[0]
        return Struct(self, members)

    def _flatten_host(self, value, what):
        if isinstance(value, Struct):
            value = value._members
        if not isinstance(value, dict):
            raise ArgumentValueError(f"{what} expects a {self!r} (a struct or a dict)")
        out = []
        for k, t in self.members.items():
            v = value.get(k, 0)
            if isinstance(t, (MatrixType, StructType)):
                out.extend(t._flatten_host(v, f"{what} member '{k}'"))
            else:
                out.append(v)
        return out


class StructField:
    """A field of structs: one member field each, placed side by side."""

    __iter__ = field_module.no_host_iteration

    def __init__(self, stype, members, name):
        self._stype = stype
        self._members = members
        self.name = name

    def _leaf_fields(self):
        out = []
        for f in self._members.values():
            out.extend(f._leaf_fields() if hasattr(f, "_leaf_fields") else [f])
        return out

    def __getattr__(self, name):
        members = self.__dict__.get("_members", {})
        if name in members:
            return members[name]
        stype = self.__dict__.get("_stype")
        group = None if stype is None else stype._unpacked_groups.get(name)  # pylint: disable=protected-access
        if group is not None:
            return UnpackedVector(self, name, group)
        raise AttributeError(f"struct field has no member '{name}'")

    @property
    def shape(self):
        return self._leaf_fields()[0].shape

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def grad(self):
        return StructField(self._stype, {k: f.grad for k, f in self._members.items()},
                           self.name + ".grad")

    def keys(self):
        return list(self._members)

    def _element(self, make_ptr):
        members = {}
        for k, f in self._members.items():
            if isinstance(f, (MatrixField, StructField)):
                members[k] = f._element(make_ptr)
            else:
                members[k] = GlobalRef(make_ptr(f), f.dtype, f.place_id())
        return Struct(self._stype, members)

    def __getitem__(self, key):
        return HostStruct(self._stype, {k: f[key] for k, f in self._members.items()},
                          lambda name, value: self._members[name].__setitem__(key, value))

    def __setitem__(self, key, value):
        if isinstance(value, Struct):
            value = value._members
        for k, v in value.items():
            if k not in self._members:
                raise QuadrantsTypeError(f"struct field '{self.name}' has no member '{k}'")
            self._members[k][key] = v

    def to_numpy(self):
        return {k: f.to_numpy() for k, f in self._members.items()}

    def from_numpy(self, arrays):
        if not isinstance(arrays, dict):
            raise ArgumentValueError(f"from_numpy: struct field '{self.name}' takes a dict "
                                     f"of arrays, one per member")
        for k, a in arrays.items():
            if k not in self._members:
                raise ArgumentValueError(f"from_numpy: struct field '{self.name}' has no "
                                         f"member '{k}'")
            self._members[k].from_numpy(a)


    def to_torch(self, device=None, *, copy=True):
        """What to_numpy() gives, as a torch tensor on `device` (default:
        the CPU); copy=False raises ValueError, as for to_numpy."""
        return torch_interop.to_torch(self, device, copy, f"struct field '{self.name}'")

    def from_torch(self, tensor):
        """from_numpy() of the tensor's values (on any device)."""
        torch_interop.from_torch(self, tensor)
    def fill(self, value):
        for f in self._members.values():
            f.fill(value)

    def copy_from(self, other):
        """Copies every element of struct field `other` (of the same struct
        type and shape) here."""
        field_module.check_copy_source(self, other, StructField)
        if other._stype != self._stype:
            raise QuadrantsTypeError(f"copy_from: struct field '{self.name}' holds "
                                     f"{self._stype!r}, the source {other._stype!r}")
        for k, f in self._members.items():
            f.copy_from(other._members[k])

    def __repr__(self):
        return f"<qd.Struct.field {self.name}: {self._stype!r}{list(self.shape)}>"


def struct(**members):
    """qd.types.struct(**members)."""
    return StructType(members)


def dataclass(cls):
    """@qd.dataclass: a struct type from a class's annotations; its
    functions (decorated with @qd.func) become methods."""
    members = dict(getattr(cls, "__annotations__", {}))
    methods = {}
    for k, v in vars(cls).items():
        if isinstance(v, functions.Func):
            methods[k] = v
        elif callable(v) and not k.startswith("__") and not isinstance(v, (type, Matrix)):
            methods[k] = functions.func(v)
    stype = StructType(members, cls.__name__, methods)
    return stype

