#ifndef QUADRANTS_TRANSFORMS_AUTODIFF_ADSTACK_GATE_H_
#define QUADRANTS_TRANSFORMS_AUTODIFF_ADSTACK_GATE_H_

#include <string>

#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"
#include "quadrants/ir/statements.h"

namespace quadrants::transforms::autodiff {

// Gives every task of a reverse-mode kernel whose adstacks are used only
// under one `if array[index] <op> constant` (see ir::AdStackGate) an
// AdStackRowStmt, so the launch can size the heap by the iterations that
// pass the gate. Says at debug level, per task with stacks, which gate it
// captured or why it captured none (the launch then sizes the heap for
// every thread).
void GateAdStackHeaps(ir::Kernel& kernel, const ir::SNodeTree& snodes);

// Why `task`'s stacks cannot be gated ("" when they can, with the gate's
// condition in `*passes` and its description in `*gate`).
std::string FindAdStackGate(const ir::Kernel& kernel,
                            const ir::SNodeTree& snodes,
                            const ir::OffloadedTaskStmt& task,
                            ir::Stmt** passes, ir::AdStackGate* gate);

}  // namespace quadrants::transforms::autodiff

#endif  // QUADRANTS_TRANSFORMS_AUTODIFF_ADSTACK_GATE_H_
