#ifndef QUADRANTS_CODEGEN_LLVM_SIMT_TARGET_H_
#define QUADRANTS_CODEGEN_LLVM_SIMT_TARGET_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "llvm/IR/IRBuilder.h"
#include "quadrants/ir/op_kinds.h"

namespace quadrants::codegen {

// How one GPU target spells qd.simt's block, subgroup and warp primitives
// (ir::SimtOpKind) in LLVM IR. A target without them (the CPU) has none.
struct SimtTarget {
  // The address space of block-shared memory.
  unsigned shared_address_space = 3;
  // Emits `op` on `args` (each in its IR type's register form), returning
  // its value, or nullptr for a primitive without one; `result` is the
  // result's register type (void for none). An error names a primitive the
  // target lacks.
  std::function<absl::StatusOr<llvm::Value*>(
      llvm::IRBuilder<>&, ir::SimtOpKind, const std::vector<llvm::Value*>&,
      llvm::Type* result)>
      emit;
};

// `value`, an emitter's result, in the register type `result` the IR
// asks for: integers widen or narrow; a void result or an error passes.
absl::StatusOr<llvm::Value*> FitSimtResult(llvm::IRBuilder<>& b,
                                           absl::StatusOr<llvm::Value*> value,
                                           llvm::Type* result);

// Shuffles a value of any width through a 32-bit shuffle: `shuffle32`
// moves one i32 word, so wider values move as several words and narrower
// ones widen first.
llvm::Value* ShuffleWords(
    llvm::IRBuilder<>& b, llvm::Value* value,
    const std::function<llvm::Value*(llvm::Value*)>& shuffle32);

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_LLVM_SIMT_TARGET_H_
