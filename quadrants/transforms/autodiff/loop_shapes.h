#ifndef QUADRANTS_TRANSFORMS_AUTODIFF_LOOP_SHAPES_H_
#define QUADRANTS_TRANSFORMS_AUTODIFF_LOOP_SHAPES_H_

#include <vector>

#include "absl/container/flat_hash_set.h"
#include "quadrants/ir/statements.h"

// Questions reverse mode asks of a forward kernel's statements and loops.
namespace quadrants::transforms::autodiff {

// Whether `s` is a float value (or a float local) that carries an adjoint.
bool IsFloatValue(const ir::Stmt* s);

// The loop (or offloaded task) a break or continue applies to.
const ir::Stmt* JumpTarget(const ir::Stmt& jump);

// The front end lowers `while cond:` to a body that computes `cond` and then
// runs `if not cond: break`; stacked while loops rely on that shape. The
// position of that check in `loop`'s body, or -1.
int ConditionCheck(const ir::Stmt& loop);
bool StartsWithConditionCheck(const ir::Stmt& loop);

// Whether the launch may run `loop` in checkpointed segments: a range-for
// outermost in its task (loops nested in it are recomputed inside each of
// its segments instead).
bool MaySegment(const ir::Stmt& loop);

// Whether `value`, used in `loop`, is computed outside it or only from
// constants and variables the loop never writes (`written`).
bool SameEveryIteration(const ir::Stmt& loop, const ir::Stmt* value,
                        const absl::flat_hash_set<const ir::Stmt*>& written);

// Float loads directly in `loop` (not in a nested loop) whose address does
// not change across its iterations and whose field or ndarray the loop
// never writes (a write would read the gradient back in the same
// iteration).
std::vector<const ir::Stmt*> LoopInvariantLoads(const ir::Stmt& loop);

// Whether `loop` stores to a field or ndarray.
bool StoresToGlobals(const ir::Stmt& loop);

}  // namespace quadrants::transforms::autodiff

#endif  // QUADRANTS_TRANSFORMS_AUTODIFF_LOOP_SHAPES_H_
