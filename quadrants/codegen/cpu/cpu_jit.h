#ifndef QUADRANTS_CODEGEN_CPU_CPU_JIT_H_
#define QUADRANTS_CODEGEN_CPU_CPU_JIT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

namespace quadrants::codegen {

// ORC LLJIT for the host. Each compiled kernel gets its own JITDylib, so
// every kernel's task functions can share names.
class CpuJit {
 public:
  static absl::StatusOr<std::unique_ptr<CpuJit>> Create();

  const std::string& triple() const { return triple_; }
  const std::string& data_layout() const { return data_layout_; }
  llvm::TargetMachine& target_machine() { return *machine_; }

  // Compiles an optimized module to a relocatable object for this host (what
  // the offline cache stores), with `machine` (default: the JIT's own; a
  // machine is used by one thread at a time).
  absl::StatusOr<std::string> EmitObject(llvm::Module& module);
  static absl::StatusOr<std::string> EmitObject(llvm::Module& module,
                                                llvm::TargetMachine& machine);
  // A target machine for the host like the JIT's, for another thread.
  static absl::StatusOr<std::unique_ptr<llvm::TargetMachine>>
  NewTargetMachine();
  // Adds an object from EmitObject to a new dylib; returns its name.
  absl::StatusOr<std::string> AddObject(const std::string& object) {
    return AddObjects({object});
  }
  // Adds objects from EmitObject to one new dylib (their symbols see each
  // other); returns its name.
  absl::StatusOr<std::string> AddObjects(
      const std::vector<std::string>& objects);
  // The address of `symbol` in the dylib returned by Add.
  absl::StatusOr<void*> Lookup(const std::string& dylib,
                               const std::string& symbol);

  // Bits of the widest vector registers the host has (512 with AVX-512F,
  // 256 with AVX, else 128).
  int VectorBits() const;

  // The host CPU and its features; objects are only valid for this target.
  std::string TargetDescription() const;

  // Public for std::make_unique only; use Create().
  CpuJit(std::unique_ptr<llvm::orc::LLJIT> jit,
         std::unique_ptr<llvm::TargetMachine> machine);

 private:
  // A fresh dylib that resolves C library symbols from this process.
  absl::StatusOr<llvm::orc::JITDylib*> NewDylib(std::string* name);

  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::unique_ptr<llvm::TargetMachine> machine_;
  std::string triple_;
  std::string data_layout_;
  int next_dylib_ = 0;
};

}  // namespace quadrants::codegen

#endif  // QUADRANTS_CODEGEN_CPU_CPU_JIT_H_
