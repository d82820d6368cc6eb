#include "quadrants/codegen/llvm/max_reduce_kernel.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "llvm/IR/IRBuilder.h"

namespace quadrants::codegen {
namespace {

using adstack::BodyOp;

// Points evaluated per trip of the main loop: independent loads in flight.
constexpr int kUnroll = 8;

// Emits the body of one point from the kernel's parameter arguments.
class PointEmitter {
 public:
  // The parameter words are `fn`'s arguments from the second on; the
  // first, the result's address, is always readable.
  PointEmitter(llvm::IRBuilder<>& b, const MaxReduceShape& shape,
               llvm::Function* fn, unsigned address_space)
      : b_(b),
        shape_(shape),
        none_(b.getInt64(adstack::kNoValue)),
        index_(shape.narrow ? b.getInt32Ty() : b.getInt64Ty()) {
    llvm::Type* global = b.getPtrTy(address_space);
    int word = 2;  // after the result's address and the point count
    auto next = [&] { return fn->getArg(word++); };
    auto next_index = [&] { return b_.CreateTrunc(next(), index_); };
    for (int a = 0; a < shape.num_axes; ++a) {
      begin_.push_back(next_index());
      count_.push_back(next_index());
    }
    consts_.resize(shape.code.size(), nullptr);
    for (size_t k = 0; k < shape.code.size(); ++k) {
      if (shape.code[k].op == BodyOp::kConst)
        consts_[k] = next();
    }
    for (const MaxReduceShape::Read& read : shape.reads) {
      ReadParams r;
      r.base = b_.CreateIntToPtr(next(), global);
      for (size_t d = 0; d < read.indices.size(); ++d) {
        r.extent.push_back(next_index());
        r.stride.push_back(next_index());
      }
      reads_.push_back(std::move(r));
    }
    // Out-of-range lanes load from here instead: always readable.
    safe_ = b_.CreateAddrSpaceCast(fn->getArg(0), global);
  }

  llvm::Value* none() const { return none_; }
  llvm::IntegerType* index_type() const { return index_; }

  // The body's value at linear point `p` (of index_type()).
  llvm::Value* Emit(llvm::Value* p) {
    std::vector<llvm::Value*> coord(shape_.num_axes);
    llvm::Value* rem = p;
    for (int a = shape_.num_axes - 1; a >= 0; --a) {
      if (a == 0) {
        coord[a] = b_.CreateAdd(begin_[a], rem);
        break;
      }
      coord[a] = b_.CreateAdd(begin_[a], b_.CreateURem(rem, count_[a]));
      rem = b_.CreateUDiv(rem, count_[a]);
    }
    std::vector<llvm::Value*> v(shape_.code.size());
    for (size_t k = 0; k < shape_.code.size(); ++k) {
      const adstack::BodyInstr& in = shape_.code[k];
      switch (in.op) {
        case BodyOp::kConst:
          v[k] = consts_[k];
          break;
        case BodyOp::kAxis:
          v[k] = b_.CreateSExt(coord[in.a], b_.getInt64Ty());
          break;
        case BodyOp::kRead:
          v[k] = Read(in.a, coord);
          break;
        case BodyOp::kMax:
          v[k] =
              b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v[in.a], v[in.b]);
          break;
        default:
          v[k] = Arithmetic(in.op, v[in.a], v[in.b]);
      }
    }
    return v.empty() ? none_ : v.back();
  }

 private:
  struct ReadParams {
    llvm::Value* base = nullptr;
    std::vector<llvm::Value*> extent;
    std::vector<llvm::Value*> stride;
  };

  // + - * wrap in 64 bits and propagate a missing operand.
  llvm::Value* Arithmetic(BodyOp op, llvm::Value* x, llvm::Value* y) {
    llvm::Value* r = op == BodyOp::kAdd   ? b_.CreateAdd(x, y)
                     : op == BodyOp::kSub ? b_.CreateSub(x, y)
                                          : b_.CreateMul(x, y);
    llvm::Value* missing =
        b_.CreateOr(b_.CreateICmpEQ(x, none_), b_.CreateICmpEQ(y, none_));
    return b_.CreateSelect(missing, none_, r);
  }

  // An element, or no value when any index is outside its extent. The load
  // runs for every lane (from a safe address when out of range) so that
  // unrolled points stay branch-free.
  llvm::Value* Read(int r, const std::vector<llvm::Value*>& coord) {
    const MaxReduceShape::Read& read = shape_.reads[r];
    const ReadParams& where = reads_[r];
    llvm::Value* in_range = b_.getTrue();
    llvm::Value* offset = llvm::ConstantInt::get(index_, 0);
    for (size_t d = 0; d < read.indices.size(); ++d) {
      const adstack::ReadIndex& index = read.indices[d];
      llvm::Value* i = index.is_axis
                           ? coord[index.value]
                           : llvm::ConstantInt::get(index_, index.value);
      // Unsigned: a negative index is out of range too.
      in_range = b_.CreateAnd(in_range, b_.CreateICmpULT(i, where.extent[d]));
      offset = b_.CreateAdd(offset, b_.CreateMul(i, where.stride[d]));
    }
    llvm::Value* address =
        b_.CreateSelect(in_range,
                        b_.CreateGEP(b_.getInt8Ty(), where.base,
                                     b_.CreateSExt(offset, b_.getInt64Ty())),
                        safe_);
    const int bits = ir::BitWidth(read.dtype);
    llvm::LoadInst* raw = b_.CreateLoad(b_.getIntNTy(bits), address);
    raw->setAlignment(llvm::Align(bits / 8));
    // Nothing writes the arrays while the kernel runs.
    raw->setMetadata(llvm::LLVMContext::MD_invariant_load,
                     llvm::MDNode::get(b_.getContext(), {}));
    llvm::Value* value = ir::IsSigned(read.dtype)
                             ? b_.CreateSExt(raw, b_.getInt64Ty())
                             : b_.CreateZExt(raw, b_.getInt64Ty());
    return b_.CreateSelect(in_range, value, none_);
  }

  llvm::IRBuilder<>& b_;
  const MaxReduceShape& shape_;
  llvm::Value* none_;
  llvm::IntegerType* index_;  // points, coordinates, extents and offsets
  llvm::Value* safe_ = nullptr;
  std::vector<llvm::Value*> begin_;
  std::vector<llvm::Value*> count_;
  std::vector<llvm::Value*> consts_;
  std::vector<ReadParams> reads_;
};

// Whether every index the kernel computes fits 32 bits: the points (with
// room for a grid-stride step past the end), the coordinates, the extents
// and the byte offsets of in-range elements.
bool FitsNarrow(const adstack::ReducerJob& job) {
  constexpr int64_t kLimit = int64_t{1} << 30;
  if (job.Points() >= kLimit)
    return false;
  for (size_t a = 0; a < job.begin.size(); ++a) {
    if (std::abs(job.begin[a]) >= kLimit || std::abs(job.end[a]) >= kLimit)
      return false;
  }
  for (size_t r = 0; r < job.reads.size(); ++r) {
    const adstack::ResolvedRead& where = job.resolved[r];
    int64_t last = 0;
    for (size_t d = 0; d < where.extents.size(); ++d) {
      const int64_t extent = where.extents[d];
      const int64_t stride = d < where.byte_strides.size()
                                 ? std::abs(where.byte_strides[d])
                                 : kLimit;
      if (extent >= kLimit || stride >= kLimit)
        return false;
      last += std::max<int64_t>(extent - 1, 0) * stride;
      if (last >= kLimit)
        return false;
    }
    for (const adstack::ReadIndex& index : job.reads[r].indices) {
      if (!index.is_axis && std::abs(index.value) >= kLimit)
        return false;
    }
  }
  return true;
}

llvm::Value* Max(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y) {
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, y);
}

}  // namespace

MaxReduceShape MaxReduceShape::Of(const adstack::ReducerJob& job) {
  MaxReduceShape shape;
  shape.num_axes = static_cast<int>(job.begin.size());
  shape.code = job.code;
  for (adstack::BodyInstr& in : shape.code) {
    if (in.op == BodyOp::kConst)
      in.value = 0;
  }
  for (size_t r = 0; r < job.reads.size(); ++r)
    shape.reads.push_back({job.resolved[r].dtype, job.reads[r].indices});
  shape.narrow = FitsNarrow(job);
  return shape;
}

std::string MaxReduceShape::Key() const {
  std::string key = absl::StrCat("axes ", num_axes, narrow ? "n;" : ";");
  for (const adstack::BodyInstr& in : code)
    absl::StrAppend(&key, static_cast<int>(in.op), ",", in.a, ",", in.b, ";");
  for (const Read& read : reads) {
    absl::StrAppend(&key, "r", static_cast<int>(read.dtype));
    for (const adstack::ReadIndex& index : read.indices)
      absl::StrAppend(&key, index.is_axis ? ",a" : ",c", index.value);
    absl::StrAppend(&key, ";");
  }
  return key;
}

int MaxReduceShape::NumParams() const {
  int words = 1 + 2 * num_axes;
  for (const adstack::BodyInstr& in : code)
    words += in.op == BodyOp::kConst;
  for (const Read& read : reads)
    words += 1 + 2 * static_cast<int>(read.indices.size());
  return words;
}

std::vector<int64_t> MaxReduceParams(const adstack::ReducerJob& job) {
  std::vector<int64_t> words = {job.Points()};
  for (size_t a = 0; a < job.begin.size(); ++a) {
    words.push_back(job.begin[a]);
    words.push_back(std::max<int64_t>(0, job.end[a] - job.begin[a]));
  }
  for (const adstack::BodyInstr& in : job.code) {
    if (in.op == BodyOp::kConst)
      words.push_back(in.value);
  }
  for (size_t r = 0; r < job.reads.size(); ++r) {
    const adstack::ResolvedRead& where = job.resolved[r];
    const bool usable = where.base != nullptr &&
                        where.extents.size() == job.reads[r].indices.size();
    words.push_back(static_cast<int64_t>(
        reinterpret_cast<uintptr_t>(usable ? where.base : nullptr)));
    for (size_t d = 0; d < job.reads[r].indices.size(); ++d) {
      words.push_back(usable ? where.extents[d] : 0);
      words.push_back(usable ? where.byte_strides[d] : 0);
    }
  }
  return words;
}

std::unique_ptr<llvm::Module> BuildMaxReduceKernel(const MaxReduceShape& shape,
                                                   const GpuEntryTarget& target,
                                                   llvm::LLVMContext& context,
                                                   const std::string& triple,
                                                   const std::string& layout) {
  auto module = std::make_unique<llvm::Module>("qd_max_reduce", context);
  module->setTargetTriple(triple);
  module->setDataLayout(layout);
  auto* ptr = llvm::PointerType::get(context, 0);
  std::vector<llvm::Type*> params(shape.NumParams() + 1,
                                  llvm::Type::getInt64Ty(context));
  params[0] = ptr;
  auto* type =
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), params, false);
  llvm::Function* fn = llvm::Function::Create(
      type, llvm::Function::ExternalLinkage, kMaxReduceEntry, *module);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::Value* out = fn->getArg(0);

  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", fn));
  llvm::BasicBlock* entry = b.GetInsertBlock();
  PointEmitter point(b, shape, fn, target.global_address_space);
  llvm::IntegerType* index = point.index_type();
  llvm::Value* total = b.CreateTrunc(fn->getArg(1), index);
  llvm::Value* thread = b.CreateTrunc(target.thread_index(b), index);
  llvm::Value* step = b.CreateTrunc(target.thread_count(b), index);
  llvm::Value* last_step =
      b.CreateMul(step, llvm::ConstantInt::get(index, kUnroll - 1));

  // Unrolled: while the last of kUnroll points is in range.
  auto* head = llvm::BasicBlock::Create(context, "head", fn);
  auto* body = llvm::BasicBlock::Create(context, "body", fn);
  auto* tail_head = llvm::BasicBlock::Create(context, "tail_head", fn);
  auto* tail = llvm::BasicBlock::Create(context, "tail", fn);
  auto* done = llvm::BasicBlock::Create(context, "done", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* p = b.CreatePHI(index, 2);
  llvm::PHINode* best = b.CreatePHI(b.getInt64Ty(), 2);
  p->addIncoming(thread, entry);
  best->addIncoming(point.none(), entry);
  b.CreateCondBr(b.CreateICmpSLT(b.CreateAdd(p, last_step), total), body,
                 tail_head);
  b.SetInsertPoint(body);
  llvm::Value* acc = best;
  llvm::Value* at = p;
  for (int u = 0; u < kUnroll; ++u) {
    acc = Max(b, acc, point.Emit(at));
    at = b.CreateAdd(at, step);
  }
  p->addIncoming(at, b.GetInsertBlock());
  best->addIncoming(acc, b.GetInsertBlock());
  b.CreateBr(head);

  // The rest, one point at a time.
  b.SetInsertPoint(tail_head);
  llvm::PHINode* q = b.CreatePHI(index, 2);
  llvm::PHINode* tail_best = b.CreatePHI(b.getInt64Ty(), 2);
  q->addIncoming(p, head);
  tail_best->addIncoming(best, head);
  b.CreateCondBr(b.CreateICmpSLT(q, total), tail, done);
  b.SetInsertPoint(tail);
  q->addIncoming(b.CreateAdd(q, step), tail);
  tail_best->addIncoming(Max(b, tail_best, point.Emit(q)), b.GetInsertBlock());
  b.CreateBr(tail_head);

  b.SetInsertPoint(done);
  llvm::Value* result = tail_best;
  llvm::Value* combine = b.CreateICmpNE(result, point.none());
  if (target.subgroup_max) {
    result = target.subgroup_max(b, result);
    combine = b.CreateAnd(b.CreateICmpNE(result, point.none()),
                          target.subgroup_leader(b));
  }
  auto* atomic = llvm::BasicBlock::Create(context, "atomic", fn);
  auto* exit = llvm::BasicBlock::Create(context, "exit", fn);
  b.CreateCondBr(combine, atomic, exit);
  b.SetInsertPoint(atomic);
  b.CreateAtomicRMW(llvm::AtomicRMWInst::Max, out, result, llvm::Align(8),
                    llvm::AtomicOrdering::Monotonic);
  b.CreateBr(exit);
  b.SetInsertPoint(exit);
  b.CreateRetVoid();
  target.mark_kernel(fn);
  return module;
}

void AddPackedMaxReduceEntry(llvm::Module& module) {
  llvm::Function* kernel = module.getFunction(kMaxReduceEntry);
  llvm::LLVMContext& context = module.getContext();
  auto* ptr = llvm::PointerType::get(context, 0);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(context),
                                       {ptr, ptr}, false);
  llvm::Function* fn = llvm::Function::Create(
      type, llvm::Function::ExternalLinkage, kMaxReducePackedEntry, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", fn));
  std::vector<llvm::Value*> args = {fn->getArg(1)};
  for (unsigned w = 1; w < kernel->arg_size(); ++w) {
    args.push_back(b.CreateLoad(
        b.getInt64Ty(),
        b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), fn->getArg(0), w - 1)));
  }
  b.CreateCall(kernel, args);
  b.CreateRetVoid();
}

}  // namespace quadrants::codegen
