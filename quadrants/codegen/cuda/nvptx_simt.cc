#include "quadrants/codegen/cuda/nvptx_simt.h"

#include "llvm/IR/IntrinsicsNVPTX.h"

namespace quadrants::codegen {
namespace {

using Kind = ir::SimtOpKind;
using llvm::Intrinsic::ID;

class NvptxEmitter {
 public:
  NvptxEmitter(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& args,
               llvm::Type* result)
      : b_(b), args_(args), result_(result) {}

  llvm::Value* Call(ID id, llvm::ArrayRef<llvm::Value*> args = {}) {
    llvm::Module* module = b_.GetInsertBlock()->getModule();
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(module, id), args);
  }
  llvm::Value* I32(llvm::Value* v) {
    return b_.CreateZExtOrTrunc(v, b_.getInt32Ty());
  }
  llvm::Value* Predicate(llvm::Value* v) {
    return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  llvm::Value* FromBool(llvm::Value* v) {
    return b_.CreateZExt(v, result_);
  }
  llvm::Value* ActiveMask() { return Call(llvm::Intrinsic::nvvm_activemask); }
  llvm::Value* FirstActiveLane() {
    llvm::Value* mask = ActiveMask();
    llvm::Module* module = b_.GetInsertBlock()->getModule();
    llvm::Value* trailing = b_.CreateCall(
        llvm::Intrinsic::getDeclaration(module, llvm::Intrinsic::cttz,
                                        {b_.getInt32Ty()}),
        {mask, b_.getTrue()});
    return trailing;
  }
  // shfl.sync of any value: `mode` idx, up, down or bfly; `clamp` is the
  // c operand (31 for idx, down and bfly: the whole warp; 0 for up).
  llvm::Value* Shuffle(ID mode, llvm::Value* mask, llvm::Value* value,
                       llvm::Value* lane) {
    const int clamp = mode == llvm::Intrinsic::nvvm_shfl_sync_up_i32 ? 0 : 31;
    return ShuffleWords(b_, value, [&](llvm::Value* word) {
      return Call(mode, {mask, word, I32(lane), b_.getInt32(clamp)});
    });
  }

  absl::StatusOr<llvm::Value*> Emit(Kind op) {
    switch (op) {
      case Kind::kBlockSync:
        return Call(llvm::Intrinsic::nvvm_barrier0);
      case Kind::kBlockSyncAnd:
        return Call(llvm::Intrinsic::nvvm_barrier0_and, {I32(args_[0])});
      case Kind::kBlockSyncOr:
        return Call(llvm::Intrinsic::nvvm_barrier0_or, {I32(args_[0])});
      case Kind::kBlockSyncCount:
        return Call(llvm::Intrinsic::nvvm_barrier0_popc, {I32(args_[0])});
      case Kind::kBlockMemFence:
      case Kind::kSubgroupMemFence:
        return Call(llvm::Intrinsic::nvvm_membar_cta);
      case Kind::kGridMemFence:
        return Call(llvm::Intrinsic::nvvm_membar_gl);
      case Kind::kBlockThreadIdx:
        return Call(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
      case Kind::kSubgroupSync:
        return Call(llvm::Intrinsic::nvvm_bar_warp_sync, {ActiveMask()});
      case Kind::kSubgroupInvocationId:
        return Call(llvm::Intrinsic::nvvm_read_ptx_sreg_laneid);
      case Kind::kSubgroupShuffle:
      case Kind::kSubgroupBroadcast:
        return Shuffle(llvm::Intrinsic::nvvm_shfl_sync_idx_i32, ActiveMask(),
                       args_[0], args_[1]);
      case Kind::kSubgroupShuffleXor:
        return Shuffle(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, ActiveMask(),
                       args_[0], args_[1]);
      case Kind::kSubgroupShuffleUp:
        return Shuffle(llvm::Intrinsic::nvvm_shfl_sync_up_i32, ActiveMask(),
                       args_[0], args_[1]);
      case Kind::kSubgroupShuffleDown:
        return Shuffle(llvm::Intrinsic::nvvm_shfl_sync_down_i32, ActiveMask(),
                       args_[0], args_[1]);
      case Kind::kSubgroupBroadcastFirst:
        return Shuffle(llvm::Intrinsic::nvvm_shfl_sync_idx_i32, ActiveMask(),
                       args_[0], FirstActiveLane());
      case Kind::kSubgroupElect:
        return FromBool(b_.CreateICmpEQ(
            Call(llvm::Intrinsic::nvvm_read_ptx_sreg_laneid),
            FirstActiveLane()));
      case Kind::kSubgroupBallot:
        return b_.CreateZExtOrTrunc(
            Call(llvm::Intrinsic::nvvm_vote_ballot_sync,
                 {ActiveMask(), Predicate(args_[0])}),
            result_);
      case Kind::kSubgroupAll:
        return FromBool(Call(llvm::Intrinsic::nvvm_vote_all_sync,
                             {ActiveMask(), Predicate(args_[0])}));
      case Kind::kSubgroupAny:
        return FromBool(Call(llvm::Intrinsic::nvvm_vote_any_sync,
                             {ActiveMask(), Predicate(args_[0])}));
      case Kind::kSubgroupAllEqual: {
        llvm::Value* first =
            Shuffle(llvm::Intrinsic::nvvm_shfl_sync_idx_i32, ActiveMask(),
                    args_[0], FirstActiveLane());
        llvm::Value* same = args_[0]->getType()->isFloatingPointTy()
                                ? b_.CreateFCmpOEQ(first, args_[0])
                                : b_.CreateICmpEQ(first, args_[0]);
        return FromBool(Call(llvm::Intrinsic::nvvm_vote_all_sync,
                             {ActiveMask(), same}));
      }
      case Kind::kWarpShuffle:
        return Shuffle(llvm::Intrinsic::nvvm_shfl_sync_idx_i32,
                       I32(args_[0]), args_[1], args_[2]);
      case Kind::kWarpShuffleUp:
        return Shuffle(llvm::Intrinsic::nvvm_shfl_sync_up_i32, I32(args_[0]),
                       args_[1], args_[2]);
      case Kind::kWarpShuffleDown:
        return Shuffle(llvm::Intrinsic::nvvm_shfl_sync_down_i32,
                       I32(args_[0]), args_[1], args_[2]);
      case Kind::kWarpShuffleXor:
        return Shuffle(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32,
                       I32(args_[0]), args_[1], args_[2]);
      case Kind::kWarpAll:
        return FromBool(Call(llvm::Intrinsic::nvvm_vote_all_sync,
                             {I32(args_[0]), Predicate(args_[1])}));
      case Kind::kWarpAny:
        return FromBool(Call(llvm::Intrinsic::nvvm_vote_any_sync,
                             {I32(args_[0]), Predicate(args_[1])}));
      case Kind::kWarpUnique: {
        // Uniform: true on every lane of the mask, or on none.
        llvm::Value* all = Call(llvm::Intrinsic::nvvm_vote_all_sync,
                                {I32(args_[0]), Predicate(args_[1])});
        llvm::Value* any = Call(llvm::Intrinsic::nvvm_vote_any_sync,
                                {I32(args_[0]), Predicate(args_[1])});
        return FromBool(b_.CreateOr(all, b_.CreateNot(any)));
      }
      case Kind::kWarpBallot:
        return b_.CreateZExtOrTrunc(
            Call(llvm::Intrinsic::nvvm_vote_ballot_sync,
                 {I32(args_[0]), Predicate(args_[1])}),
            result_);
      case Kind::kWarpMatchAny: {
        const bool wide = args_[1]->getType()->getPrimitiveSizeInBits() > 32;
        llvm::Value* v = b_.CreateBitOrPointerCast(
            args_[1], b_.getIntNTy(args_[1]->getType()->getPrimitiveSizeInBits()));
        v = wide ? b_.CreateZExt(v, b_.getInt64Ty()) : I32(v);
        return b_.CreateZExtOrTrunc(
            Call(wide ? llvm::Intrinsic::nvvm_match_any_sync_i64
                      : llvm::Intrinsic::nvvm_match_any_sync_i32,
                 {I32(args_[0]), v}),
            result_);
      }
      case Kind::kWarpMatchAll: {
        const bool wide = args_[1]->getType()->getPrimitiveSizeInBits() > 32;
        llvm::Value* v = b_.CreateBitOrPointerCast(
            args_[1], b_.getIntNTy(args_[1]->getType()->getPrimitiveSizeInBits()));
        v = wide ? b_.CreateZExt(v, b_.getInt64Ty()) : I32(v);
        llvm::Value* pair =
            Call(wide ? llvm::Intrinsic::nvvm_match_all_sync_i64p
                      : llvm::Intrinsic::nvvm_match_all_sync_i32p,
                 {I32(args_[0]), v});
        return b_.CreateZExtOrTrunc(b_.CreateExtractValue(pair, 0), result_);
      }
      case Kind::kWarpActiveMask:
        return ActiveMask();
      case Kind::kWarpSync:
        return Call(llvm::Intrinsic::nvvm_bar_warp_sync, {I32(args_[0])});
    }
    return absl::InternalError("unknown qd.simt primitive");
  }

 private:
  llvm::IRBuilder<>& b_;
  const std::vector<llvm::Value*>& args_;
  llvm::Type* result_;
};

}  // namespace

SimtTarget NvptxSimt() {
  SimtTarget target;
  target.shared_address_space = 3;
  target.emit = [](llvm::IRBuilder<>& b, ir::SimtOpKind op,
                   const std::vector<llvm::Value*>& args,
                   llvm::Type* result) -> absl::StatusOr<llvm::Value*> {
    NvptxEmitter emitter(b, args, result);
    return FitSimtResult(b, emitter.Emit(op), result);
  };
  return target;
}

}  // namespace quadrants::codegen
