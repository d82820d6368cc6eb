// LLVM 19 from Debian: ORC JIT on the host, and code generation for the two
// GPU targets the CUDA and AMDGPU backends need.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

namespace {

class LlvmSmokeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  }
};

// Builds `void name(ptr addrspace(1) out)` that stores 42 to out[0].
llvm::Function* BuildStoreKernel(llvm::Module& module,
                                 llvm::CallingConv::ID cc) {
  llvm::LLVMContext& context = module.getContext();
  auto* ptr = llvm::PointerType::get(context, /*AddressSpace=*/1);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr},
                                       /*isVarArg=*/false);
  auto* kernel = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                        "store42", module);
  kernel->setCallingConv(cc);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", kernel));
  builder.CreateStore(builder.getInt32(42), kernel->getArg(0));
  builder.CreateRetVoid();
  return kernel;
}

std::string EmitForTarget(llvm::Module& module, const std::string& triple,
                          const std::string& cpu,
                          llvm::CodeGenFileType file_type) {
  std::string error;
  const llvm::Target* target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  EXPECT_NE(target, nullptr) << error;
  if (target == nullptr)
    return "";
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, "", llvm::TargetOptions(), llvm::Reloc::PIC_));
  module.setTargetTriple(triple);
  module.setDataLayout(machine->createDataLayout());
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager passes;
  EXPECT_FALSE(machine->addPassesToEmitFile(passes, stream, nullptr, file_type))
      << "target cannot emit this file type";
  passes.run(module);
  return std::string(buffer.str());
}

TEST_F(LlvmSmokeTest, OrcJitRunsAFunctionReturning42) {
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("answer", *context);
  auto* type = llvm::FunctionType::get(llvm::Type::getInt32Ty(*context), false);
  auto* function = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                          "answer", *module);
  llvm::IRBuilder<> builder(
      llvm::BasicBlock::Create(*context, "entry", function));
  builder.CreateRet(
      builder.CreateAdd(builder.getInt32(40), builder.getInt32(2)));
  ASSERT_FALSE(llvm::verifyModule(*module, &llvm::errs()));

  auto jit = llvm::orc::LLJITBuilder().create();
  ASSERT_TRUE(static_cast<bool>(jit)) << llvm::toString(jit.takeError());
  llvm::Error added = (*jit)->addIRModule(
      llvm::orc::ThreadSafeModule(std::move(module), std::move(context)));
  ASSERT_FALSE(static_cast<bool>(added)) << llvm::toString(std::move(added));
  auto symbol = (*jit)->lookup("answer");
  ASSERT_TRUE(static_cast<bool>(symbol)) << llvm::toString(symbol.takeError());
  auto* answer = symbol->toPtr<int (*)()>();
  EXPECT_EQ(answer(), 42);
}

TEST_F(LlvmSmokeTest, NvptxEmitsPtxForSm90) {
  llvm::LLVMContext context;
  llvm::Module module("ptx", context);
  BuildStoreKernel(module, llvm::CallingConv::PTX_Kernel);
  ASSERT_FALSE(llvm::verifyModule(module, &llvm::errs()));
  std::string ptx = EmitForTarget(module, "nvptx64-nvidia-cuda", "sm_90",
                                  llvm::CodeGenFileType::AssemblyFile);
  EXPECT_NE(ptx.find(".target sm_90"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find(".entry store42"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("st.global.u32"), std::string::npos) << ptx;
}

TEST_F(LlvmSmokeTest, AmdgpuEmitsAnHsaCodeObject) {
  llvm::LLVMContext context;
  llvm::Module module("hsaco", context);
  BuildStoreKernel(module, llvm::CallingConv::AMDGPU_KERNEL);
  ASSERT_FALSE(llvm::verifyModule(module, &llvm::errs()));
  std::string object = EmitForTarget(module, "amdgcn-amd-amdhsa", "gfx90a",
                                     llvm::CodeGenFileType::ObjectFile);
  auto parsed = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(object, "hsaco"));
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  auto* elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(parsed->get());
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->getELFFile().getHeader().e_machine, llvm::ELF::EM_AMDGPU);
  bool found_kernel = false;
  for (const llvm::object::SymbolRef& symbol : elf->symbols()) {
    auto name = symbol.getName();
    if (name && *name == "store42")
      found_kernel = true;
    if (!name)
      llvm::consumeError(name.takeError());
  }
  EXPECT_TRUE(found_kernel);
}

}  // namespace
