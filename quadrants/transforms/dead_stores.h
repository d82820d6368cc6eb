#ifndef QUADRANTS_TRANSFORMS_DEAD_STORES_H_
#define QUADRANTS_TRANSFORMS_DEAD_STORES_H_

#include "quadrants/ir/kernel.h"

namespace quadrants::transforms {

// Dead store elimination: removes assignments to local variables that no
// later statement can read (every path from the store overwrites the
// variable or ends the kernel first), and adstacks that are pushed and
// popped but never read, with their pushes and pops. The values those
// stores wrote are left for DCE. Returns whether the kernel changed.
bool EliminateDeadStores(ir::Kernel& kernel);

}  // namespace quadrants::transforms

#endif  // QUADRANTS_TRANSFORMS_DEAD_STORES_H_
