#ifndef QUADRANTS_CODEGEN_LLVM_LANE_FORMS_H_
#define QUADRANTS_CODEGEN_LLVM_LANE_FORMS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "quadrants/ir/snode.h"
#include "quadrants/ir/statements.h"

namespace quadrants::codegen {

// How a value varies across the SIMD lanes that run consecutive iterations
// of a parallel task together.
enum class LaneForm {
  kUniform,  // the same in every lane
  kLinear,   // lane l holds lane 0's value + l (the task index + a uniform)
  kVarying,
};

// Lane forms of a task body's values and where its control flow diverges
// across lanes. Computed to a fixpoint: a local variable is uniform only if
// every store to it stores a uniform value under uniform control, and a
// loop's exits diverge when a break or continue sits under a lane-varying
// condition.
class LaneForms {
 public:
  // `linear_struct_axis`: the struct-for task's axis that is the cell
  // number itself (a field with one axis), so consecutive lanes hold
  // consecutive indices there, and every other axis's index is 0; -1 when
  // the cells decompose over several axes.
  LaneForms(const ir::OffloadedTaskStmt& task, int linear_struct_axis);

  LaneForm Form(const ir::Stmt* s) const;
  bool Uniform(const ir::Stmt* s) const {
    return Form(s) == LaneForm::kUniform;
  }
  // Whether lanes may disagree on reaching `s` (some lanes masked off).
  bool UnderVaryingControl(const ir::Stmt* s) const {
    return varying_control_.contains(s);
  }
  // Whether the lanes of loop `loop` (or the task) may leave it, or skip to
  // its next iteration, at different times.
  bool HasDivergentExits(const ir::Stmt* loop) const {
    return divergent_exits_.contains(loop);
  }
  // Whether an adstack is pushed or popped under varying control, so its
  // depth differs per lane.
  bool HasPerLaneDepth(const ir::Stmt* stack) const {
    return per_lane_stacks_.contains(stack);
  }
  // Whether a field or ndarray address is lane-contiguous in its element:
  // the last index linear, the others uniform (element strides are the
  // emitter's to check).
  bool LastIndexLinear(const ir::Stmt* ptr) const;

 private:
  // One pass over `block`; returns whether an assumption was dropped.
  bool Visit(const ir::Block& block, bool uniform_control,
             bool uniform_since_loop, const ir::Stmt* loop);
  LaneForm Compute(const ir::Stmt& s) const;

  const ir::OffloadedTaskStmt& task_;
  const int linear_struct_axis_;
  absl::flat_hash_set<const ir::Stmt*> uniform_;
  absl::flat_hash_set<const ir::Stmt*> linear_;
  absl::flat_hash_set<const ir::Stmt*> varying_allocas_;
  absl::flat_hash_set<const ir::Stmt*> varying_control_;
  absl::flat_hash_set<const ir::Stmt*> divergent_exits_;
  absl::flat_hash_set<const ir::Stmt*> per_lane_stacks_;
};

// Why the SIMD-lane lowering cannot take `task` ("" when it can). Such
// tasks run one iteration at a time.
std::string LaneLoweringObstacle(const ir::OffloadedTaskStmt& task,
                                 bool bounds_checks, bool debug);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_LANE_FORMS_H_
