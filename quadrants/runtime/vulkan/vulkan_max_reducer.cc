#include "quadrants/runtime/vulkan/vulkan_max_reducer.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "quadrants/codegen/spirv/shader_abi.h"
#include "quadrants/codegen/spirv/reducer_shader.h"
#include "quadrants/codegen/spirv/sizer_bytecode.h"
#include "quadrants/codegen/spirv/spirv_tools.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/vulkan/vulkan_pipeline.h"

namespace quadrants::vulkan {
namespace reducer = codegen::spirv::reducer;
using adstack::BodyOp;

namespace {

// Past this many points a job goes to the host reducer, which refuses it
// (a device walk would run for minutes).
constexpr int64_t kMaxPoints = int64_t{1} << 40;

// Loop trips an invocation aims for on a CPU device: a quarter of the 65535
// back edges lavapipe allows an invocation, so that typical jobs finish on
// it. A GPU needs many invocations in flight to reach its bandwidth: there
// each aims for a few dozen trips, up to 65535 workgroups.
constexpr int64_t kTripBudget = 16384;
constexpr int64_t kGpuTripBudget = 128;

bool NarrowInteger(ir::PrimitiveType type) {
  switch (type) {
    case ir::PrimitiveType::kI8:
    case ir::PrimitiveType::kI16:
    case ir::PrimitiveType::kI32:
    case ir::PrimitiveType::kU8:
    case ir::PrimitiveType::kU16:
    case ir::PrimitiveType::kU32:
      return true;
    default:
      return false;
  }
}

// The shader's opcode for a body op, -1 for one it does not interpret.
int64_t ShaderOp(BodyOp op) {
  switch (op) {
    case BodyOp::kConst:
      return reducer::kConst;
    case BodyOp::kAxis:
      return reducer::kAxis;
    case BodyOp::kRead:
      return reducer::kRead;
    case BodyOp::kAdd:
      return reducer::kAdd;
    case BodyOp::kSub:
      return reducer::kSub;
    case BodyOp::kMul:
      return reducer::kMul;
    case BodyOp::kMax:
      return reducer::kMax;
    default:
      return -1;
  }
}

// The job's result from its words: kNoValue, the exact maximum, or nullopt
// when the maximum does not fit in 32 bits.
std::optional<int64_t> Decode(uint64_t words) {
  const uint32_t biased = static_cast<uint32_t>(words);
  const uint32_t flags = static_cast<uint32_t>(words >> 32);
  if (flags & reducer::kAbove)
    return std::nullopt;
  if (flags & reducer::kFits)
    return int64_t{biased} - reducer::kBias;
  if (flags & reducer::kBelow)
    return std::nullopt;
  return adstack::kNoValue;
}

}  // namespace

absl::StatusOr<std::unique_ptr<VulkanMaxReducer>> VulkanMaxReducer::Create(
    std::shared_ptr<VulkanDevice> device, DeviceAddressFn address,
    adstack::MaxReducer* fallback) {
  std::unique_ptr<VulkanMaxReducer> out(
      new VulkanMaxReducer(std::move(device), std::move(address), fallback));
  QD_RETURN_IF_ERROR(out->Initialize());
  return out;
}

absl::Status VulkanMaxReducer::Initialize() {
  QD_ASSIGN_OR_RETURN(layout_, CreatePipelineLayout(*device_));
  const std::vector<uint32_t> words = reducer::BuildReducerShader();
  const std::string what = "the adstack max-reducer shader";
  QD_RETURN_IF_ERROR(codegen::spirv::ValidateModule(words, what));
  QD_ASSIGN_OR_RETURN(pipeline_,
                      CreatePipeline(*device_, layout_, words, what));
  return CreateCommands(*device_, &commands_, &fence_);
}

VulkanMaxReducer::~VulkanMaxReducer() {
  const VulkanApi& api = device_->api();
  VkDevice d = device_->device();
  DestroyCommands(*device_, &commands_, &fence_);
  if (pipeline_ != VK_NULL_HANDLE)
    api.vkDestroyPipeline(d, pipeline_, nullptr);
  if (layout_ != VK_NULL_HANDLE)
    api.vkDestroyPipelineLayout(d, layout_, nullptr);
  DestroyBuffer(*device_, &buffer_);
}

bool VulkanMaxReducer::EncodeFastRead(const adstack::ReducerJob& job,
                                      Encoded* out) const {
  if (job.begin.size() != 1)
    return false;
  std::optional<adstack::MonotoneRead> mono =
      adstack::FindMonotoneRead(job, adstack::FoldConstants(job.code));
  if (!mono)
    return false;
  const adstack::BodyRead& read = job.reads[mono->read];
  const adstack::ResolvedRead& where = job.resolved[mono->read];
  if (where.dtype != ir::PrimitiveType::kI32 || where.base == nullptr ||
      read.indices.size() != where.extents.size())
    return false;
  int64_t offset = 0, axis_dim = -1;
  for (size_t d = 0; d < read.indices.size(); ++d) {
    const adstack::ReadIndex& index = read.indices[d];
    if (index.is_axis) {
      if (axis_dim >= 0)
        return false;  // the axis twice: a diagonal, not a contiguous run
      axis_dim = static_cast<int64_t>(d);
      continue;
    }
    if (index.value < 0 || index.value >= where.extents[d])
      return false;
    offset += index.value * where.byte_strides[d];
  }
  if (axis_dim < 0)
    return false;
  // Points whose index is out of range read nothing, which a maximum
  // ignores: the walk covers the others.
  const int64_t lo = std::max<int64_t>(job.begin[0], 0);
  const int64_t hi = std::min(job.end[0], where.extents[axis_dim]);
  const uint64_t base = address_(where.base);
  if (lo >= hi || base == 0)
    return false;
  const int64_t stride = where.byte_strides[axis_dim];
  out->words[reducer::kWordFastAddress] =
      static_cast<int64_t>(base + static_cast<uint64_t>(offset + lo * stride));
  out->words[reducer::kWordFastStride] = stride;
  out->words[reducer::kWordPoints] = hi - lo;
  out->fast = std::move(mono);
  return true;
}

std::optional<VulkanMaxReducer::Encoded> VulkanMaxReducer::Encode(
    const adstack::ReducerJob& job) const {
  const int axes = static_cast<int>(job.begin.size());
  const int code = static_cast<int>(job.code.size());
  if (job.Points() > kMaxPoints || axes == 0 || axes > reducer::kMaxAxes ||
      code == 0 || code > reducer::kMaxCode ||
      job.reads.size() > static_cast<size_t>(reducer::kMaxReads) ||
      job.resolved.size() != job.reads.size())
    return std::nullopt;
  Encoded out;
  std::vector<int64_t>& w = out.words;
  w.assign(reducer::kJobWords, 0);
  // Slot s holds axis axes - 1 - s: the innermost axis first.
  auto slot = [&](int64_t axis) { return axes - 1 - axis; };
  for (int s = 0; s < reducer::kMaxAxes; ++s) {
    const bool used = s < axes;
    w[reducer::kWordCounts + s] =
        used ? job.end[axes - 1 - s] - job.begin[axes - 1 - s] : 1;
    w[reducer::kWordBegins + s] = used ? job.begin[axes - 1 - s] : 0;
  }
  for (size_t r = 0; r < job.reads.size(); ++r) {
    const adstack::BodyRead& read = job.reads[r];
    const adstack::ResolvedRead& where = job.resolved[r];
    int64_t* words = &w[reducer::kWordReads + r * reducer::kReadWords];
    if (!NarrowInteger(where.dtype))
      return std::nullopt;
    words[1] = *codegen::spirv::sizer::TypeCode(where.dtype);
    for (int d = 0; d < reducer::kMaxReadAxes; ++d)
      words[2 + 3 * d] = -1;
    // A read without memory, or with indices that do not match its axes,
    // reads nothing: its address stays 0.
    if (where.base == nullptr || read.indices.size() != where.extents.size())
      continue;
    int64_t offset = 0;
    int used = 0;
    bool inside = true;
    for (size_t d = 0; d < read.indices.size(); ++d) {
      const adstack::ReadIndex& index = read.indices[d];
      if (!index.is_axis) {
        inside &= index.value >= 0 && index.value < where.extents[d];
        offset += index.value * where.byte_strides[d];
        continue;
      }
      if (used == reducer::kMaxReadAxes || index.value < 0 ||
          index.value >= axes)
        return std::nullopt;
      words[2 + 3 * used] = slot(index.value);
      words[3 + 3 * used] = where.extents[d];
      words[4 + 3 * used] = where.byte_strides[d];
      ++used;
    }
    if (!inside)
      continue;
    const uint64_t base = address_(where.base);
    if (base == 0)
      return std::nullopt;
    words[0] = static_cast<int64_t>(base + static_cast<uint64_t>(offset));
  }
  for (int k = 0; k < code; ++k) {
    const adstack::BodyInstr& in = job.code[k];
    int64_t* words = &w[reducer::kWordCode + k * reducer::kCodeWords];
    words[0] = ShaderOp(in.op);
    words[1] = in.a;
    words[2] = in.b;
    words[3] = in.value;
    switch (in.op) {
      case BodyOp::kConst:
        break;
      case BodyOp::kAxis:
        if (in.a < 0 || in.a >= axes)
          return std::nullopt;
        words[1] = slot(in.a);
        break;
      case BodyOp::kRead:
        if (in.a < 0 || in.a >= static_cast<int>(job.reads.size()))
          return std::nullopt;
        break;
      default:
        if (words[0] < 0 || in.a < 0 || in.a >= k || in.b < 0 || in.b >= k)
          return std::nullopt;
    }
  }
  // Enough invocations that each walks about kTripBudget loop trips; a
  // job too large for that walks more per invocation.
  const int64_t points = EncodeFastRead(job, &out) ? w[reducer::kWordPoints]
                                                    : job.Points();
  const int64_t budget = device_->cpu_device() ? kTripBudget : kGpuTripBudget;
  const int64_t per_invocation =
      out.fast ? budget : std::max<int64_t>(1, budget / (code + 1));
  const int64_t invocations = (points + per_invocation - 1) / per_invocation;
  const int64_t groups = std::clamp<int64_t>(
      (invocations + reducer::kLocalSize - 1) / reducer::kLocalSize, 1,
      max_groups_);
  out.groups = static_cast<uint32_t>(groups);
  const int64_t stride = groups * reducer::kLocalSize;
  w[reducer::kWordCodeCount] = code;
  w[reducer::kWordPoints] = points;
  w[reducer::kWordStride] = stride;
  int64_t rest = stride;
  for (int s = 0; s < reducer::kMaxAxes; ++s) {
    const int64_t count = w[reducer::kWordCounts + s];
    const bool last = s + 1 == reducer::kMaxAxes;
    w[reducer::kWordStrideDigits + s] = last ? rest : rest % count;
    rest = last ? 0 : rest / count;
  }
  return out;
}

absl::StatusOr<std::vector<uint64_t>> VulkanMaxReducer::Dispatch(
    const std::vector<Encoded>& encoded) {
  constexpr int64_t kJobBytes = 8 * reducer::kJobWords;
  const int64_t need = kJobBytes * static_cast<int64_t>(encoded.size());
  if (buffer_.buffer == VK_NULL_HANDLE || buffer_.bytes < need) {
    DestroyBuffer(*device_, &buffer_);
    QD_ASSIGN_OR_RETURN(buffer_, CreateBuffer(*device_, need, false));
  }
  for (size_t j = 0; j < encoded.size(); ++j) {
    std::memcpy(buffer_.host + j * kJobBytes, encoded[j].words.data(),
                kJobBytes);
  }
  const VulkanApi& api = device_->api();
  QD_RETURN_IF_ERROR(BeginCommands(*device_, commands_));
  api.vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  for (size_t j = 0; j < encoded.size(); ++j) {
    const uint64_t job = buffer_.address + j * kJobBytes;
    api.vkCmdPushConstants(commands_, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           codegen::spirv::abi::kPushConstantBytes, &job);
    api.vkCmdDispatch(commands_, encoded[j].groups, 1, 1);
  }
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  api.vkCmdPipelineBarrier(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0,
                           nullptr, 0, nullptr);
  QD_RETURN_IF_ERROR(SubmitAndWait(*device_, commands_, fence_));
  std::vector<uint64_t> results(encoded.size());
  for (size_t j = 0; j < encoded.size(); ++j) {
    std::memcpy(&results[j],
                buffer_.host + j * kJobBytes + 8 * reducer::kWordResult, 8);
  }
  return results;
}

absl::StatusOr<std::vector<int64_t>> VulkanMaxReducer::Reduce(
    absl::Span<const adstack::ReducerJob> jobs) {
  std::vector<int64_t> out(jobs.size(), adstack::kNoValue);
  std::vector<Encoded> encoded;
  std::vector<size_t> on_device, on_host;
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].Points() == 0 || jobs[j].code.empty())
      continue;  // an empty maximum
    std::optional<Encoded> e = Encode(jobs[j]);
    if (e) {
      encoded.push_back(std::move(*e));
      on_device.push_back(j);
    } else {
      on_host.push_back(j);
    }
  }
  if (!encoded.empty()) {
    QD_ASSIGN_OR_RETURN(std::vector<uint64_t> words, Dispatch(encoded));
    for (size_t k = 0; k < on_device.size(); ++k) {
      const size_t j = on_device[k];
      if ((words[k] >> 32) & reducer::kCutShort) {
        on_host.push_back(j);
        continue;
      }
      std::optional<int64_t> value = Decode(words[k]);
      if (value && encoded[k].fast)
        value = encoded[k].fast->Apply(*value);
      if (!value) {
        return MakeError(
            ErrorKind::kRuntime,
            absl::StrCat("adstack sizing: a maximum over ", jobs[j].Points(),
                         " points does not fit in 32 bits"));
      }
      out[j] = *value;
      ++device_jobs_;
      fast_jobs_ += encoded[k].fast ? 1 : 0;
    }
  }
  if (on_host.empty())
    return out;
  std::sort(on_host.begin(), on_host.end());
  std::vector<adstack::ReducerJob> host_jobs;
  for (size_t j : on_host)
    host_jobs.push_back(jobs[j]);
  QD_ASSIGN_OR_RETURN(std::vector<int64_t> values,
                      fallback_->Reduce(host_jobs));
  for (size_t k = 0; k < on_host.size(); ++k)
    out[on_host[k]] = values[k];
  fallback_jobs_ += static_cast<int64_t>(on_host.size());
  return out;
}

}  // namespace quadrants::vulkan
