#include "quadrants/codegen/llvm/runtime_linker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/MemoryBuffer.h"
#include "quadrants/common/errors.h"

namespace quadrants::codegen {

absl::Status LinkRuntime(llvm::Module& module,
                         absl::Span<const unsigned char> bitcode,
                         const std::vector<std::string>& entry_points) {
  llvm::StringRef bytes(reinterpret_cast<const char*>(bitcode.data()),
                        bitcode.size());
  auto runtime = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(bytes, "quadrants_runtime"), module.getContext());
  if (!runtime) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("cannot read the embedded runtime module: ",
                                  llvm::toString(runtime.takeError())));
  }
  (*runtime)->setTargetTriple(module.getTargetTriple());
  (*runtime)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*runtime),
                                llvm::Linker::Flags::LinkOnlyNeeded)) {
    return MakeError(ErrorKind::kRuntime,
                     "linking the runtime module into a kernel failed");
  }
  for (llvm::Function& fn : module.functions()) {
    if (fn.isDeclaration())
      continue;
    const bool entry = std::find(entry_points.begin(), entry_points.end(),
                                 fn.getName().str()) != entry_points.end();
    if (!entry)
      fn.setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  return absl::OkStatus();
}

}  // namespace quadrants::codegen
