#include "quadrants/program/program.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/options.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/ir/hash.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"
#include "quadrants/program/scalar_access.h"
#include "quadrants/runtime/backend_registry.h"
#include "quadrants/transforms/pipeline.h"

namespace quadrants {
namespace {

// Formats an assertion message the way Python's `msg % values` would for the
// common conversions (%d %i %u %f %e %g %s with flags, width and
// precision); returns false when the placeholders do not match the values.
bool FormatLikePython(const std::string& message,
                      const std::vector<ir::PrimitiveType>& types,
                      const int64_t* values, std::string* out) {
  size_t next = 0;
  std::string result;
  for (size_t i = 0; i < message.size(); ++i) {
    if (message[i] != '%') {
      result.push_back(message[i]);
      continue;
    }
    if (i + 1 < message.size() && message[i + 1] == '%') {
      result.push_back('%');
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < message.size() && std::strchr("-+ #0123456789.", message[end]))
      ++end;
    if (end >= message.size() || !std::strchr("diufeEgGs", message[end]))
      return false;
    if (next >= types.size())
      return false;
    const std::string spec = message.substr(i, end - i);
    const char conversion = message[end];
    double as_float;
    const bool is_float = ir::IsFloat(types[next]);
    if (is_float)
      std::memcpy(&as_float, &values[next], sizeof(as_float));
    char buffer[128];
    if (conversion == 's') {
      std::string text =
          is_float ? absl::StrCat(as_float) : absl::StrCat(values[next]);
      std::snprintf(buffer, sizeof(buffer), (spec + "s").c_str(), text.c_str());
    } else if (std::strchr("feEgG", conversion)) {
      std::snprintf(buffer, sizeof(buffer), (spec + conversion).c_str(),
                    is_float ? as_float : static_cast<double>(values[next]));
    } else {
      std::snprintf(
          buffer, sizeof(buffer), (spec + "lld").c_str(),
          static_cast<long long>(is_float ? static_cast<int64_t>(as_float)
                                          : values[next]));
    }
    result += buffer;
    ++next;
    i = end;
  }
  if (next != types.size())
    return false;
  *out = result;
  return true;
}

std::string DescribeArgument(const ir::KernelParam& p) {
  switch (p.kind) {
    case ir::KernelParam::Kind::kScalar:
      return absl::StrCat("a scalar of type ", ir::PrimitiveTypeName(p.dtype));
    case ir::KernelParam::Kind::kNdarray:
      return absl::StrCat("an ndarray of ", ir::PrimitiveTypeName(p.dtype),
                          " with ", p.ndim, " dimension",
                          p.ndim == 1 ? "" : "s");
    case ir::KernelParam::Kind::kField:
      return "a field";
  }
  return "?";
}

// Where QD_DUMP_IR writes: $QD_DUMP_IR_DIR, else /tmp/quadrants_ir.
std::string DumpIrDirectory() {
  return options::EnvString(options::Option::kDumpIrDir);
}

// The grad and dual places linked to the places `kernel` uses (and the duals
// of those grads).
uint64_t CompanionsHash(const ir::Kernel& kernel, const ir::SNodeTree& snodes) {
  uint64_t hash = 0x84222325cbf29ce4ULL;
  auto mix = [&](int64_t value) {
    hash = (hash ^ static_cast<uint64_t>(value)) * 0x100000001b3ULL;
  };
  ir::WalkKernel(kernel, [&](const ir::Stmt* s) {
    const auto* field = ir::DynCast<ir::FieldPtrStmt>(s);
    if (field == nullptr)
      return;
    const ir::SNode& place = snodes.node(field->snode_id());
    mix(field->snode_id());
    mix(place.grad_snode);
    mix(place.dual_snode);
    mix(place.grad_snode >= 0 ? snodes.node(place.grad_snode).dual_snode : -1);
  });
  return hash * 0xff51afd7ed558ccdULL;
}

void DumpIr(const ir::Kernel& kernel, uint64_t hash,
            transforms::AutodiffMode mode) {
  const char* suffix = mode == transforms::AutodiffMode::kReverse   ? "_grad"
                       : mode == transforms::AutodiffMode::kForward ? "_fwd"
                       : mode == transforms::AutodiffMode::kHvp     ? "_hvp"
                                                                    : "";
  const std::string dir = DumpIrDirectory();
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    std::cerr << "[quadrants] QD_DUMP_IR: cannot create " << dir << ": "
              << error.message() << std::endl;
    return;
  }
  const std::string path =
      absl::StrFormat("%s/%s%s_%016x.ir", dir, kernel.name(), suffix, hash);
  std::ofstream(path) << ir::PrintKernel(kernel, {.locations = true});
  std::cerr << "[quadrants] QD_DUMP_IR: wrote the IR of kernel '"
            << kernel.name() << "' to " << path << std::endl;
}

bool DumpIrRequested() {
  return options::EnvFlag(options::Option::kDumpIr);
}

// Bytes of a host array argument (dense, row-major).
int64_t HostArrayBytes(const KernelArgument& array) {
  int64_t count = 1;
  for (int64_t extent : array.shape)
    count *= extent;
  return count * std::max(1, ir::BitWidth(array.dtype) / 8);
}

// Whether launches of `kernel` can leave an error record: failed checks,
// assertions, adstack overflows.
bool CanRecordErrors(const CompiledKernel& kernel) {
  if (!kernel.error_sites().empty())
    return true;
  for (const auto& stacks : kernel.task_adstacks()) {
    if (!stacks.empty())
      return true;
  }
  return false;
}

// Field places and ndarray parameters a kernel may write.
}  // namespace

Program::Program(const CompileConfig& config, std::unique_ptr<Backend> backend)
    : config_(config), backend_(std::move(backend)) {
  snodes_.set_pool_budget(PoolBudget());
}

int64_t Program::PoolBudget() const {
  return static_cast<int64_t>(config_.sparse_pool_mb * 1024 * 1024);
}

Program::~Program() {
  // Queued launches may still use the kernels and arrays released below.
  (void)backend_->Synchronize();
}

absl::Status Program::ProbeArch(Arch arch) {
  return BackendRegistry::Global().Probe(arch);
}

absl::StatusOr<std::unique_ptr<Program>> Program::Create(
    const CompileConfig& config) {
  QD_ASSIGN_OR_RETURN(auto backend, BackendRegistry::Global().Create(config));
  return std::make_unique<Program>(config, std::move(backend));
}

int Program::num_cpu_threads() const {
  return backend_->num_threads();
}

absl::Status Program::MaterializeFields() {
  if (snodes_.finalized() && root_)
    return absl::OkStatus();
  const int64_t old_bytes = root_ ? snodes_.root_bytes() : 0;
  QD_RETURN_IF_ERROR(snodes_.Finalize());
  // Fields added since the last layout extend the buffer; old ones keep
  // their offsets and contents, and their address where the memory grows
  // in place.
  const int64_t bytes = snodes_.root_bytes();
  absl::Status grown = GrowRoot(old_bytes, bytes);
  if (!grown.ok()) {
    // The fields that asked for it are dropped, so the program goes on
    // with the ones it has.
    std::vector<std::string> names;
    for (int id = materialized_nodes_; id < snodes_.size(); ++id) {
      if (snodes_.node(id).kind == ir::SNode::Kind::kPlace)
        names.push_back(absl::StrCat("'", snodes_.node(id).name, "'"));
    }
    snodes_.Discard(materialized_nodes_);
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("allocating ", bytes, " bytes for fields ",
                     absl::StrJoin(names, ", "), " (",
                     bytes - old_bytes, " bytes new): ",
                     grown.message(),
                     "; these fields are discarded, the others keep their "
                     "values"));
  }
  materialized_nodes_ = snodes_.size();
  backend_->SetRoot(root_->get());
  field_generation_.resize(snodes_.size(), 0);
  return absl::OkStatus();
}

absl::Status Program::GrowRoot(int64_t old_bytes, int64_t bytes) {
  if (root_ && root_->growable())
    return root_->GrowInPlace(bytes);
  absl::StatusOr<ArrayBuffer> grown =
      root_ ? ArrayBuffer::Allocate(backend_->memory(), bytes)
            : ArrayBuffer::AllocateGrowable(backend_->memory(), bytes,
                                            kFieldReserveBytes);
  if (!grown.ok())
    return grown.status();
  if (root_) {
    std::vector<char> old(static_cast<size_t>(old_bytes));
    QD_RETURN_IF_ERROR(
        backend_->memory()->CopyToHost(old.data(), root_->get(), old_bytes));
    QD_RETURN_IF_ERROR(
        backend_->memory()->CopyFromHost(grown->get(), old.data(), old_bytes));
  }
  root_ = std::make_shared<ArrayBuffer>(*std::move(grown));
  return absl::OkStatus();
}

absl::StatusOr<Program::FieldView> Program::ViewField(int place) {
  QD_RETURN_IF_ERROR(MaterializeFields());
  QD_ASSIGN_OR_RETURN(ir::PlaceLayout layout, snodes_.Layout(place));
  if (!root_->growable()) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("field '", snodes_.node(place).name,
                                  "': this backend's field memory moves when "
                                  "fields are added, so no view of it stays "
                                  "valid"));
  }
  if (!layout.affine()) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("field '", snodes_.node(place).name,
                                  "': a blocked layout (several levels on one "
                                  "axis) is no strided array, so it has no "
                                  "view"));
  }
  QD_RETURN_IF_ERROR(Sync());
  FieldView view;
  view.memory = root_;
  view.data = root_->get() + layout.offset;
  view.shape = std::move(layout.shape);
  view.byte_strides = std::move(layout.axis_stride);
  for (int child : snodes_.node(snodes_.node(place).parent).children) {
    if (child != place)
      view.neighbours.push_back(child);
  }
  return view;
}

absl::StatusOr<char*> Program::FieldAddress(int place,
                                            absl::Span<const int64_t> index) {
  QD_RETURN_IF_ERROR(MaterializeFields());
  QD_ASSIGN_OR_RETURN(ir::PlaceLayout layout, snodes_.Layout(place));
  if (index.size() != layout.shape.size()) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("field '", snodes_.node(place).name, "' needs ",
                     layout.shape.size(), " indices, got ", index.size()));
  }
  for (size_t axis = 0; axis < index.size(); ++axis) {
    if (index[axis] < 0 || index[axis] >= layout.shape[axis]) {
      // An assertion error, as upstream's checked host access raises.
      return MakeError(ErrorKind::kAssertion,
                       absl::StrCat("index [", absl::StrJoin(index, ", "),
                                    "] is out of bounds for field '",
                                    snodes_.node(place).name, "' of shape (",
                                    absl::StrJoin(layout.shape, ", "), ")"));
    }
  }
  return root_->get() + layout.ByteOffset({index.begin(), index.end()});
}

absl::StatusOr<ir::Constant> Program::ReadField(
    int place, absl::Span<const int64_t> index) {
  QD_ASSIGN_OR_RETURN(char* address, FieldAddress(place, index));
  const ir::PrimitiveType type = snodes_.node(place).dtype;
  int64_t element = 0;
  QD_RETURN_IF_ERROR(backend_->memory()->CopyToHost(
      &element, address, std::max(1, ir::BitWidth(type) / 8)));
  return ReadScalar(&element, type);
}

absl::Status Program::WriteField(int place, absl::Span<const int64_t> index,
                                 const ir::Constant& value) {
  QD_ASSIGN_OR_RETURN(char* address, FieldAddress(place, index));
  const ir::PrimitiveType type = snodes_.node(place).dtype;
  int64_t element = 0;
  WriteScalar(&element, type, value);
  QD_RETURN_IF_ERROR(backend_->memory()->CopyFromHost(
      address, &element, std::max(1, ir::BitWidth(type) / 8)));
  ++field_generation_[place];
  return absl::OkStatus();
}

absl::StatusOr<PlaceAccess> Program::Places(absl::Span<const int> places) {
  QD_RETURN_IF_ERROR(MaterializeFields());
  if (places.empty())
    return MakeError(ErrorKind::kType, "host access to no field place");
  std::vector<ir::PlaceLayout> layouts;
  for (int place : places) {
    QD_ASSIGN_OR_RETURN(ir::PlaceLayout layout, snodes_.Layout(place));
    if (!layouts.empty() && (snodes_.node(place).dtype !=
                                 snodes_.node(places[0]).dtype ||
                             layout.shape != layouts.front().shape)) {
      return MakeError(
          ErrorKind::kType,
          absl::StrCat("host access to field places of different types or "
                       "shapes ('",
                       snodes_.node(places[0]).name, "', '",
                       snodes_.node(place).name, "')"));
    }
    layouts.push_back(std::move(layout));
  }
  const int64_t bytes =
      std::max(1, ir::BitWidth(snodes_.node(places[0]).dtype) / 8);
  return PlaceAccess(*backend_->memory(), root_->get(), std::move(layouts),
                     bytes);
}

absl::Status Program::ReadPlaces(absl::Span<const int> places, void* out) {
  QD_ASSIGN_OR_RETURN(PlaceAccess access, Places(places));
  return access.Read(out);
}

absl::Status Program::WritePlaces(absl::Span<const int> places,
                                  const void* in) {
  QD_ASSIGN_OR_RETURN(PlaceAccess access, Places(places));
  QD_RETURN_IF_ERROR(access.Write(in));
  for (int place : places)
    NoteFieldWrite(place);
  return absl::OkStatus();
}

absl::Status Program::FillPlaces(absl::Span<const int> places,
                                 const ir::Constant& value) {
  QD_ASSIGN_OR_RETURN(PlaceAccess access, Places(places));
  int64_t element = 0;
  WriteScalar(&element, snodes_.node(places[0]).dtype, value);
  QD_RETURN_IF_ERROR(access.Fill(&element));
  for (int place : places)
    NoteFieldWrite(place);
  return absl::OkStatus();
}

void Program::NoteFieldWrite(int place) {
  if (place >= 0 && place < static_cast<int>(field_generation_.size())) {
    ++field_generation_[place];
  }
}

uint64_t Program::field_write_generation(int place) const {
  return place >= 0 && place < static_cast<int>(field_generation_.size())
             ? field_generation_[place]
             : 0;
}

absl::StatusOr<std::shared_ptr<Ndarray>> Program::CreateNdarray(
    ir::PrimitiveType dtype, std::vector<int64_t> shape) {
  return Ndarray::Create(dtype, std::move(shape), backend_->memory());
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> Program::Compile(
    const ir::Kernel& kernel) {
  return CompileVariant(kernel, transforms::AutodiffMode::kNone);
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> Program::LoadCached(
    const std::string& key) {
  QD_RETURN_IF_ERROR(MaterializeFields());
  return backend_->LoadCached(key, snodes_);
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> Program::CompileGrad(
    const ir::Kernel& kernel) {
  return CompileVariant(kernel, transforms::AutodiffMode::kReverse);
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> Program::CompileForward(
    const ir::Kernel& kernel) {
  return CompileVariant(kernel, transforms::AutodiffMode::kForward);
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> Program::CompileHvp(
    const ir::Kernel& kernel) {
  return CompileVariant(kernel, transforms::AutodiffMode::kHvp);
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> Program::CompileVariant(
    const ir::Kernel& kernel, transforms::AutodiffMode mode) {
  // A forced segment length needs the support at every launch.
  const bool lazy = mode == transforms::AutodiffMode::kReverse &&
                    backend_->checkpoints_lazily() &&
                    config_.ad_stack_segment_length <= 0;
  return CompileVariant(kernel, mode, /*checkpointing=*/!lazy);
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> Program::CompileVariant(
    const ir::Kernel& kernel, transforms::AutodiffMode mode,
    bool checkpointing) {
  QD_RETURN_IF_ERROR(MaterializeFields());
  const uint64_t hash = ir::StructuralHash(kernel);
  // A derivative kernel depends on the companions linked to the places it
  // uses when it compiles; they key it too.
  const uint64_t companions = mode == transforms::AutodiffMode::kNone
                                  ? 0
                                  : CompanionsHash(kernel, snodes_);
  const uint64_t key = hash ^ (config_.CodegenHash() * 0x9e3779b97f4a7c15ULL) ^
                       (static_cast<uint64_t>(mode) * 0x5bd1e995ULL) ^
                       (checkpointing ? 0 : 0xc2b2ae3d27d4eb4fULL) ^ companions;
  compile_warnings_.clear();
  if (auto it = cache_.find(key); it != cache_.end())
    return it->second;

  std::unique_ptr<ir::Kernel> lowered = ir::CloneKernel(kernel);
  transforms::PipelineOptions options;
  options.types = {config_.default_fp, config_.default_ip};
  options.snodes = &snodes_;
  options.autodiff = mode;
  options.adstack_enabled = config_.ad_stack_experimental_enabled;
  options.stack_trig_derivatives = backend_->fuses_sin_cos();
  options.keep_dead_stores = config_.checks_bounds();
  options.checkpointing = checkpointing;
  if (config_.debug)
    options.verify_each_pass = true;
  QD_RETURN_IF_ERROR(transforms::LowerToTasks(*lowered, options));
  if (config_.print_ir)
    std::cerr << ir::PrintKernel(*lowered);
  if (DumpIrRequested())
    DumpIr(*lowered, hash, mode);
  const int64_t store_failures = backend_->offline_cache_stats().store_failures;
  QD_ASSIGN_OR_RETURN(std::shared_ptr<CompiledKernel> compiled,
                      backend_->Compile(*lowered, snodes_));
  const OfflineCacheStats& cache = backend_->offline_cache_stats();
  if (store_failures == 0 && cache.store_failures > 0) {
    // Once per session: the kernel runs, only later runs lose the cache.
    compile_warnings_.push_back(absl::StrCat(
        "kernel '", kernel.name(),
        "': the offline cache cannot store kernels (", cache.last_store_error,
        "); kernels are compiled again in every run. Set "
        "offline_cache_file_path to a writable directory or "
        "offline_cache=False"));
  }
  if (config_.ad_stack_size <= 0)
    WarnAboutDefaultSizedStacks(*compiled);
  if (!checkpointing && mode == transforms::AutodiffMode::kReverse) {
    std::shared_ptr<const ir::Kernel> source = ir::CloneKernel(kernel);
    compiled->set_checkpointed_variant([this, source, mode] {
      return CompileVariant(*source, mode, /*checkpointing=*/true);
    });
  }
  cache_[key] = compiled;
  return compiled;
}

void Program::WarnAboutDefaultSizedStacks(const CompiledKernel& kernel) {
  std::vector<std::string> seen;
  for (const auto& stacks : kernel.task_adstacks()) {
    for (const AdStackSpec& stack : stacks) {
      if (stack.static_capacity > 0 || stack.size_expr)
        continue;
      const std::string where = stack.loc.ToString();
      if (std::find(seen.begin(), seen.end(), where) != seen.end())
        continue;
      seen.push_back(where);
      compile_warnings_.push_back(absl::StrCat(
          "kernel '", kernel.name(), "': the trip count of the loop at ", where,
          " is outside what launch-time sizing understands; its adstack uses "
          "default_ad_stack_size=",
          config_.default_ad_stack_size,
          " slots (a longer loop overflows: raise default_ad_stack_size or set "
          "ad_stack_size)",
          DumpIrRequested()
              ? absl::StrCat("; its IR is in ", DumpIrDirectory())
              : std::string("; set QD_DUMP_IR=1 to write its IR to a file")));
    }
  }
}

absl::Status Program::CheckArguments(
    const CompiledKernel& kernel, absl::Span<const KernelArgument> args) const {
  const auto& params = kernel.params();
  if (args.size() != params.size()) {
    return MakeError(
        ErrorKind::kType,
        absl::StrCat("kernel '", kernel.name(), "' takes ", params.size(),
                     " arguments, got ", args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::KernelParam& p = params[i];
    const KernelArgument& a = args[i];
    auto mismatch = [&](const std::string& found) {
      return MakeError(ErrorKind::kType,
                       absl::StrCat("kernel '", kernel.name(), "' argument ", i,
                                    " ('", p.name, "') expects ",
                                    DescribeArgument(p), ", got ", found));
    };
    switch (p.kind) {
      case ir::KernelParam::Kind::kScalar:
        if (a.kind != KernelArgument::Kind::kScalar)
          return mismatch("an array");
        break;
      case ir::KernelParam::Kind::kNdarray: {
        if (a.kind == KernelArgument::Kind::kScalar)
          return mismatch("a scalar");
        const bool owned = a.kind == KernelArgument::Kind::kNdarray;
        if (owned && a.ndarray == nullptr)
          return mismatch("a null ndarray");
        const ir::PrimitiveType dtype = owned ? a.ndarray->dtype() : a.dtype;
        const size_t ndim = owned ? a.ndarray->shape().size() : a.shape.size();
        if (dtype != p.dtype || static_cast<int>(ndim) != p.ndim) {
          return mismatch(absl::StrCat("an array of ",
                                       ir::PrimitiveTypeName(dtype), " with ",
                                       ndim, " dimensions"));
        }
        break;
      }
      case ir::KernelParam::Kind::kField:
        break;  // fields are addressed through the SNode tree
    }
  }
  return absl::OkStatus();
}

absl::Status Program::Launch(const CompiledKernel& kernel,
                             absl::Span<const KernelArgument> args,
                             const LaunchOptions& options) {
  QD_RETURN_IF_ERROR(CheckArguments(kernel, args));
  std::vector<ResolvedArgument> resolved(args.size());
  // Host arrays the backend cannot address, copied in and (when written)
  // back out around the launch.
  std::vector<std::pair<size_t, ArrayBuffer>> staged;
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArgument& a = args[i];
    if (a.kind != KernelArgument::Kind::kExternal) {
      QD_RETURN_IF_ERROR(Resolve(kernel, i, a, &resolved[i]));
      continue;
    }
    resolved[i].data = a.data;
    resolved[i].shape = a.shape;
    if (backend_->stages_host_arrays()) {
      QD_ASSIGN_OR_RETURN(ArrayBuffer copy, StageHostArray(a));
      resolved[i].data = copy.get();
      staged.emplace_back(i, std::move(copy));
    }
  }
  QD_ASSIGN_OR_RETURN(
      BackendLaunchStats stats,
      backend_->Launch(kernel, resolved, field_generation_, options));
  last_launch_ = {stats.tasks, stats.max_threads_used, stats.graph_replayed,
                  stats.batched, 0, stats.graph_nodes};
  const CompiledKernel& ran = stats.ran != nullptr ? *stats.ran : kernel;
  if (stats.graph_replayed)
    graph_builds_ += graph_kernels_.insert(&kernel).second;
  if (CanRecordErrors(ran))
    unsynced_.emplace_back(stats.launch_id, &ran);
  NoteWrites(kernel, args);
  if (!staged.empty())
    QD_RETURN_IF_ERROR(UnstageHostArrays(kernel, args, staged));
  RetireStaging(std::move(staged));
  CollectPrints(ran);
  // Backends that finish each launch before returning report its errors
  // now; queued launches report theirs at the next sync.
  if (!backend_->queues_launches())
    CollectRuntimeError();
  return absl::OkStatus();
}

absl::Status Program::Resolve(const CompiledKernel& kernel, size_t i,
                              const KernelArgument& a,
                              ResolvedArgument* out) const {
  switch (a.kind) {
    case KernelArgument::Kind::kScalar:
      out->slot = ArgumentSlot(
          ir::Constant::Cast(a.scalar, kernel.params()[i].dtype));
      break;
    case KernelArgument::Kind::kNdarray:
      out->data = a.ndarray->data();
      out->shape = a.ndarray->shape();
      out->data_generation = a.ndarray->data_generation();
      break;
    case KernelArgument::Kind::kDevice:
      if (backend_->memory()->host_addressable()) {
        return MakeError(
            ErrorKind::kType,
            absl::StrCat("kernel '", kernel.name(), "' argument ", i, " ('",
                         kernel.params()[i].name,
                         "'): device memory of another library is an "
                         "argument on a GPU backend only"));
      }
      out->data = a.data;
      out->shape = a.shape;
      break;
    case KernelArgument::Kind::kExternal:
      out->data = a.data;
      out->shape = a.shape;
      break;
  }
  return absl::OkStatus();
}

void Program::NoteWrites(const CompiledKernel& kernel,
                         absl::Span<const KernelArgument> args) {
  // Only what the kernel may have written changes generation.
  for (int place : kernel.written_snodes())
    NoteFieldWrite(place);
  for (int arg : kernel.written_args()) {
    if (args[arg].kind == KernelArgument::Kind::kNdarray)
      args[arg].ndarray->BumpDataGeneration();
  }
}

absl::StatusOr<bool> Program::ResolvePlan(
    absl::Span<const KernelPlanStep> plan, std::vector<PlanStep>* out) const {
  for (const KernelPlanStep& step : plan) {
    PlanStep& resolved = out->emplace_back();
    if (step.part == nullptr) {
      if (step.counter == nullptr ||
          step.counter->dtype() != ir::PrimitiveType::kI32)
        return false;
      resolved.counter = step.counter->data();
      QD_ASSIGN_OR_RETURN(bool body, ResolvePlan(step.body, &resolved.body));
      if (!body)
        return false;
      continue;
    }
    const CompiledKernel& kernel = *step.part;
    QD_RETURN_IF_ERROR(CheckArguments(kernel, step.args));
    resolved.part = step.part;
    resolved.args.resize(step.args.size());
    for (size_t i = 0; i < step.args.size(); ++i) {
      // Host arrays are staged around each launch: not in a plan.
      if (step.args[i].kind == KernelArgument::Kind::kExternal &&
          backend_->stages_host_arrays()) {
        return false;
      }
      QD_RETURN_IF_ERROR(Resolve(kernel, i, step.args[i], &resolved.args[i]));
    }
  }
  return true;
}

absl::StatusOr<bool> Program::LaunchPlan(absl::Span<const KernelPlanStep> plan,
                                         uint64_t stream) {
  std::vector<PlanStep> resolved;
  QD_ASSIGN_OR_RETURN(bool ok, ResolvePlan(plan, &resolved));
  std::vector<uint64_t> launch_ids;
  int graph_nodes = 0;
  if (ok) {
    QD_ASSIGN_OR_RETURN(
        ok, backend_->LaunchPlan(resolved, field_generation_, stream,
                                 &launch_ids, &graph_nodes));
  }
  if (!ok)
    return false;
  // The parts, in the order LaunchPlan numbered them.
  std::vector<const KernelPlanStep*> parts;
  std::function<void(absl::Span<const KernelPlanStep>)> collect =
      [&](absl::Span<const KernelPlanStep> steps) {
        for (const KernelPlanStep& step : steps) {
          if (step.part != nullptr)
            parts.push_back(&step);
          else
            collect(step.body);
        }
      };
  collect(plan);
  int tasks = 0;
  for (size_t k = 0; k < parts.size() && k < launch_ids.size(); ++k) {
    if (CanRecordErrors(*parts[k]->part))
      unsynced_.emplace_back(launch_ids[k], parts[k]->part.get());
    NoteWrites(*parts[k]->part, parts[k]->args);
    tasks += parts[k]->part->num_tasks();
  }
  if (!parts.empty())
    graph_builds_ += graph_kernels_.insert(parts[0]->part.get()).second;
  int loops = 0;
  std::function<void(absl::Span<const KernelPlanStep>)> count =
      [&](absl::Span<const KernelPlanStep> steps) {
        for (const KernelPlanStep& step : steps) {
          if (step.part == nullptr) {
            ++loops;
            count(step.body);
          }
        }
      };
  count(plan);
  last_launch_ = {tasks, 0, true, false, loops, graph_nodes};
  return true;
}

void Program::RetireStaging(
    std::vector<std::pair<size_t, ArrayBuffer>> staged) {
  for (auto& [arg, copy] : staged) {
    retired_staging_bytes_ += copy.size();
    retired_staging_.push_back(std::move(copy));
  }
  // Bounds what a loop of launches over large host arrays holds.
  constexpr int64_t kMaxRetiredBytes = int64_t{1} << 30;
  if (retired_staging_bytes_ > kMaxRetiredBytes &&
      backend_->Synchronize().ok()) {
    retired_staging_.clear();
    retired_staging_bytes_ = 0;
  }
}

absl::StatusOr<ArrayBuffer> Program::StageHostArray(
    const KernelArgument& array) {
  const int64_t bytes = HostArrayBytes(array);
  absl::StatusOr<ArrayBuffer> copy =
      ArrayBuffer::Allocate(backend_->memory(), bytes);
  if (!copy.ok()) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("allocating ", bytes,
                                  " bytes for a copy of a numpy argument: ",
                                  copy.status().message()));
  }
  QD_RETURN_IF_ERROR(copy->memory().CopyFromHost(copy->get(), array.data,
                                                 bytes));
  return copy;
}

absl::Status Program::UnstageHostArrays(
    const CompiledKernel& kernel, absl::Span<const KernelArgument> args,
    absl::Span<const std::pair<size_t, ArrayBuffer>> staged) {
  const auto& written = kernel.written_args();
  for (const auto& [arg, copy] : staged) {
    if (std::find(written.begin(), written.end(), static_cast<int>(arg)) ==
        written.end()) {
      continue;  // read-only in this kernel: nothing to copy back
    }
    QD_RETURN_IF_ERROR(copy.memory().CopyToHost(args[arg].data, copy.get(),
                                                HostArrayBytes(args[arg])));
  }
  return absl::OkStatus();
}

void Program::CollectPrints(const CompiledKernel& kernel) {
  PrintBatch batch = backend_->TakePrints();
  const auto& sites = kernel.print_sites();
  for (const PrintRecord& record : batch.records) {
    if (record.site < 0 || record.site >= static_cast<int>(sites.size()) ||
        record.values.size() != sites[record.site].types.size()) {
      absl::StrAppend(&pending_output_, "[Quadrants] kernel '", kernel.name(),
                      "' wrote an unreadable print record\n");
      continue;
    }
    pending_output_ +=
        ir::FormatPrintRecord(sites[record.site], record.values.data());
  }
  if (batch.dropped > 0) {
    absl::StrAppend(&pending_output_,
                    "[Quadrants] the print buffer was full: ", batch.dropped,
                    " print(s) of kernel '", kernel.name(),
                    "' were dropped (later launches get a larger buffer)\n");
  }
}

std::string Program::TakeOutput() {
  std::string output = std::move(pending_output_);
  pending_output_.clear();
  return output;
}

void Program::CollectRuntimeError() {
  absl::optional<RuntimeErrorRecord> record = backend_->TakeError();
  std::vector<std::pair<uint64_t, const CompiledKernel*>> launches;
  launches.swap(unsynced_);
  if (!record || !pending_error_.ok())
    return;
  const CompiledKernel* kernel = nullptr;
  for (const auto& [launch, k] : launches) {
    if (launch == record->launch)
      kernel = k;
  }
  if (kernel == nullptr && launches.size() == 1)
    kernel = launches[0].second;
  if (kernel == nullptr) {
    pending_error_ = MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("a kernel launched since the last sync recorded a "
                     "run-time error (code ", static_cast<int>(record->code),
                     ") that names no known launch"));
    return;
  }
  ErrorKind kind = ErrorKind::kRuntime;
  std::string message = DescribeRuntimeError(*kernel, *record, &kind);
  pending_error_ = MakeError(kind, message);
}

std::string Program::DescribeRuntimeError(const CompiledKernel& kernel,
                                          const RuntimeErrorRecord& record,
                                          ErrorKind* kind) const {
  const auto& sites = kernel.error_sites();
  *kind = ErrorKind::kAssertion;
  if (record.code == RuntimeErrorRecord::Code::kAdStackOverflow) {
    const int task = static_cast<int>(record.values[0]);
    const auto& stacks = kernel.task_adstacks();
    std::string loop = "<unknown loop>";
    if (task >= 0 && task < static_cast<int>(stacks.size()) &&
        record.values[1] < static_cast<int64_t>(stacks[task].size())) {
      loop = stacks[task][record.values[1]].loc.ToString();
    }
    return absl::StrCat("Adstack overflow in kernel '", kernel.name(),
                        "' (task ", task, "): the adstack of the loop at ",
                        loop, " needs more than its ", record.values[2],
                        " slots; raise qd.init(ad_stack_size=...) or "
                        "default_ad_stack_size");
  }
  if (record.site < 0 || record.site >= static_cast<int>(sites.size())) {
    *kind = ErrorKind::kRuntime;
    return absl::StrCat("kernel '", kernel.name(),
                        "' reported an unknown run-time error");
  }
  const ErrorSite& site = sites[record.site];
  if (record.code == RuntimeErrorRecord::Code::kPoolExhausted) {
    *kind = ErrorKind::kRuntime;
    return absl::StrCat(
        "kernel '", kernel.name(), "': activating a cell at ",
        site.loc.ToString(), " needs a block from ", site.description,
        "; all its ", record.values[0],
        " blocks are in use; the write was dropped. Deactivate cells, or "
        "give the pools more memory with qd.init(sparse_pool_mb=...)");
  }
  if (record.code == RuntimeErrorRecord::Code::kOutOfBound) {
    return absl::StrCat("kernel '", kernel.name(), "': Out of bound access to ",
                        site.description, " at ", site.loc.ToString(),
                        ": index ", record.values[1], " is outside [0, ",
                        record.values[2], ") on axis ", record.values[0]);
  }
  std::string formatted;
  if (!site.value_types.empty() &&
      FormatLikePython(site.description, site.value_types, record.values,
                       &formatted)) {
    return absl::StrCat("kernel '", kernel.name(), "': assertion failed at ",
                        site.loc.ToString(), ": ", formatted);
  }
  std::vector<std::string> values;
  for (size_t k = 0; k < site.value_types.size() && k < 3; ++k) {
    if (ir::IsFloat(site.value_types[k])) {
      double v;
      std::memcpy(&v, &record.values[k], sizeof(v));
      values.push_back(absl::StrCat(v));
    } else {
      values.push_back(absl::StrCat(record.values[k]));
    }
  }
  std::string message =
      absl::StrCat("kernel '", kernel.name(), "': assertion failed at ",
                   site.loc.ToString(), ": ", site.description);
  if (!values.empty())
    absl::StrAppend(&message, " (values: ", absl::StrJoin(values, ", "), ")");
  return message;
}

absl::Status Program::Sync() {
  QD_RETURN_IF_ERROR(backend_->Synchronize());
  retired_staging_.clear();
  retired_staging_bytes_ = 0;
  CollectRuntimeError();
  absl::Status error = pending_error_;
  pending_error_ = absl::OkStatus();
  return error;
}

void Program::Reset() {
  (void)backend_->Synchronize();
  unsynced_.clear();
  retired_staging_.clear();
  retired_staging_bytes_ = 0;
  cache_.clear();
  pending_error_ = absl::OkStatus();
  pending_output_.clear();
  backend_->TakeError();
  snodes_ = ir::SNodeTree();
  snodes_.set_pool_budget(PoolBudget());
  materialized_nodes_ = 1;
  root_.reset();
  backend_->SetRoot(nullptr);
  field_generation_.clear();
}

}  // namespace quadrants
