#ifndef QUADRANTS_RUNTIME_ADSTACK_MAX_REDUCER_H_
#define QUADRANTS_RUNTIME_ADSTACK_MAX_REDUCER_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "quadrants/ir/types.h"
#include "quadrants/adstack/reducer_job.h"
#include "quadrants/adstack/reducer_spec.h"

namespace quadrants::adstack {

// Evaluates jobs' maxima, each over the cross product of its axes. The CPU
// implementation runs on the host thread pool; device implementations
// (CUDA, Vulkan) interpret the same bytecode in a kernel.
class MaxReducer {
 public:
  virtual ~MaxReducer() = default;
  // One maximum per job, kNoValue where no point has a value.
  virtual absl::StatusOr<std::vector<int64_t>> Reduce(
      absl::Span<const ReducerJob> jobs) = 0;
  // How many jobs, over the reducer's life, a device kernel or shader
  // reduced rather than host threads (counted apart in the stats, so tests
  // can tell it from a host fallback).
  virtual int64_t device_jobs() const { return 0; }
};

// `code` with operators of constants folded into constants.
std::vector<BodyInstr> FoldConstants(const std::vector<BodyInstr>& code);

// A body whose root is f(read) for one read that varies along the innermost
// axis and f a chain of steps that add, subtract, multiply by a
// non-negative constant or take a max with one: f is monotone, so the
// job's maximum is f of the read's maximum.
struct MonotoneRead {
  int read = -1;                 // index into the job's reads
  std::vector<BodyInstr> chain;  // innermost step first; `value` = const
  // f(read_max), a missing value staying missing except through max.
  int64_t Apply(int64_t read_max) const;
};
// The monotone read of `job` whose folded body is `code`, if it is one.
std::optional<MonotoneRead> FindMonotoneRead(
    const ReducerJob& job, const std::vector<BodyInstr>& code);

// Interprets `job`'s body over its points [lo, hi), linearized with the
// innermost axis fastest, in blocks of lanes. The building block of host
// reducers, and a serial reference for tests.
class BodyInterpreter {
 public:
  explicit BodyInterpreter(const ReducerJob& job);
  int64_t Reduce(int64_t lo, int64_t hi);

 private:
  // A value over a block's lanes; uniform values keep only `scalar`.
  struct Value {
    bool uniform = true;
    bool may_none = false;  // some lane may be kNoValue
    int64_t scalar = 0;
    int64_t* lanes = nullptr;
  };
  int64_t Segment(const int64_t* coords, int64_t start, int64_t len);
  int64_t FastSegment(const int64_t* coords, int64_t start, int64_t len);
  void Read(int r, const int64_t* coords, int64_t start, int64_t len,
            Value* out);

  const ReducerJob& job_;
  std::vector<BodyInstr> code_;  // `job_.code` with constants folded
  std::vector<int64_t> counts_;
  std::vector<int64_t> lanes_;
  std::vector<Value> values_;
  // A root of the form f(read) for a monotone f of constants: reduced
  // straight from memory, without lanes.
  int fast_read_ = -1;
  std::vector<BodyInstr> fast_chain_;  // innermost first; `value` = const
};

}  // namespace quadrants::adstack

#endif  // QUADRANTS_RUNTIME_ADSTACK_MAX_REDUCER_H_
