#ifndef QUADRANTS_TRANSFORMS_AUTODIFF_BACKUP_VALUES_H_
#define QUADRANTS_TRANSFORMS_AUTODIFF_BACKUP_VALUES_H_

#include "quadrants/ir/kernel.h"

namespace quadrants::transforms::autodiff {

// The reverse sweep reads primal values computed in blocks that do not
// enclose it (the replayed `if` branches). Each such value is stored to a
// local variable declared at the start of its task right after it is
// computed, and loaded back right before each out-of-scope use. Returns
// whether anything changed. Out-of-scope field and ndarray element pointers
// are recomputed at their uses instead (a local holds a scalar, not an
// address).
bool BackupOutOfScopeValues(ir::Kernel& kernel);

}  // namespace quadrants::transforms::autodiff

#endif  // QUADRANTS_TRANSFORMS_AUTODIFF_BACKUP_VALUES_H_
