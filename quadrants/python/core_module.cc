// The C++ core as the Python module quadrants._quadrants_core: Program,
// ndarrays, and the IR builder the AST transformer drives.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "quadrants/common/binary_identity.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/logging.h"
#include "quadrants/common/options.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/program/program.h"
#include "quadrants/python/dlpack.h"
#include "quadrants/python/linalg_bindings.h"
#include "quadrants/program/scalar_access.h"
#include "quadrants/runtime/amdgpu/codegen_only.h"
#include "quadrants/runtime/backend_registry.h"
#include "quadrants/runtime/offline_cache/offline_cache.h"
#include "quadrants/transforms/type_check.h"

namespace py = pybind11;

namespace quadrants::python {
namespace {

using ir::PrimitiveType;

template <typename T>
T Unwrap(absl::StatusOr<T> value) {
  ThrowIfError(value.status());
  return std::move(*value);
}
void Check(const absl::Status& status) {
  ThrowIfError(status);
}

PrimitiveType Dtype(const std::string& name) {
  return Unwrap(ir::ParsePrimitiveType(name));
}
std::string DtypeName(PrimitiveType t) {
  return std::string(ir::PrimitiveTypeName(t));
}

// numpy dtype <-> PrimitiveType.
std::string NumpyName(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kU1:
      return "bool";
    case PrimitiveType::kI8:
      return "int8";
    case PrimitiveType::kI16:
      return "int16";
    case PrimitiveType::kI32:
      return "int32";
    case PrimitiveType::kI64:
      return "int64";
    case PrimitiveType::kU8:
      return "uint8";
    case PrimitiveType::kU16:
      return "uint16";
    case PrimitiveType::kU32:
      return "uint32";
    case PrimitiveType::kU64:
      return "uint64";
    case PrimitiveType::kF16:
      return "float16";
    case PrimitiveType::kF32:
      return "float32";
    case PrimitiveType::kF64:
      return "float64";
  }
  return "int32";
}

py::dtype NumpyDtype(PrimitiveType t) {
  return py::dtype(NumpyName(t));
}

bool FromNumpyDtype(const py::dtype& dtype, PrimitiveType* out) {
  // By kind and size: cheap enough for every launch.
  const char kind = dtype.kind();
  const py::ssize_t size = dtype.itemsize();
  static constexpr PrimitiveType kSigned[] = {
      PrimitiveType::kI8, PrimitiveType::kI16, PrimitiveType::kI32,
      PrimitiveType::kI64};
  static constexpr PrimitiveType kUnsigned[] = {
      PrimitiveType::kU8, PrimitiveType::kU16, PrimitiveType::kU32,
      PrimitiveType::kU64};
  const int log2 = size == 1   ? 0
                   : size == 2 ? 1
                   : size == 4 ? 2
                   : size == 8 ? 3
                               : -1;
  if (kind == 'b' && size == 1) {
    *out = PrimitiveType::kU1;
  } else if (kind == 'i' && log2 >= 0) {
    *out = kSigned[log2];
  } else if (kind == 'u' && log2 >= 0) {
    *out = kUnsigned[log2];
  } else if (kind == 'f' && log2 >= 1) {
    *out = log2 == 1   ? PrimitiveType::kF16
           : log2 == 2 ? PrimitiveType::kF32
                       : PrimitiveType::kF64;
  } else {
    return false;
  }
  return true;
}

ir::Constant ToConstant(py::handle value, PrimitiveType type) {
  if (py::isinstance<py::bool_>(value)) {
    return ir::Constant::Cast(ir::Constant::Bool(value.cast<bool>()), type);
  }
  if (py::isinstance<py::int_>(value)) {
    // Unsigned targets take values past int64's range; negative ones wrap,
    // as a C cast does.
    if (!ir::IsSigned(type) && !ir::IsFloat(type) &&
        !value.attr("__lt__")(0).cast<bool>()) {
      return ir::Constant::Int(type,
                               static_cast<int64_t>(value.cast<uint64_t>()));
    }
    return ir::Constant::Cast(
        ir::Constant::Int(PrimitiveType::kI64, value.cast<int64_t>()), type);
  }
  if (py::isinstance<py::float_>(value) || py::hasattr(value, "__float__")) {
    return ir::Constant::Float(type, value.cast<double>());
  }
  throw QuadrantsError(
      ErrorKind::kType,
      absl::StrCat("expected a number, got ",
                   std::string(py::str(py::type::of(value).attr("__name__")))));
}

py::object FromConstant(const ir::Constant& c) {
  if (c.is_float())
    return py::float_(c.as_float());
  if (ir::IsSigned(c.type()))
    return py::int_(c.as_int());
  return py::int_(c.as_uint());
}


// Program is not thread-safe; Python threads may still launch kernels at
// once because every method here runs with the GIL held and none releases
// it, so calls into one Program run one at a time and each launch runs
// whole. The module does not declare itself free of the GIL
// (py::mod_gil_not_used), so a free-threaded interpreter keeps the GIL on
// while it is loaded. A method that calls back into Python (numpy's astype,
// writing kernel output to sys.stdout) may let another thread run: it reads
// the Program's buffers again afterwards, never a pointer taken before.
// Memory another library owns on the backend's device (a torch CUDA
// tensor), passed to a kernel in place of an ndarray.
struct DeviceArray {
  uint64_t address = 0;
  std::string dtype;
  std::vector<int64_t> shape;
};

class PyProgram {
 public:
  explicit PyProgram(const CompileConfig& config)
      : program_(Unwrap(Program::Create(config))) {}

  Program& get() { return *program_; }
  const CompileConfig& config() const { return program_->config(); }

  int AddDense(int parent, std::vector<int> axes, std::vector<int64_t> sizes) {
    return Unwrap(
        program_->snodes().AddDense(parent, std::move(axes), std::move(sizes)));
  }
  int AddSparse(int parent, const std::string& kind, std::vector<int> axes,
                std::vector<int64_t> sizes, int64_t chunk_size) {
    const ir::SNode::Kind k = kind == "pointer"     ? ir::SNode::Kind::kPointer
                              : kind == "bitmasked" ? ir::SNode::Kind::kBitmasked
                                                    : ir::SNode::Kind::kDynamic;
    return Unwrap(program_->snodes().AddSparse(parent, k, std::move(axes),
                                               std::move(sizes), chunk_size));
  }
  // A sparse level's kind and hidden places, for the front end.
  py::dict SparseInfo(int snode) {
    const ir::SNode& n = program_->snodes().node(snode);
    py::dict info;
    info["kind"] = std::string(ir::SNodeKindName(n.kind));
    info["parent"] = n.parent;
    info["axes"] = n.axes;
    info["sizes"] = n.sizes;
    info["table"] = n.table;
    info["length"] = n.length;
    info["chunk_size"] = n.chunk_size;
    info["children"] = n.children;
    info["hidden"] = n.hidden;
    info["dtype"] = std::string(ir::PrimitiveTypeName(n.dtype));
    return info;
  }
  std::vector<int> SparseAncestors(int snode) {
    return program_->snodes().SparseAncestors(snode);
  }
  int AddPlace(int parent, const std::string& dtype, const std::string& name) {
    return Unwrap(program_->snodes().AddPlace(parent, Dtype(dtype), name));
  }
  void LinkGrad(int primal, int grad) {
    Check(program_->snodes().LinkGrad(primal, grad));
  }
  void LinkDual(int primal, int dual) {
    Check(program_->snodes().LinkDual(primal, dual));
  }
  void MarkNeedsGrad(int place) {
    Check(program_->snodes().MarkNeedsGrad(place));
  }
  std::vector<int64_t> FieldShape(int place) {
    Check(program_->MaterializeFields());
    return Unwrap(program_->snodes().Layout(place)).shape;
  }
  int ParentOf(int snode) { return program_->snodes().node(snode).parent; }
  // The number of cells along each axis from the root down to `snode`
  // (1 on axes no level indexes).
  std::vector<int64_t> SNodeShape(int snode) {
    std::vector<int64_t> shape;
    for (const auto& [axis, extent] : program_->snodes().CellAxes(snode)) {
      if (static_cast<int>(shape.size()) <= axis)
        shape.resize(axis + 1, 1);
      shape[axis] = extent;
    }
    return shape;
  }

  py::object ReadField(int place, std::vector<int64_t> index) {
    return FromConstant(Unwrap(program_->ReadField(place, index)));
  }
  void WriteField(int place, std::vector<int64_t> index, py::handle value) {
    PrimitiveType t = program_->snodes().node(place).dtype;
    Check(program_->WriteField(place, index, ToConstant(value, t)));
  }

  // The elements of `places` (one field's components) as a new array of
  // the field's shape, with a trailing component axis when there are
  // several.
  py::array FieldToNumpy(std::vector<int> places) {
    Check(program_->MaterializeFields());
    std::vector<int64_t> shape = PlacesShape(places);
    const PrimitiveType t = program_->snodes().node(places.at(0)).dtype;
    py::array out(NumpyDtype(t), shape);
    Check(program_->ReadPlaces(places, out.mutable_data()));
    return out;
  }

  // (the memory, kept alive by whoever holds it; the first element's
  // address; shape; strides in bytes; places in the same cells) of a view
  // of `place`'s elements.
  py::tuple ViewField(int place) {
    Program::FieldView view = Unwrap(program_->ViewField(place));
    return py::make_tuple(view.memory, reinterpret_cast<uintptr_t>(view.data),
                          view.shape, view.byte_strides, view.neighbours);
  }

  void FieldFromNumpy(std::vector<int> places, py::array values) {
    Check(program_->MaterializeFields());
    const std::vector<int64_t> want = PlacesShape(places);
    const PrimitiveType t = program_->snodes().node(places.at(0)).dtype;
    py::array contiguous = py::array::ensure(
        values.attr("astype")(NumpyDtype(t), py::arg("copy") = false),
        py::array::c_style);
    std::vector<int64_t> shape(contiguous.shape(),
                               contiguous.shape() + contiguous.ndim());
    if (shape != want) {
      throw QuadrantsError(
          ErrorKind::kType,
          absl::StrCat("from_numpy: field '",
                       program_->snodes().node(places[0]).name,
                       "' has a different shape than the array"));
    }
    Check(program_->WritePlaces(places, contiguous.data()));
  }

  void FieldFill(std::vector<int> places, py::handle value) {
    Check(program_->MaterializeFields());
    const PrimitiveType t = program_->snodes().node(places.at(0)).dtype;
    Check(program_->FillPlaces(places, ToConstant(value, t)));
  }

  // The host array shape of `places`: the first place's shape, and the
  // component count last when there are several.
  std::vector<int64_t> PlacesShape(const std::vector<int>& places) {
    if (places.empty())
      throw QuadrantsError(ErrorKind::kType, "no field places given");
    std::vector<int64_t> shape =
        Unwrap(program_->snodes().Layout(places[0])).shape;
    if (places.size() > 1)
      shape.push_back(static_cast<int64_t>(places.size()));
    return shape;
  }

  std::shared_ptr<Ndarray> CreateNdarray(const std::string& dtype,
                                         std::vector<int64_t> shape) {
    return Unwrap(program_->CreateNdarray(Dtype(dtype), std::move(shape)));
  }

  std::shared_ptr<CompiledKernel> Compile(const ir::Kernel& kernel) {
    return Counted(program_->Compile(kernel));
  }
  std::shared_ptr<CompiledKernel> CompileGrad(const ir::Kernel& kernel) {
    return Counted(program_->CompileGrad(kernel));
  }
  std::shared_ptr<CompiledKernel> CompileForward(const ir::Kernel& kernel) {
    return Counted(program_->CompileForward(kernel));
  }
  std::shared_ptr<CompiledKernel> CompileHvp(const ir::Kernel& kernel) {
    return Counted(program_->CompileHvp(kernel));
  }
  // The kernel cached under `key`, or None.
  std::shared_ptr<CompiledKernel> LoadCached(const std::string& key) {
    std::shared_ptr<CompiledKernel> kernel = Unwrap(program_->LoadCached(key));
    num_compiled_ += kernel != nullptr;
    return kernel;
  }
  // Kernels compiled (or loaded from the offline cache) by this Program.
  int64_t num_compiled() const { return num_compiled_; }

  void Launch(const CompiledKernel& kernel, py::list args, bool graph) {
    std::vector<KernelArgument> resolved = Arguments(kernel, args);
    LaunchOptions options;
    options.graph = graph;
    Check(program_->Launch(kernel, resolved, options));
  }

  // Runs a graph kernel's plan on the device where the backend can: `plan`
  // lists ("part", compiled kernel, arguments) and ("loop", counter
  // ndarray, body plan). False, having run nothing, where it cannot.
  bool LaunchPlan(py::list plan, uint64_t stream) {
    std::vector<KernelPlanStep> steps = PlanSteps(plan);
    return Unwrap(program_->LaunchPlan(steps, stream));
  }

  // Stream and event handles, 0 where the backend has no streams (every
  // operation on handle 0 is then a no-op, as upstream's are there).
  StreamOps* Streams() { return program_->streams(); }
  uint64_t CreateStream() {
    return Streams() ? Unwrap(Streams()->CreateStream()) : 0;
  }
  uint64_t CreateEvent() {
    return Streams() ? Unwrap(Streams()->CreateEvent()) : 0;
  }
  // Runs `op` on the backend's streams; nothing where it has none.
  void OnStreams(uint64_t handle,
                 const std::function<absl::Status(StreamOps&)>& op) {
    if (Streams() != nullptr && handle != 0)
      Check(op(*Streams()));
  }

  std::vector<KernelPlanStep> PlanSteps(py::list plan) {
    std::vector<KernelPlanStep> steps;
    for (py::handle item : plan) {
      py::tuple step = py::reinterpret_borrow<py::tuple>(item);
      KernelPlanStep& out = steps.emplace_back();
      if (step[0].cast<std::string>() == "part") {
        out.part = step[1].cast<std::shared_ptr<CompiledKernel>>();
        out.args = Arguments(*out.part, step[2].cast<py::list>());
      } else {
        out.counter = step[1].cast<Ndarray*>();
        out.body = PlanSteps(step[2].cast<py::list>());
      }
    }
    return steps;
  }

  std::vector<KernelArgument> Arguments(const CompiledKernel& kernel,
                                        py::list args) {
    const auto& params = kernel.params();
    if (args.size() != params.size()) {
      throw QuadrantsError(
          ErrorKind::kType,
          absl::StrCat("kernel '", kernel.name(), "' takes ", params.size(),
                       " arguments, got ", args.size()));
    }
    std::vector<KernelArgument> resolved;
    resolved.reserve(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      py::handle a = args[i];
      if (py::isinstance<Ndarray>(a)) {
        resolved.push_back(KernelArgument::Array(a.cast<Ndarray*>()));
      } else if (py::isinstance<DeviceArray>(a)) {
        const auto& d = a.cast<const DeviceArray&>();
        resolved.push_back(KernelArgument::Device(
            reinterpret_cast<void*>(d.address), Dtype(d.dtype), d.shape));
      } else if (py::isinstance<py::array>(a)) {
        py::array array = py::reinterpret_borrow<py::array>(a);
        PrimitiveType dtype = PrimitiveType::kI32;
        if (!FromNumpyDtype(array.dtype(), &dtype)) {
          throw QuadrantsError(
              ErrorKind::kType,
              absl::StrCat("kernel '", kernel.name(), "' argument ", i, " ('",
                           params[i].name, "'): unsupported numpy dtype ",
                           std::string(py::str(array.dtype()))));
        }
        std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
        resolved.push_back(
            KernelArgument::External(array.mutable_data(), dtype, shape));
      } else if (params[i].kind == ir::KernelParam::Kind::kScalar) {
        resolved.push_back(
            KernelArgument::Scalar(ToConstant(a, params[i].dtype)));
      } else {
        resolved.push_back(
            KernelArgument::Scalar(ir::Constant::Int(PrimitiveType::kI32, 0)));
      }
    }
    return resolved;
  }

 private:
  std::shared_ptr<CompiledKernel> Counted(
      absl::StatusOr<std::shared_ptr<CompiledKernel>> compiled) {
    std::shared_ptr<CompiledKernel> kernel = Unwrap(std::move(compiled));
    ++num_compiled_;
    return kernel;
  }

  std::unique_ptr<Program> program_;
  int64_t num_compiled_ = 0;
};

// Drives ir::IRBuilder for the AST transformer, type checking each new
// statement so Python sees its type (and any type error) immediately.
class PyBuilder {
 public:
  PyBuilder(ir::Kernel* kernel, PyProgram* program)
      : kernel_(kernel),
        builder_(kernel, &program->get().snodes()),
        options_{program->config().default_fp, program->config().default_ip} {}

  void SetGraphSection(int region, int section) {
    builder_.SetGraphSection(region, section);
  }
  void SetLocation(const std::string& file, int line) {
    builder_.SetLocation(SourceLocation{file, line});
  }

  template <typename T>
  T* Typed(T* stmt) {
    Check(transforms::TypeCheckStatement(*kernel_, *stmt, options_));
    // Casts went in before `stmt`; building continues right after it.
    ir::Block* block = stmt->parent();
    builder_.SetInsertPoint(block, block->IndexOf(stmt) + 1);
    return stmt;
  }

  ir::Stmt* ConstInt(const std::string& dtype, py::int_ value) {
    PrimitiveType t = Dtype(dtype);
    return builder_.Const(ToConstant(value, t));
  }
  ir::Stmt* ConstFloat(const std::string& dtype, double value) {
    return builder_.Const(ir::Constant::Float(Dtype(dtype), value));
  }
  ir::Stmt* ArgLoad(int arg) { return builder_.ArgLoad(arg); }
  ir::Stmt* NdarrayPtr(int arg, std::vector<ir::Stmt*> indices,
                       const std::string& label) {
    auto* ptr = builder_.NdarrayPtr(arg, std::move(indices));
    ptr->set_label(label);
    return Typed(ptr);
  }
  ir::Stmt* NdarrayShape(int arg, int axis) {
    return builder_.NdarrayShape(arg, axis);
  }
  ir::Stmt* FieldPtr(int place, std::vector<ir::Stmt*> indices,
                     const std::string& label) {
    auto* ptr = builder_.FieldPtr(place, std::move(indices));
    ptr->set_label(label);
    return Typed(ptr);
  }
  ir::Stmt* GlobalLoad(ir::Stmt* ptr, bool is_volatile) {
    return builder_.GlobalLoad(ptr, is_volatile);
  }
  // A sparse level's pool operation on the table entry `entry`.
  ir::Stmt* SNodeOp(const std::string& op, int snode, ir::Stmt* entry) {
    return builder_.Make<ir::SNodeOpStmt>(op == "acquire"
                                              ? ir::SNodeOpKind::kAcquire
                                              : ir::SNodeOpKind::kRelease,
                                          snode, entry);
  }
  void NoActivate(int snode) { kernel_->AddNoActivate(snode); }
  void GlobalStore(ir::Stmt* ptr, ir::Stmt* value) {
    Typed(builder_.GlobalStore(ptr, value));
  }
  ir::Stmt* Alloca(const std::string& dtype) {
    return builder_.Alloca(Dtype(dtype));
  }
  // A variable declared at the start of `container`'s block `which` (the
  // kernel's top level when `container` is None), so it is visible in the
  // whole region as Python's function scoping expects.
  ir::Stmt* AllocaAtStart(ir::Stmt* container, int which,
                          const std::string& dtype) {
    ir::Block* block =
        container == nullptr ? root_ : container->blocks().at(which);
    return builder_.InsertAt(block, 0,
                             std::make_unique<ir::AllocaStmt>(Dtype(dtype)));
  }
  ir::Stmt* LocalLoad(ir::Stmt* alloca) { return builder_.LocalLoad(alloca); }
  void LocalStore(ir::Stmt* alloca, ir::Stmt* value) {
    Typed(builder_.LocalStore(alloca, value));
  }
  ir::Stmt* Unary(const std::string& op, ir::Stmt* x) {
    return Typed(builder_.Unary(UnaryOp(op), x));
  }
  ir::Stmt* Cast(ir::Stmt* x, const std::string& dtype) {
    return Typed(builder_.Cast(x, Dtype(dtype)));
  }
  ir::Stmt* Binary(const std::string& op, ir::Stmt* a, ir::Stmt* b) {
    return Typed(builder_.Binary(BinaryOp(op), a, b));
  }
  ir::Stmt* Select(ir::Stmt* c, ir::Stmt* a, ir::Stmt* b) {
    return Typed(builder_.Select(c, a, b));
  }
  ir::Stmt* Atomic(const std::string& op, ir::Stmt* ptr, ir::Stmt* value) {
    return Typed(builder_.Atomic(AtomicOp(op), ptr, value));
  }
  ir::Stmt* AtomicCas(ir::Stmt* ptr, ir::Stmt* expected, ir::Stmt* desired) {
    return Typed(
        builder_.Atomic(ir::AtomicOpKind::kCas, ptr, desired, expected));
  }
  ir::Stmt* BitCast(ir::Stmt* x, const std::string& dtype) {
    return Typed(builder_.BitCast(x, Dtype(dtype)));
  }
  ir::Stmt* ThreadIndex() { return builder_.ThreadIndex(); }
  ir::Stmt* RangeFor(ir::Stmt* begin, ir::Stmt* end) {
    return Typed(builder_.RangeFor(begin, end));
  }
  ir::Stmt* StructFor(int snode) { return builder_.StructFor(snode); }
  ir::Stmt* LoopIndex(ir::Stmt* loop, int axis) {
    return Typed(builder_.LoopIndex(loop, axis));
  }
  ir::Stmt* While() { return builder_.While(); }
  void Break() { builder_.Break(); }
  void Continue() { builder_.Continue(); }
  ir::Stmt* If(ir::Stmt* cond) { return Typed(builder_.If(cond)); }
  void Assert(ir::Stmt* cond, const std::string& message,
              std::vector<ir::Stmt*> args) {
    Typed(builder_.Assert(cond, message, std::move(args)));
  }
  void Print(std::vector<std::string> pieces, std::vector<std::string> specs,
             std::vector<ir::Stmt*> values) {
    if (pieces.size() != values.size() + 1 || specs.size() != values.size()) {
      throw QuadrantsError(ErrorKind::kCompilation,
                           "print needs one more text piece than values and "
                           "one format spec per value");
    }
    Typed(
        builder_.Print(std::move(pieces), std::move(specs), std::move(values)));
  }
  ir::Stmt* Random(const std::string& dtype) {
    return builder_.Random(Dtype(dtype));
  }

  ir::Stmt* SharedArray(const std::string& dtype, int64_t num_elements) {
    return builder_.SharedArray(Dtype(dtype), num_elements);
  }
  ir::Stmt* SharedPtr(ir::Stmt* array, ir::Stmt* index) {
    return builder_.SharedPtr(array, index);
  }
  // A qd.simt primitive by its IR name; `dtype` is the result's ("" when
  // it has none).
  ir::Stmt* Simt(const std::string& op, const std::string& dtype,
                 std::vector<ir::Stmt*> operands) {
    ir::SimtOpKind kind;
    if (!ir::ParseSimtOp(op, &kind))
      throw py::value_error("unknown qd.simt primitive '" + op + "'");
    if (static_cast<int>(operands.size()) != ir::OperandCount(kind)) {
      throw py::value_error(op + " takes " +
                            std::to_string(ir::OperandCount(kind)) +
                            " operands");
    }
    return builder_.SimtOp(kind,
                           dtype.empty() ? ir::DataType::Void()
                                         : ir::DataType::Scalar(Dtype(dtype)),
                           std::move(operands));
  }
  static void SetBlockDim(ir::Stmt* loop, int block_dim) {
    loop->set_block_dim(block_dim);
  }
  static void SetLoopName(ir::Stmt* loop, std::string name) {
    loop->set_loop_name(std::move(name));
  }

  // Real functions: building moves into function `index`'s body (its top
  // level is where its variables are declared) until LeaveFunction.
  void EnterFunction(int index) {
    ir::Function* fn = FunctionAt(index);
    functions_.push_back({root_, function_});
    root_ = fn->body();
    function_ = fn;
    saved_.push_back(std::make_unique<ir::IRBuilder::Scope>(
        builder_.EnterBlock(fn->body())));
  }
  void LeaveFunction() {
    if (functions_.empty()) {
      throw QuadrantsError(ErrorKind::kCompilation,
                           "leave_function without enter_function");
    }
    saved_.pop_back();
    std::tie(root_, function_) = functions_.back();
    functions_.pop_back();
  }
  ir::Stmt* FuncArg(int index) {
    if (function_ == nullptr ||
        index >= static_cast<int>(function_->params().size()) || index < 0) {
      throw QuadrantsError(ErrorKind::kCompilation,
                           "func_arg outside of a function's parameters");
    }
    return builder_.Make<ir::FuncArgStmt>(index,
                                          function_->params()[index].type);
  }
  void Call(int index, std::vector<ir::Stmt*> args) {
    ir::Function* fn = FunctionAt(index);
    std::vector<ir::DataType> params;
    for (const ir::FunctionParam& p : fn->params())
      params.push_back(p.type);
    if (params.size() != args.size()) {
      throw QuadrantsError(
          ErrorKind::kCompilation,
          absl::StrCat("function '", fn->name(), "' takes ", params.size(),
                       " arguments, ", args.size(), " given"));
    }
    Typed(builder_.Make<ir::FuncCallStmt>(index, fn->name(), std::move(params),
                                          std::move(args)));
  }
  void Return() {
    if (function_ == nullptr) {
      throw QuadrantsError(ErrorKind::kCompilation,
                           "return outside of a function");
    }
    builder_.Make<ir::ReturnStmt>();
  }

  // Enters block `which` (0: body / then, 1: else) of container `stmt`.
  void PushBlock(ir::Stmt* stmt, int which) {
    std::vector<ir::Block*> blocks = stmt->blocks();
    if (which < 0 || which >= static_cast<int>(blocks.size())) {
      throw QuadrantsError(ErrorKind::kCompilation, "no such block");
    }
    saved_.push_back(std::make_unique<ir::IRBuilder::Scope>(
        builder_.EnterBlock(blocks[which])));
  }
  void PopBlock() { saved_.pop_back(); }

 private:
  static ir::UnaryOpKind UnaryOp(const std::string& name) {
#define QD_MATCH(kind, text) \
  if (name == text)          \
    return ir::UnaryOpKind::kind;
    QD_FOR_EACH_UNARY_OP(QD_MATCH)
#undef QD_MATCH
    throw QuadrantsError(ErrorKind::kCompilation, "unknown unary op " + name);
  }
  static ir::BinaryOpKind BinaryOp(const std::string& name) {
#define QD_MATCH(kind, text) \
  if (name == text)          \
    return ir::BinaryOpKind::kind;
    QD_FOR_EACH_BINARY_OP(QD_MATCH)
#undef QD_MATCH
    throw QuadrantsError(ErrorKind::kCompilation, "unknown binary op " + name);
  }
  static ir::AtomicOpKind AtomicOp(const std::string& name) {
#define QD_MATCH(kind, text) \
  if (name == text)          \
    return ir::AtomicOpKind::kind;
    QD_FOR_EACH_ATOMIC_OP(QD_MATCH)
#undef QD_MATCH
    throw QuadrantsError(ErrorKind::kCompilation, "unknown atomic op " + name);
  }

  ir::Function* FunctionAt(int index) {
    if (index < 0 || index >= static_cast<int>(kernel_->functions().size())) {
      throw QuadrantsError(ErrorKind::kCompilation,
                           absl::StrCat("the kernel has no function ", index));
    }
    return kernel_->functions()[index].get();
  }

  ir::Kernel* kernel_;
  ir::IRBuilder builder_;
  transforms::TypeCheckOptions options_;
  std::vector<std::unique_ptr<ir::IRBuilder::Scope>> saved_;
  ir::Block* root_ = kernel_->body();
  ir::Function* function_ = nullptr;
  std::vector<std::pair<ir::Block*, ir::Function*>> functions_;
};

// Kernel print() output goes to Python's sys.stdout, so redirections there
// (pytest's capsys, contextlib.redirect_stdout) see it.
void WriteOutput(const std::string& text) {
  if (text.empty())
    return;
  py::object stdout_ = py::module_::import("sys").attr("stdout");
  if (stdout_.is_none())
    return;
  stdout_.attr("write")(text);
  stdout_.attr("flush")();
}

// The Python exception class for an error kind; an unavailable backend is
// a QuadrantsRuntimeError in Python.
std::string KindClassName(ErrorKind kind) {
  if (kind == ErrorKind::kUnavailable)
    return "QuadrantsRuntimeError";
  return std::string(ErrorKindName(kind));
}

// A CompileConfig option member as a Python attribute of its own type; a
// Quadrants type reads and writes as its name ("f32").
template <typename T>
void BindConfigField(py::class_<CompileConfig>& cls, const char* name,
                     T CompileConfig::*member) {
  cls.def_readwrite(name, member);
}
void BindConfigField(py::class_<CompileConfig>& cls, const char* name,
                     ir::PrimitiveType CompileConfig::*member) {
  cls.def_property(
      name,
      [member](const CompileConfig& c) { return DtypeName(c.*member); },
      [member](CompileConfig& c, const std::string& t) {
        c.*member = Dtype(t);
      });
}

}  // namespace
}  // namespace quadrants::python

PYBIND11_MODULE(_quadrants_core, m) {
  using namespace quadrants;
  using namespace quadrants::python;
  m.doc() = "Quadrants C++ core";
  BindLinalg(m);
  m.def(
      "arch_unavailable_reason",
      [](const std::string& name) -> py::object {
        absl::Status status = Program::ProbeArch(Unwrap(ParseArch(name)));
        if (status.ok())
          return py::none();
        return py::str(std::string(status.message()));
      },
      "Why kernels cannot run on the arch `name` here, or None.");
  m.def(
      "arch_capabilities",
      [](const std::string& name) {
        std::vector<std::string> names;
        for (Capability capability :
             BackendRegistry::Global().capabilities(Unwrap(ParseArch(name))))
          names.emplace_back(CapabilityName(capability));
        return py::frozenset(py::cast(names));
      },
      "What the arch `name`'s backend supports in this build (qd.extension "
      "names, and host_memory, dlpack); empty for an arch this build has no "
      "backend for.");
  m.def(
      "arch_dlpack_device_type",
      [](const std::string& name) {
        return BackendRegistry::Global().dlpack_device_type(
            Unwrap(ParseArch(name)));
      },
      "DLPack's device type of the memory the arch `name` keeps arrays in "
      "(1 CPU, 2 CUDA, 10 ROCm); 0 where other libraries cannot address it.");
  m.def(
      "amdgpu_codegen_only_counts",
      [] {
        py::list counts;
        for (const amdgpu::CodegenOnlyCount& count :
             amdgpu::CodegenOnlyCounts()) {
          counts.append(
              py::make_tuple(count.target, count.compiled, count.failed));
        }
        return counts;
      },
      "(target, code objects compiled and checked, kernels failed) per "
      "target of QD_AMDGPU_CODEGEN_ONLY in this process.");

  // The log threshold (quadrants/common/logging.h) for quadrants._logging:
  // 0 debug, 1 info, 2 warning, 3 error, 4 nothing.
  m.def(
      "log_threshold", [] { return static_cast<int>(GetLogThreshold()); },
      "The least severe level written to stderr (4: nothing is).");
  m.def(
      "set_log_threshold",
      [](int level) {
        if (level < 0 || level > 4)
          throw py::value_error(
              absl::StrCat("log threshold must be in [0, 4], got ", level));
        SetLogThreshold(static_cast<LogLevel>(level));
      },
      "Sets the least severe level written to stderr (4: nothing is).");
  m.def(
      "log",
      [](int level, const std::string& file, int line,
         const std::string& text) {
        if (level < 0 || level > 3)
          throw py::value_error(
              absl::StrCat("log level must be in [0, 3], got ", level));
        LogMessage(static_cast<LogLevel>(level), file.c_str(), line).stream()
            << text;
      },
      "Writes `text` to stderr as a message of `level` from file:line; the "
      "caller has checked the level (quadrants._logging).");

  // The option registry (quadrants/common/options.def) for
  // quadrants.lang.options.
  m.def(
      "option_specs",
      [] {
        py::list specs;
        for (const options::OptionSpec& spec : options::AllOptions()) {
          py::list choices;
          for (const options::Choice& choice : options::Choices(spec))
            choices.append(py::make_tuple(choice.value, choice.meaning));
          py::dict entry;
          entry["name"] = spec.name;
          entry["env"] = spec.env;
          entry["scope"] = std::string(options::ScopeName(spec.scope));
          entry["type"] = std::string(options::TypeName(spec.type));
          entry["default"] = py::cast(options::DefaultValue(spec));
          entry["default_text"] = spec.default_value;
          entry["choices"] = choices;
          entry["accepted"] = options::DescribeAccepted(spec);
          entry["check"] = std::string(options::CheckName(spec.check));
          entry["doc"] = spec.doc;
          specs.append(entry);
        }
        return specs;
      },
      "Every declared option and environment variable, in declaration "
      "order, as dicts.");
  m.def(
      "binary_identity",
      [] {
        return CompilerIdentity("quadrants",
                                &offline_cache::OfflineCache::DefaultDirectory);
      },
      "The files and build ids of this Quadrants build: what compiled "
      "kernels cached by another build must not be mistaken for.");
  m.def("default_offline_cache_dir", &offline_cache::OfflineCache::DefaultDirectory,
        "Where the offline cache is when offline_cache_file_path is not "
        "given: $XDG_CACHE_HOME/quadrants/offline_cache, else ~/.cache/..., "
        "as the process environment says now.");
  m.def(
      "option_from_text",
      [](const std::string& name, const std::string& text) {
        const options::OptionSpec* spec = options::FindSpec(name);
        if (spec == nullptr)
          throw py::key_error(name);
        absl::StatusOr<options::Value> value = options::ParseValue(*spec, text);
        if (!value.ok())
          return py::tuple(py::make_tuple(
              py::none(), std::string(value.status().message())));
        return py::tuple(py::make_tuple(py::cast(*value), std::string()));
      },
      "(value, error) of `text` read as option `name`'s environment variable "
      "declares it: None for empty text; error is '' or names the variable, "
      "the text and what it accepts.");

  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error)
        std::rethrow_exception(error);
    } catch (const QuadrantsError& e) {
      py::object module = py::module_::import("quadrants.lang.exception");
      py::object cls = module.attr(KindClassName(e.kind()).c_str());
      PyErr_SetString(cls.ptr(), e.what());
    }
  });

  py::class_<CompileConfig> config(m, "CompileConfig");
  config.def(py::init<>())
      .def_property(
          "arch",
          [](const CompileConfig& c) { return std::string(ArchName(c.arch)); },
          [](CompileConfig& c, const std::string& name) {
            c.arch = Unwrap(ParseArch(name));
          });
  // Every option member options.def declares, by its name; types by name.
  std::vector<std::string> option_fields;
  CompileConfig::VisitOptionFields(
      [&](const char* name, ConfigRole, auto member) {
        option_fields.emplace_back(name);
        BindConfigField(config, name, member);
      });
  config.attr("option_fields") = option_fields;

  py::class_<Ndarray, std::shared_ptr<Ndarray>>(m, "Ndarray")
      .def_property_readonly(
          "dtype", [](const Ndarray& a) { return DtypeName(a.dtype()); })
      .def_property_readonly("shape",
                             [](const Ndarray& a) { return a.shape(); })
      .def_property_readonly("data_generation", &Ndarray::data_generation)
      .def(
          "device_allocation_ptr",
          [](const Ndarray& a) { return reinterpret_cast<uintptr_t>(a.data()); },
          "The address of the array's memory (a device address on GPUs).")
      .def("read",
           [](const Ndarray& a, std::vector<int64_t> index) {
             return FromConstant(Unwrap(a.Read(index)));
           })
      .def("write",
           [](Ndarray& a, std::vector<int64_t> index, py::handle value) {
             Check(a.Write(index, ToConstant(value, a.dtype())));
           })
      .def("to_numpy",
           [](Ndarray& a) {
             py::array out(NumpyDtype(a.dtype()), a.shape());
             Check(a.CopyToHost(out.mutable_data()));
             return out;
           })
      .def("from_numpy",
           [](Ndarray& a, py::array values) {
             py::array contiguous =
                 py::array::ensure(values.attr("astype")(NumpyDtype(a.dtype()),
                                                         py::arg("copy") = false),
                                   py::array::c_style);
             std::vector<int64_t> shape(contiguous.shape(),
                                        contiguous.shape() + contiguous.ndim());
             if (shape != a.shape()) {
               throw QuadrantsError(ErrorKind::kType,
                                    "from_numpy: the array's shape differs "
                                    "from the ndarray's");
             }
             Check(a.CopyFromHost(contiguous.data()));
           })
      .def("fill",
           [](Ndarray& a, py::handle value) {
             Check(a.Fill(ToConstant(value, a.dtype())));
           })
      .def(
          "to_dlpack",
          [](std::shared_ptr<Ndarray> a, int device_type, int device_id,
             bool versioned, std::vector<int> axes) {
            return NdarrayToDlpack(std::move(a), {device_type, device_id},
                                   versioned, axes);
          },
          py::arg("device_type"), py::arg("device_id"), py::arg("versioned"),
          py::arg("axes") = std::vector<int>{});

  m.def(
      "strided_to_dlpack",
      [](py::object owner, uint64_t address, const std::string& dtype,
         std::vector<int64_t> shape, std::vector<int64_t> byte_strides,
         int device_type, int device_id, bool versioned) {
        StridedMemory memory;
        memory.dtype = Dtype(dtype);
        const int64_t item = std::max(1, ir::BitWidth(memory.dtype) / 8);
        for (int64_t stride : byte_strides) {
          if (stride % item != 0) {
            throw QuadrantsError(
                ErrorKind::kRuntime,
                absl::StrCat("to_dlpack: a stride of ", stride,
                             " bytes is not a whole number of ", dtype,
                             " elements; DLPack counts strides in elements"));
          }
          memory.strides.push_back(stride / item);
        }
        memory.data = reinterpret_cast<void*>(address);
        memory.shape = std::move(shape);
        memory.owner = KeepPythonObject(std::move(owner));
        return StridedToDlpack(memory, {device_type, device_id}, versioned);
      },
      "A DLPack capsule over `address` (shape, byte strides) that keeps "
      "`owner` alive: how fields export their memory.",
      py::arg("owner"), py::arg("address"), py::arg("dtype"), py::arg("shape"),
      py::arg("byte_strides"), py::arg("device_type"), py::arg("device_id"),
      py::arg("versioned"));

  // Field memory a view shares: opaque to Python, released with the view.
  py::class_<ArrayBuffer, std::shared_ptr<ArrayBuffer>>(m, "FieldMemory");
  py::class_<DeviceArray>(m, "DeviceArray")
      .def(py::init([](uint64_t address, const std::string& dtype,
                       std::vector<int64_t> shape) {
             return DeviceArray{address, dtype, std::move(shape)};
           }),
           py::arg("address"), py::arg("dtype"), py::arg("shape"));

  py::class_<CompiledKernel, std::shared_ptr<CompiledKernel>>(m,
                                                              "CompiledKernel")
      .def_property_readonly("name", &CompiledKernel::name)
      .def_property_readonly("num_tasks", &CompiledKernel::num_tasks)
      .def_property_readonly("written_args", &CompiledKernel::written_args)
      .def_property_readonly("cache_key", &CompiledKernel::cache_key)
      .def_property_readonly("has_graph_sections",
                             [](const CompiledKernel& k) {
                               for (const CompiledTask& t : k.artifact().tasks) {
                                 if (t.graph_region >= 0)
                                   return true;
                               }
                               return false;
                             })
      .def_property_readonly("uses_fields", &CompiledKernel::uses_fields)
      .def("_debug_dump_to_string",
           [](const CompiledKernel& k) {
             return py::bytes(k.artifact().binary);
           },
           "The target code (for comparing two compiles of a kernel).")
      .def_property_readonly("has_adstacks", [](const CompiledKernel& k) {
        for (const auto& stacks : k.task_adstacks()) {
          if (!stacks.empty())
            return true;
        }
        return false;
      });

  py::class_<PyProgram>(m, "Program")
      .def(py::init<const CompileConfig&>())
      .def("add_dense", &PyProgram::AddDense)
      .def("add_sparse", &PyProgram::AddSparse)
      .def("sparse_info", &PyProgram::SparseInfo)
      .def("sparse_ancestors", &PyProgram::SparseAncestors)
      .def("add_place", &PyProgram::AddPlace)
      .def("link_grad", &PyProgram::LinkGrad)
      .def("link_dual", &PyProgram::LinkDual)
      .def("mark_needs_grad", &PyProgram::MarkNeedsGrad)
      .def("field_shape", &PyProgram::FieldShape)
      .def("parent_of", &PyProgram::ParentOf)
      .def("snode_shape", &PyProgram::SNodeShape)
      .def("read_field", &PyProgram::ReadField)
      .def("write_field", &PyProgram::WriteField)
      .def("field_to_numpy", &PyProgram::FieldToNumpy)
      .def("view_field", &PyProgram::ViewField)
      .def("field_from_numpy", &PyProgram::FieldFromNumpy)
      .def("field_fill", &PyProgram::FieldFill)
      .def("create_ndarray", &PyProgram::CreateNdarray)
      .def(
          "ndarray_from_dlpack",
          [](PyProgram& p, py::capsule capsule, int device_type,
             int device_id) {
            return NdarrayFromDlpack(std::move(capsule),
                                     {device_type, device_id},
                                     p.get().array_memory());
          },
          py::arg("capsule"), py::arg("device_type"), py::arg("device_id"))
      .def("compile", &PyProgram::Compile)
      .def("load_cached", &PyProgram::LoadCached)
      .def("launch_plan", &PyProgram::LaunchPlan, py::arg("plan"),
           py::arg("stream") = 0)
      .def("create_stream", &PyProgram::CreateStream)
      .def("create_event", &PyProgram::CreateEvent)
      .def("destroy_stream",
           [](PyProgram& p, uint64_t h) {
             p.OnStreams(h, [h](StreamOps& s) { return s.DestroyStream(h); });
           })
      .def("synchronize_stream",
           [](PyProgram& p, uint64_t h) {
             p.OnStreams(h, [h](StreamOps& s) { return s.SynchronizeStream(h); });
           })
      .def("destroy_event",
           [](PyProgram& p, uint64_t h) {
             p.OnStreams(h, [h](StreamOps& s) { return s.DestroyEvent(h); });
           })
      .def("record_event",
           [](PyProgram& p, uint64_t h, uint64_t stream) {
             p.OnStreams(h, [=](StreamOps& s) { return s.RecordEvent(h, stream); });
           })
      .def("wait_event",
           [](PyProgram& p, uint64_t h, uint64_t stream) {
             p.OnStreams(h, [=](StreamOps& s) { return s.WaitEvent(h, stream); });
           })
      .def("synchronize_event",
           [](PyProgram& p, uint64_t h) {
             p.OnStreams(h, [h](StreamOps& s) { return s.SynchronizeEvent(h); });
           })
      .def("compile_grad", &PyProgram::CompileGrad)
      .def("compile_forward", &PyProgram::CompileForward)
      .def("compile_hvp", &PyProgram::CompileHvp)
      .def("launch", &PyProgram::Launch, py::arg("kernel"), py::arg("args"),
           py::arg("graph") = false)
      .def("sync",
           [](PyProgram& p) {
             WriteOutput(p.get().TakeOutput());
             Check(p.get().Sync());
           })
      .def("flush_output",
           [](PyProgram& p) { WriteOutput(p.get().TakeOutput()); })
      .def("materialize",
           [](PyProgram& p) { Check(p.get().MaterializeFields()); })
      .def_property_readonly("num_compiled_kernels", &PyProgram::num_compiled)
      .def_property_readonly(
          "num_cpu_threads",
          [](PyProgram& p) { return p.get().num_cpu_threads(); })
      .def_property_readonly(
          "last_threads_used",
          [](PyProgram& p) { return p.get().last_launch().max_threads_used; })
      .def_property_readonly(
          "last_launch_replayed_graph",
          [](PyProgram& p) { return p.get().last_launch().graph_replayed; })
      .def_property_readonly(
          "array_memory_host_addressable",
          [](PyProgram& p) { return p.get().array_memory()->host_addressable(); })
      .def_property_readonly(
          "device_description",
          [](PyProgram& p) { return p.get().device_description(); })
      .def("update_config",
           [](PyProgram& p, const CompileConfig& config) {
             Check(p.get().UpdateConfig(config));
           })
      .def_property_readonly(
          "subgroup_size",
          [](PyProgram& p) { return p.get().simt_limits().subgroup_size; })
      .def_property_readonly(
          "device_capabilities",
          [](PyProgram& p) { return p.get().device_capabilities(); })
      .def_property_readonly(
          "max_shared_memory_bytes",
          [](PyProgram& p) { return p.get().simt_limits().max_shared_bytes; })
      // Upstream's names for what the last launch did.
      .def("get_num_offloaded_tasks_on_last_call",
           [](PyProgram& p) { return p.get().last_launch().tasks; })
      .def("get_graph_cache_used_on_last_call",
           [](PyProgram& p) { return p.get().last_launch().graph_replayed; })
      .def("get_graph_num_nodes_on_last_call",
           [](PyProgram& p) {
             const LaunchStats& last = p.get().last_launch();
             return last.graph_replayed ? last.graph_nodes : 0;
           })
      .def("get_graph_total_builds",
           [](PyProgram& p) { return p.get().graph_builds(); })
      .def("get_graph_cache_size",
           [](PyProgram& p) { return p.get().graph_cache_size(); })
      .def_property_readonly(
          "last_launch_device_loops",
          [](PyProgram& p) { return p.get().last_launch().device_loops; })
      .def_property_readonly(
          "last_launch_batched",
          [](PyProgram& p) { return p.get().last_launch().batched; })
      .def_property_readonly(
          "compile_warnings",
          [](PyProgram& p) { return p.get().compile_warnings(); })
      .def("adstack_stats",
           [](PyProgram& p) {
             const AdStackStats& s = p.get().adstack_stats();
             py::dict d;
             d["capacities"] = s.capacities;
             d["segments"] = s.segments;
             d["checkpoint_capacities"] = s.checkpoint_capacities;
             d["threads_at_once"] = s.threads_at_once;
             d["gated_rows"] = s.gated_rows;
             d["gate_counts"] = s.gate_counts;
             d["per_thread_stride"] = s.per_thread_stride;
             d["bytes_needed"] = s.bytes_needed;
             d["checkpointed"] = s.checkpointed;
             d["budget_bytes"] = s.budget_bytes;
             d["heap_bytes"] = s.heap_bytes;
             d["heap_grows"] = s.heap_grows;
             d["tree_evaluations"] = s.tree_evaluations;
             d["cache_hits"] = s.cache_hits;
             d["sizer_dispatches"] = s.sizer_dispatches;
             d["task_cache_hits"] = s.cache_hits;
             d["tree_cache_hits"] = s.tree_cache_hits;
             d["reducer_dispatches"] = s.reducer_dispatches;
             d["reducer_rounds"] = s.reducer_rounds;
             d["reducer_cache_hits"] = s.reducer_cache_hits;
             d["device_reducer_dispatches"] = s.device_reducer_dispatches;
             d["reducer_seconds"] = s.reducer_seconds;
             return d;
           })
      .def("offline_cache_stats", [](PyProgram& p) {
        const OfflineCacheStats& s = p.get().offline_cache_stats();
        py::dict d;
        d["directory"] = s.directory;
        d["hits"] = s.hits;
        d["misses"] = s.misses;
        d["rejected"] = s.rejected;
        d["store_failures"] = s.store_failures;
        d["last_store_error"] = s.last_store_error;
        return d;
      });

  py::class_<ir::Kernel>(m, "Kernel")
      .def(py::init([](const std::string& name, const std::string& file,
                       int line) {
        return std::make_unique<ir::Kernel>(name, SourceLocation{file, line});
      }))
      .def("add_scalar_param",
           [](ir::Kernel& k, const std::string& name, const std::string& t) {
             return k.AddParam(ir::KernelParam::Scalar(name, Dtype(t)));
           })
      .def("add_ndarray_param",
           [](ir::Kernel& k, const std::string& name, const std::string& t,
              int ndim) {
             return k.AddParam(ir::KernelParam::Ndarray(name, Dtype(t), ndim));
           })
      .def_property_readonly("name", &ir::Kernel::name)
      // params: (name, dtype, is_pointer) per parameter.
      .def("add_function",
           [](ir::Kernel& k, const std::string& name, const std::string& file,
              int line,
              const std::vector<std::tuple<std::string, std::string, bool>>&
                  params) {
             std::vector<ir::FunctionParam> list;
             for (const auto& [pname, dtype, pointer] : params) {
               list.push_back(
                   {pname, pointer ? ir::DataType::Pointer(Dtype(dtype))
                                   : ir::DataType::Scalar(Dtype(dtype))});
             }
             return k.AddFunction(std::make_unique<ir::Function>(
                 k, name, SourceLocation{file, line}, std::move(list)));
           })
      .def("print", [](const ir::Kernel& k) { return ir::PrintKernel(k); });

  py::class_<ir::Stmt, std::unique_ptr<ir::Stmt, py::nodelete>>(m, "Stmt")
      .def_property_readonly(
          "dtype",
          [](const ir::Stmt& s) {
            if (s.type().is_scalar() || s.type().is_pointer())
              return DtypeName(s.type().element());
            return s.type().ToString();
          })
      .def_property_readonly(
          "is_pointer", [](const ir::Stmt& s) { return s.type().is_pointer(); })
      .def_property_readonly("kind", [](const ir::Stmt& s) {
        return std::string(ir::StmtKindName(s.kind()));
      });

  const auto ref = py::return_value_policy::reference;
  py::class_<PyBuilder>(m, "Builder")
      .def(py::init<ir::Kernel*, PyProgram*>(), py::keep_alive<1, 2>(),
           py::keep_alive<1, 3>())
      .def("set_location", &PyBuilder::SetLocation)
      .def("set_graph_section", &PyBuilder::SetGraphSection)
      .def("const_int", &PyBuilder::ConstInt, ref)
      .def("const_float", &PyBuilder::ConstFloat, ref)
      .def("arg_load", &PyBuilder::ArgLoad, ref)
      .def("ndarray_ptr", &PyBuilder::NdarrayPtr, ref, py::arg("arg"),
           py::arg("indices"), py::arg("label") = "")
      .def("ndarray_shape", &PyBuilder::NdarrayShape, ref)
      .def("field_ptr", &PyBuilder::FieldPtr, ref, py::arg("place"),
           py::arg("indices"), py::arg("label") = "")
      .def("global_load", &PyBuilder::GlobalLoad, ref, py::arg("ptr"),
           py::arg("is_volatile") = false)
      .def("global_store", &PyBuilder::GlobalStore)
      .def("alloca", &PyBuilder::Alloca, ref)
      .def("alloca_at_start", &PyBuilder::AllocaAtStart, ref)
      .def("local_load", &PyBuilder::LocalLoad, ref)
      .def("local_store", &PyBuilder::LocalStore)
      .def("unary", &PyBuilder::Unary, ref)
      .def("cast", &PyBuilder::Cast, ref)
      .def("binary", &PyBuilder::Binary, ref)
      .def("select", &PyBuilder::Select, ref)
      .def("atomic", &PyBuilder::Atomic, ref)
      .def("snode_op", &PyBuilder::SNodeOp, ref)
      .def("no_activate", &PyBuilder::NoActivate)
      .def("atomic_cas", &PyBuilder::AtomicCas, ref)
      .def("bit_cast", &PyBuilder::BitCast, ref)
      .def("thread_index", &PyBuilder::ThreadIndex, ref)
      .def("range_for", &PyBuilder::RangeFor, ref)
      .def("struct_for", &PyBuilder::StructFor, ref)
      .def("loop_index", &PyBuilder::LoopIndex, ref)
      .def("while_", &PyBuilder::While, ref)
      .def("break_", &PyBuilder::Break)
      .def("continue_", &PyBuilder::Continue)
      .def("if_", &PyBuilder::If, ref)
      .def("assert_", &PyBuilder::Assert)
      .def("print_", &PyBuilder::Print)
      .def("random", &PyBuilder::Random, ref)
      .def("shared_array", &PyBuilder::SharedArray, ref)
      .def("shared_ptr", &PyBuilder::SharedPtr, ref)
      .def("simt", &PyBuilder::Simt, ref)
      .def_static("set_block_dim", &PyBuilder::SetBlockDim)
      .def_static("set_loop_name", &PyBuilder::SetLoopName)
      .def("enter_function", &PyBuilder::EnterFunction)
      .def("leave_function", &PyBuilder::LeaveFunction)
      .def("func_arg", &PyBuilder::FuncArg, ref)
      .def("call", &PyBuilder::Call)
      .def("return_", &PyBuilder::Return)
      .def("push_block", &PyBuilder::PushBlock)
      .def("pop_block", &PyBuilder::PopBlock);
}
