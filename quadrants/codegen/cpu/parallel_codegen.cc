#include "quadrants/codegen/cpu/parallel_codegen.h"

#include <cstring>
#include <memory>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "quadrants/codegen/cpu/cpu_jit.h"
#include "quadrants/codegen/llvm/runtime_linker.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::codegen {
namespace {

// Framed binaries start with this (an ELF object starts with "\x7fELF").
constexpr char kFrame[] = "QDOBJS1";

// `module` as bitcode, keeping the definitions of `keep` and of everything
// that is not an entry point of another group.
std::string PartitionBitcode(const llvm::Module& module,
                             const absl::flat_hash_set<std::string>& keep,
                             const absl::flat_hash_set<std::string>& entries) {
  llvm::ValueToValueMapTy map;
  std::unique_ptr<llvm::Module> copy =
      llvm::CloneModule(module, map, [&](const llvm::GlobalValue* value) {
        const std::string name = value->getName().str();
        return keep.contains(name) || !entries.contains(name);
      });
  // Another group's entry points are left declared and unused.
  for (const std::string& name : entries) {
    llvm::Function* fn = copy->getFunction(name);
    if (!keep.contains(name) && fn != nullptr && fn->use_empty())
      fn->eraseFromParent();
  }
  std::string bitcode;
  llvm::raw_string_ostream stream(bitcode);
  llvm::WriteBitcodeToFile(*copy, stream);
  stream.flush();
  return bitcode;
}

absl::StatusOr<std::string> CompilePartition(
    const std::string& bitcode, const std::vector<std::string>& entry_points,
    absl::Span<const unsigned char> runtime, Vectorizers vectorizers) {
  llvm::LLVMContext context;
  auto module = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(bitcode, "partition"), context);
  if (!module) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("internal error: a kernel partition does not "
                                  "read back: ",
                                  llvm::toString(module.takeError())));
  }
  QD_RETURN_IF_ERROR(LinkRuntime(**module, runtime, entry_points));
  QD_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> machine,
                      CpuJit::NewTargetMachine());
  OptimizeModule(**module, *machine, vectorizers);
  return CpuJit::EmitObject(**module, *machine);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> CompileInPartitions(
    const llvm::Module& module,
    const std::vector<std::vector<std::string>>& partitions,
    absl::Span<const unsigned char> bitcode, Vectorizers vectorizers) {
  absl::flat_hash_set<std::string> entries;
  for (const auto& group : partitions)
    entries.insert(group.begin(), group.end());
  // Copies of one context's module are made on this thread; the groups'
  // contexts are independent, so their threads share nothing.
  std::vector<std::string> parts;
  for (const auto& group : partitions) {
    parts.push_back(PartitionBitcode(
        module, absl::flat_hash_set<std::string>(group.begin(), group.end()),
        entries));
  }
  std::vector<absl::StatusOr<std::string>> objects(
      partitions.size(), absl::UnknownError("not compiled"));
  std::vector<std::thread> threads;
  for (size_t p = 1; p < partitions.size(); ++p) {
    threads.emplace_back([&, p] {
      objects[p] = CompilePartition(parts[p], partitions[p], bitcode,
                                    vectorizers);
    });
  }
  objects[0] = CompilePartition(parts[0], partitions[0], bitcode, vectorizers);
  for (std::thread& thread : threads)
    thread.join();
  std::vector<std::string> out;
  for (auto& object : objects) {
    if (!object.ok())
      return object.status();
    out.push_back(*std::move(object));
  }
  return out;
}

std::string PackObjects(const std::vector<std::string>& objects) {
  if (objects.size() == 1)
    return objects[0];
  std::string binary(kFrame, sizeof(kFrame));
  auto put = [&](uint64_t v) {
    binary.append(reinterpret_cast<const char*>(&v), sizeof(v));
  };
  put(objects.size());
  for (const std::string& object : objects)
    put(object.size());
  for (const std::string& object : objects)
    binary += object;
  return binary;
}

std::vector<std::string> UnpackObjects(const std::string& binary) {
  if (binary.size() < sizeof(kFrame) ||
      std::memcmp(binary.data(), kFrame, sizeof(kFrame)) != 0) {
    return {binary};
  }
  size_t at = sizeof(kFrame);
  auto get = [&] {
    uint64_t v = 0;
    if (at + sizeof(v) <= binary.size())
      std::memcpy(&v, binary.data() + at, sizeof(v));
    at += sizeof(v);
    return v;
  };
  const uint64_t count = get();
  std::vector<uint64_t> sizes;
  for (uint64_t k = 0; k < count && at <= binary.size(); ++k)
    sizes.push_back(get());
  std::vector<std::string> objects;
  for (uint64_t size : sizes) {
    if (at + size > binary.size())
      return {};  // truncated: no object, so the caller's load fails
    objects.push_back(binary.substr(at, size));
    at += size;
  }
  return objects;
}

}  // namespace quadrants::codegen
