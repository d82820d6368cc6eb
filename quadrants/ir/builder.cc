#include "quadrants/ir/builder.h"

namespace quadrants::ir {

IRBuilder::IRBuilder(Kernel* kernel, const SNodeTree* snodes)
    : kernel_(kernel),
      snodes_(snodes),
      block_(kernel->body()),
      index_(kernel->body()->size()),
      loc_(kernel->loc()) {}

void IRBuilder::SetInsertPoint(Block* block, size_t index) {
  block_ = block;
  index_ = index;
}

IRBuilder::Scope::~Scope() {
  if (builder_ == nullptr)
    return;
  auto [block, index] = builder_->saved_.back();
  builder_->saved_.pop_back();
  builder_->SetInsertPoint(block, index);
}

IRBuilder::Scope IRBuilder::EnterBlock(Block* block) {
  // The saved position resumes after the container being filled, which was
  // inserted (and the index advanced) before its block is entered.
  saved_.emplace_back(block_, index_);
  SetInsertPointToEnd(block);
  return Scope(this);
}

void IRBuilder::ShiftInsertPoints(Block* block, size_t position) {
  if (block == block_ && position <= index_)
    ++index_;
  for (auto& [saved_block, saved_index] : saved_) {
    if (saved_block == block && position <= saved_index)
      ++saved_index;
  }
}

ConstStmt* IRBuilder::ConstI32(int32_t value) {
  return Const(Constant::Int(PrimitiveType::kI32, value));
}
ConstStmt* IRBuilder::ConstI64(int64_t value) {
  return Const(Constant::Int(PrimitiveType::kI64, value));
}
ConstStmt* IRBuilder::ConstF32(float value) {
  return Const(Constant::Float(PrimitiveType::kF32, value));
}
ConstStmt* IRBuilder::ConstF64(double value) {
  return Const(Constant::Float(PrimitiveType::kF64, value));
}
ConstStmt* IRBuilder::ConstBool(bool value) {
  return Const(Constant::Bool(value));
}

ArgLoadStmt* IRBuilder::ArgLoad(int arg) {
  // An out-of-range argument keeps a placeholder type; the verifier reports
  // it with this statement's location.
  const auto& params = kernel_->params();
  PrimitiveType dtype = arg >= 0 && arg < static_cast<int>(params.size())
                            ? params[arg].dtype
                            : PrimitiveType::kI32;
  return Make<ArgLoadStmt>(arg, dtype);
}

NdarrayPtrStmt* IRBuilder::NdarrayPtr(int arg, std::vector<Stmt*> indices) {
  const auto& params = kernel_->params();
  PrimitiveType dtype = arg >= 0 && arg < static_cast<int>(params.size())
                            ? params[arg].dtype
                            : PrimitiveType::kI32;
  return Make<NdarrayPtrStmt>(arg, dtype, std::move(indices));
}

NdarrayShapeStmt* IRBuilder::NdarrayShape(int arg, int axis) {
  return Make<NdarrayShapeStmt>(arg, axis);
}

FieldPtrStmt* IRBuilder::FieldPtr(int snode_id, std::vector<Stmt*> indices) {
  PrimitiveType dtype = PrimitiveType::kI32;
  if (snodes_ != nullptr && snode_id >= 0 && snode_id < snodes_->size()) {
    dtype = snodes_->node(snode_id).dtype;
  }
  return FieldPtr(snode_id, dtype, std::move(indices));
}

FieldPtrStmt* IRBuilder::FieldPtr(int snode_id, PrimitiveType dtype,
                                  std::vector<Stmt*> indices) {
  return Make<FieldPtrStmt>(snode_id, dtype, std::move(indices));
}

}  // namespace quadrants::ir
