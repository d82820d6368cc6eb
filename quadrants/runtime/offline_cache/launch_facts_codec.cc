#include "quadrants/runtime/offline_cache/launch_facts_codec.h"

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/op_kinds.h"

namespace quadrants::offline_cache {
namespace {

absl::Status Corrupt(absl::string_view what) {
  return MakeError(ErrorKind::kRuntime,
                   absl::StrCat("corrupt offline cache entry: ", what));
}

bool InRange(int32_t value, int32_t last) { return value >= 0 && value <= last; }

constexpr int32_t kLastType = static_cast<int32_t>(ir::PrimitiveType::kF64);

void EncodeGate(const absl::optional<ir::AdStackGate>& gate,
                proto::AdStackGate* out) {
  out->set_present(gate.has_value());
  if (!gate)
    return;
  out->set_is_field(gate->is_field);
  out->set_id(gate->id);
  out->set_dtype(static_cast<int32_t>(gate->dtype));
  for (const ir::AdStackGateIndex& index : gate->indices) {
    proto::GateIndex* i = out->add_indices();
    i->set_kind(static_cast<int32_t>(index.kind));
    i->set_axis(index.axis);
    i->set_divisor(index.divisor);
    i->set_modulus(index.modulus);
    i->set_value(index.value);
  }
  out->set_op(static_cast<int32_t>(gate->op));
  out->set_threshold(gate->threshold);
  out->set_int_threshold(gate->int_threshold);
  out->set_label(gate->label);
}

absl::StatusOr<absl::optional<ir::AdStackGate>> DecodeGate(
    const proto::AdStackGate& in) {
  if (!in.present())
    return absl::optional<ir::AdStackGate>();
  ir::AdStackGate gate;
  gate.is_field = in.is_field();
  gate.id = in.id();
  if (!InRange(in.dtype(), kLastType))
    return Corrupt("adstack gate type");
  gate.dtype = static_cast<ir::PrimitiveType>(in.dtype());
  for (const proto::GateIndex& i : in.indices()) {
    if (!InRange(i.kind(),
                 static_cast<int32_t>(ir::AdStackGateIndex::Kind::kArg)) ||
        i.divisor() <= 0 || i.modulus() < 0) {
      return Corrupt("adstack gate index");
    }
    ir::AdStackGateIndex index;
    index.kind = static_cast<ir::AdStackGateIndex::Kind>(i.kind());
    index.axis = i.axis();
    index.divisor = i.divisor();
    index.modulus = i.modulus();
    index.value = i.value();
    gate.indices.push_back(index);
  }
  const auto op = static_cast<ir::BinaryOpKind>(in.op());
  if (in.op() < 0 || !ir::IsComparison(op))
    return Corrupt("adstack gate comparison");
  gate.op = op;
  gate.threshold = in.threshold();
  gate.int_threshold = in.int_threshold();
  gate.label = in.label();
  return absl::optional<ir::AdStackGate>(std::move(gate));
}

}  // namespace

void EncodeLaunchFacts(const LaunchFacts& facts, proto::LaunchFacts* out) {
  out->set_kernel_name(facts.kernel_name);
  for (const ir::KernelParam& param : facts.params) {
    proto::KernelParam* p = out->add_params();
    p->set_kind(static_cast<int32_t>(param.kind));
    p->set_name(param.name);
    p->set_dtype(static_cast<int32_t>(param.dtype));
    p->set_ndim(param.ndim);
    p->set_snode_id(param.snode_id);
  }
  for (int snode : facts.written_snodes)
    out->add_written_snodes(snode);
  for (int arg : facts.written_args)
    out->add_written_args(arg);
  out->set_draws_random(facts.draws_random);
  out->set_uses_fields(facts.uses_fields);
  for (const auto& gate : facts.adstack_gates)
    EncodeGate(gate, out->add_adstack_gates());
}

absl::StatusOr<LaunchFacts> DecodeLaunchFacts(const proto::LaunchFacts& in) {
  LaunchFacts facts;
  facts.kernel_name = in.kernel_name();
  for (const proto::KernelParam& p : in.params()) {
    if (!InRange(p.kind(),
                 static_cast<int32_t>(ir::KernelParam::Kind::kField)) ||
        !InRange(p.dtype(), kLastType) || p.ndim() < 0) {
      return Corrupt("kernel parameter");
    }
    facts.params.push_back(
        ir::KernelParam{static_cast<ir::KernelParam::Kind>(p.kind()), p.name(),
                        static_cast<ir::PrimitiveType>(p.dtype()), p.ndim(),
                        p.snode_id()});
  }
  const int num_params = static_cast<int>(facts.params.size());
  for (int32_t arg : in.written_args()) {
    if (!InRange(arg, num_params - 1))
      return Corrupt("written parameter");
    facts.written_args.push_back(arg);
  }
  facts.written_snodes.assign(in.written_snodes().begin(),
                              in.written_snodes().end());
  facts.draws_random = in.draws_random();
  facts.uses_fields = in.uses_fields();
  for (const proto::AdStackGate& gate : in.adstack_gates()) {
    auto decoded = DecodeGate(gate);
    if (!decoded.ok())
      return decoded.status();
    facts.adstack_gates.push_back(*std::move(decoded));
  }
  return facts;
}

}  // namespace quadrants::offline_cache
