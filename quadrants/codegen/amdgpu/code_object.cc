#include "quadrants/codegen/amdgpu/code_object.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "quadrants/common/errors.h"

namespace quadrants::codegen {
namespace {

absl::Status Bad(const std::string& what) {
  return MakeError(ErrorKind::kCompilation,
                   absl::StrCat("invalid AMDGPU code object: ", what));
}

}  // namespace

absl::Status CheckCodeObject(const std::string& bytes,
                             const std::string& gfx_target,
                             const std::vector<std::string>& entries) {
  auto parsed = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(bytes, "code object"));
  if (!parsed)
    return Bad(llvm::toString(parsed.takeError()));
  const auto* elf =
      llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(parsed->get());
  if (elf == nullptr)
    return Bad("not a 64-bit little-endian ELF file");
  const auto& file = elf->getELFFile();
  if (file.getHeader().e_machine != llvm::ELF::EM_AMDGPU)
    return Bad("the ELF machine is not AMDGPU");
  if (file.getHeader().e_type != llvm::ELF::ET_DYN)
    return Bad("not a linked (shared object) code object");
  if (file.getHeader().e_ident[llvm::ELF::EI_OSABI] !=
      llvm::ELF::ELFOSABI_AMDGPU_HSA) {
    return Bad("the OS ABI is not AMDHSA");
  }
  std::optional<llvm::StringRef> cpu = elf->tryGetCPUName();
  if (!cpu || *cpu != gfx_target) {
    return Bad(absl::StrCat("built for '", cpu ? cpu->str() : "unknown",
                            "', not ", gfx_target));
  }
  std::set<std::string> symbols;
  for (const llvm::object::SymbolRef& symbol : elf->symbols()) {
    llvm::Expected<llvm::StringRef> name = symbol.getName();
    if (!name)
      return Bad(llvm::toString(name.takeError()));
    symbols.insert(name->str());
  }
  std::vector<std::string> missing;
  for (const std::string& entry : entries) {
    if (!symbols.count(entry + ".kd"))
      missing.push_back(entry + ".kd");
  }
  if (!missing.empty()) {
    return Bad(
        absl::StrCat("no kernel descriptor ", absl::StrJoin(missing, ", ")));
  }
  // The AMDHSA metadata note (a MessagePack map) names every kernel.
  std::string metadata;
  auto sections = file.sections();
  if (!sections)
    return Bad(llvm::toString(sections.takeError()));
  for (const auto& section : *sections) {
    if (section.sh_type != llvm::ELF::SHT_NOTE)
      continue;
    llvm::Error error = llvm::Error::success();
    for (const auto& note : file.notes(section, error)) {
      if (note.getName() == "AMDGPU" &&
          note.getType() == llvm::ELF::NT_AMDGPU_METADATA) {
        llvm::ArrayRef<uint8_t> desc = note.getDesc(section.sh_addralign);
        metadata.assign(desc.begin(), desc.end());
      }
    }
    if (error)
      return Bad(llvm::toString(std::move(error)));
  }
  if (metadata.empty())
    return Bad("no AMDHSA metadata note");
  if (metadata.find("amdhsa.kernels") == std::string::npos)
    return Bad("the metadata note lists no amdhsa.kernels");
  for (const std::string& entry : entries) {
    if (metadata.find(entry + ".kd") == std::string::npos)
      return Bad(absl::StrCat("the metadata note does not describe ", entry));
  }
  return absl::OkStatus();
}

}  // namespace quadrants::codegen
