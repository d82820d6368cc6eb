#include "quadrants/codegen/amdgpu/amdgcn_simt.h"

#include "absl/strings/str_cat.h"
#include "llvm/IR/IntrinsicsAMDGPU.h"

namespace quadrants::codegen {
namespace {

using Kind = ir::SimtOpKind;

class AmdgcnEmitter {
 public:
  AmdgcnEmitter(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& args,
                llvm::Type* result)
      : b_(b), args_(args), result_(result) {}

  llvm::Value* Call(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value*> args,
                    llvm::ArrayRef<llvm::Type*> types = {}) {
    llvm::Module* module = b_.GetInsertBlock()->getModule();
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(module, id, types),
                         args);
  }
  void Fence(llvm::AtomicOrdering order, const char* scope) {
    b_.CreateFence(order, b_.getContext().getOrInsertSyncScopeID(scope));
  }
  void Barrier() {
    Fence(llvm::AtomicOrdering::Release, "workgroup");
    Call(llvm::Intrinsic::amdgcn_s_barrier, {});
    Fence(llvm::AtomicOrdering::Acquire, "workgroup");
  }
  llvm::Value* I32(llvm::Value* v) {
    return b_.CreateZExtOrTrunc(v, b_.getInt32Ty());
  }
  llvm::Value* Predicate(llvm::Value* v) {
    return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  llvm::Value* Lane() {
    llvm::Value* low = Call(llvm::Intrinsic::amdgcn_mbcnt_lo,
                            {b_.getInt32(-1), b_.getInt32(0)});
    return Call(llvm::Intrinsic::amdgcn_mbcnt_hi, {b_.getInt32(-1), low});
  }
  llvm::Value* Ballot(llvm::Value* predicate) {
    return Call(llvm::Intrinsic::amdgcn_ballot, {predicate}, {b_.getInt64Ty()});
  }
  // The value of lane `lane` (an i32) through ds_bpermute, word by word.
  llvm::Value* FromLane(llvm::Value* value, llvm::Value* lane) {
    llvm::Value* address = b_.CreateShl(I32(lane), 2);
    return ShuffleWords(b_, value, [&](llvm::Value* word) {
      return Call(llvm::Intrinsic::amdgcn_ds_bpermute, {address, word});
    });
  }
  llvm::Value* First(llvm::Value* value) {
    return ShuffleWords(b_, value, [&](llvm::Value* word) {
      return Call(llvm::Intrinsic::amdgcn_readfirstlane, {word},
                  {b_.getInt32Ty()});
    });
  }
  // sync() that counts the threads whose predicate holds, through a
  // workgroup counter every thread resets (to the same value) first.
  llvm::Value* CountingBarrier(llvm::Value* predicate) {
    llvm::Module* module = b_.GetInsertBlock()->getModule();
    auto* counter = new llvm::GlobalVariable(
        *module, b_.getInt32Ty(), false, llvm::GlobalValue::InternalLinkage,
        llvm::UndefValue::get(b_.getInt32Ty()), "qd_block_vote", nullptr,
        llvm::GlobalValue::NotThreadLocal, 3);
    const llvm::SyncScope::ID workgroup =
        b_.getContext().getOrInsertSyncScopeID("workgroup");
    Barrier();
    b_.CreateAtomicRMW(llvm::AtomicRMWInst::Xchg, counter, b_.getInt32(0),
                       llvm::MaybeAlign(4), llvm::AtomicOrdering::Monotonic,
                       workgroup);
    Barrier();
    b_.CreateAtomicRMW(llvm::AtomicRMWInst::Add, counter,
                       b_.CreateZExt(Predicate(predicate), b_.getInt32Ty()),
                       llvm::MaybeAlign(4), llvm::AtomicOrdering::Monotonic,
                       workgroup);
    Barrier();
    llvm::Value* count = b_.CreateAtomicRMW(
        llvm::AtomicRMWInst::Or, counter, b_.getInt32(0), llvm::MaybeAlign(4),
        llvm::AtomicOrdering::Monotonic, workgroup);
    Barrier();
    return count;
  }

  absl::StatusOr<llvm::Value*> Emit(Kind op) {
    switch (op) {
      case Kind::kBlockSync:
        Barrier();
        return nullptr;
      case Kind::kBlockSyncAnd: {
        // Threads whose predicate fails, counted: none means all hold.
        llvm::Value* failing = CountingBarrier(
            b_.CreateZExt(b_.CreateNot(Predicate(args_[0])), b_.getInt32Ty()));
        return b_.CreateZExt(b_.CreateICmpEQ(failing, b_.getInt32(0)), result_);
      }
      case Kind::kBlockSyncOr:
        return b_.CreateZExt(
            b_.CreateICmpNE(CountingBarrier(args_[0]), b_.getInt32(0)), result_);
      case Kind::kBlockSyncCount:
        return CountingBarrier(args_[0]);
      case Kind::kBlockMemFence:
      case Kind::kSubgroupMemFence:
        Fence(llvm::AtomicOrdering::AcquireRelease, "workgroup");
        return nullptr;
      case Kind::kGridMemFence:
        Fence(llvm::AtomicOrdering::AcquireRelease, "agent");
        return nullptr;
      case Kind::kBlockThreadIdx:
        return Call(llvm::Intrinsic::amdgcn_workitem_id_x, {});
      case Kind::kSubgroupSync:
        Call(llvm::Intrinsic::amdgcn_wave_barrier, {});
        return nullptr;
      case Kind::kSubgroupInvocationId:
        return Lane();
      case Kind::kSubgroupShuffle:
      case Kind::kSubgroupBroadcast:
        return FromLane(args_[0], args_[1]);
      case Kind::kSubgroupShuffleXor:
        return FromLane(args_[0], b_.CreateXor(Lane(), I32(args_[1])));
      case Kind::kSubgroupShuffleUp:
        return FromLane(args_[0], b_.CreateSub(Lane(), I32(args_[1])));
      case Kind::kSubgroupShuffleDown:
        return FromLane(args_[0], b_.CreateAdd(Lane(), I32(args_[1])));
      case Kind::kSubgroupBroadcastFirst:
        return First(args_[0]);
      case Kind::kSubgroupElect: {
        llvm::Value* active = Ballot(b_.getTrue());
        llvm::Module* module = b_.GetInsertBlock()->getModule();
        llvm::Value* first = b_.CreateCall(
            llvm::Intrinsic::getDeclaration(module, llvm::Intrinsic::cttz,
                                            {b_.getInt64Ty()}),
            {active, b_.getTrue()});
        return b_.CreateZExt(
            b_.CreateICmpEQ(b_.CreateZExt(Lane(), b_.getInt64Ty()), first),
            result_);
      }
      case Kind::kSubgroupBallot:
        return b_.CreateZExtOrTrunc(Ballot(Predicate(args_[0])), result_);
      case Kind::kSubgroupAll:
        return b_.CreateZExt(b_.CreateICmpEQ(Ballot(Predicate(args_[0])),
                                             Ballot(b_.getTrue())),
                             result_);
      case Kind::kSubgroupAny:
        return b_.CreateZExt(
            b_.CreateICmpNE(Ballot(Predicate(args_[0])), b_.getInt64(0)),
            result_);
      case Kind::kSubgroupAllEqual: {
        llvm::Value* first = First(args_[0]);
        llvm::Value* same = args_[0]->getType()->isFloatingPointTy()
                                ? b_.CreateFCmpOEQ(first, args_[0])
                                : b_.CreateICmpEQ(first, args_[0]);
        return b_.CreateZExt(
            b_.CreateICmpEQ(Ballot(same), Ballot(b_.getTrue())), result_);
      }
      default:
        return absl::UnimplementedError(absl::StrCat(
            "qd.simt primitive '", ir::OpName(op),
            "' is CUDA's (qd.simt.warp); on AMDGPU use qd.simt.subgroup"));
    }
  }

 private:
  llvm::IRBuilder<>& b_;
  const std::vector<llvm::Value*>& args_;
  llvm::Type* result_;
};

}  // namespace

SimtTarget AmdgcnSimt() {
  SimtTarget target;
  target.shared_address_space = 3;
  target.emit = [](llvm::IRBuilder<>& b, ir::SimtOpKind op,
                   const std::vector<llvm::Value*>& args,
                   llvm::Type* result) -> absl::StatusOr<llvm::Value*> {
    AmdgcnEmitter emitter(b, args, result);
    return FitSimtResult(b, emitter.Emit(op), result);
  };
  return target;
}

}  // namespace quadrants::codegen
