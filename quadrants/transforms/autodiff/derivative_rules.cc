#include "quadrants/transforms/autodiff/derivative_rules.h"

#include "quadrants/transforms/autodiff/loop_shapes.h"

namespace quadrants::transforms::autodiff {
namespace {

using ir::BinaryOpKind;
using ir::PrimitiveType;
using ir::Stmt;
using ir::UnaryOpKind;

class Rules {
 public:
  explicit Rules(AdjointSweep& sweep) : sweep_(sweep), b_(sweep.builder()) {}

  void Unary(const ir::UnaryOpStmt& s, Stmt* x, Stmt* z) {
    const PrimitiveType t = s.type().element();
    const Stmt* in = s.input();
    Stmt* g = sweep_.LoadAdjoint(&s);
    auto one = [&] { return Const(t, 1); };
    switch (s.op()) {
      case UnaryOpKind::kNeg:
        sweep_.Accumulate(in, Neg(g));
        break;
      case UnaryOpKind::kCast:
        // Integer sources stop gradients; float sources convert back.
        if (IsFloatValue(in))
          sweep_.Accumulate(in, b_.Cast(g, in->type().element()));
        break;
      case UnaryOpKind::kAbs: {
        Stmt* sign =
            b_.Select(b_.Binary(BinaryOpKind::kGt, x, Zero(t)), one(),
                      b_.Select(b_.Lt(x, Zero(t)), Const(t, -1), Zero(t)));
        sweep_.Accumulate(in, b_.Mul(g, sign));
        break;
      }
      case UnaryOpKind::kSqrt:
        sweep_.Accumulate(in, b_.Div(g, b_.Mul(Const(t, 2), z)));
        break;
      case UnaryOpKind::kRsqrt:
        sweep_.Accumulate(in, b_.Div(b_.Mul(b_.Mul(g, Const(t, -0.5)), z), x));
        break;
      case UnaryOpKind::kSin: {
        Stmt* cos = sweep_.StackedDerivative(s);
        sweep_.Accumulate(in, b_.Mul(g, cos ? cos : b_.Unary(UnaryOpKind::kCos, x)));
        break;
      }
      case UnaryOpKind::kCos: {
        Stmt* sin = sweep_.StackedDerivative(s);
        sweep_.Accumulate(in,
                   Neg(b_.Mul(g, sin ? sin : b_.Unary(UnaryOpKind::kSin, x))));
        break;
      }
      case UnaryOpKind::kTan:
        sweep_.Accumulate(in, b_.Mul(g, b_.Add(one(), b_.Mul(z, z))));
        break;
      case UnaryOpKind::kTanh:
        sweep_.Accumulate(in, b_.Mul(g, b_.Sub(one(), b_.Mul(z, z))));
        break;
      case UnaryOpKind::kExp:
        sweep_.Accumulate(in, b_.Mul(g, z));
        break;
      case UnaryOpKind::kLog:
        sweep_.Accumulate(in, b_.Div(g, x));
        break;
      case UnaryOpKind::kAsin:
      case UnaryOpKind::kAcos: {
        Stmt* d = b_.Div(
            g, b_.Unary(UnaryOpKind::kSqrt, b_.Sub(one(), b_.Mul(x, x))));
        sweep_.Accumulate(in, s.op() == UnaryOpKind::kAsin ? d : Neg(d));
        break;
      }
      case UnaryOpKind::kFrexpMantissa:
        // mantissa = x * 2^-e with e piecewise constant: the slope is
        // mantissa / x (exactly 2^-e), taken as 0 at x = 0.
        sweep_.Accumulate(in, b_.Mul(g, FrexpSlope(x, z)));
        break;
      default:
        break;  // floor, ceil, round: zero almost everywhere; bit_cast
                // from an integer carries no gradient
    }
    sweep_.ResetAdjoint(&s);
  }

  Stmt* FrexpSlope(Stmt* x, Stmt* mantissa) {
    const PrimitiveType t = x->type().element();
    return b_.Select(b_.Binary(BinaryOpKind::kEq, x, Zero(t)), Zero(t),
                     b_.Div(mantissa, x));
  }

  void Binary(const ir::BinaryOpStmt& s, Stmt* x, Stmt* y, Stmt* z) {
    const PrimitiveType t = s.type().element();
    const Stmt* lhs = s.lhs();
    const Stmt* rhs = s.rhs();
    Stmt* g = sweep_.LoadAdjoint(&s);
    switch (s.op()) {
      case BinaryOpKind::kAdd:
        sweep_.Accumulate(lhs, g);
        sweep_.Accumulate(rhs, g);
        break;
      case BinaryOpKind::kSub:
        sweep_.Accumulate(lhs, g);
        sweep_.Accumulate(rhs, Neg(g));
        break;
      case BinaryOpKind::kMul:
        sweep_.Accumulate(lhs, b_.Mul(g, y));
        sweep_.Accumulate(rhs, b_.Mul(g, x));
        break;
      case BinaryOpKind::kDiv:
        sweep_.Accumulate(lhs, b_.Div(g, y));
        sweep_.Accumulate(rhs, Neg(b_.Div(b_.Mul(g, z), y)));
        break;
      case BinaryOpKind::kPow: {
        Stmt* power = b_.Binary(BinaryOpKind::kPow, x, b_.Sub(y, Const(t, 1)));
        sweep_.Accumulate(lhs, b_.Mul(b_.Mul(g, y), power));
        // d/dy x^y = x^y log x, defined for x > 0.
        Stmt* dy = b_.Mul(b_.Mul(g, z), b_.Unary(UnaryOpKind::kLog, x));
        sweep_.Accumulate(rhs, b_.Select(b_.Binary(BinaryOpKind::kGt, x, Zero(t)), dy,
                                  Zero(t)));
        break;
      }
      case BinaryOpKind::kAtan2: {  // atan2(x = y-coordinate, y = x-coordinate)
        Stmt* r = b_.Add(b_.Mul(x, x), b_.Mul(y, y));
        sweep_.Accumulate(lhs, b_.Div(b_.Mul(g, y), r));
        sweep_.Accumulate(rhs, Neg(b_.Div(b_.Mul(g, x), r)));
        break;
      }
      case BinaryOpKind::kMin:
      case BinaryOpKind::kMax: {
        Stmt* left_wins =
            b_.Binary(s.op() == BinaryOpKind::kMin ? BinaryOpKind::kLe
                                                   : BinaryOpKind::kGe,
                      x, y);
        sweep_.Accumulate(lhs, b_.Select(left_wins, g, Zero(t)));
        sweep_.Accumulate(rhs, b_.Select(left_wins, Zero(t), g));
        break;
      }
      case BinaryOpKind::kMod:
        sweep_.Accumulate(lhs, g);
        sweep_.Accumulate(rhs,
                   Neg(b_.Mul(g, b_.Binary(BinaryOpKind::kFloorDiv, x, y))));
        break;
      default:
        break;  // floordiv: zero almost everywhere
    }
    sweep_.ResetAdjoint(&s);
  }


 private:
  Stmt* Const(PrimitiveType t, double value) {
    return b_.Const(ir::Constant::Float(t, value));
  }
  Stmt* Zero(PrimitiveType t) {
    return ir::IsFloat(t) ? Const(t, 0) : b_.Const(ir::Constant::Int(t, 0));
  }
  Stmt* Neg(Stmt* x) { return b_.Unary(UnaryOpKind::kNeg, x); }

  AdjointSweep& sweep_;
  ir::IRBuilder& b_;
};

}  // namespace

void ReverseUnary(AdjointSweep& sweep, const ir::UnaryOpStmt& s, Stmt* x,
                  Stmt* z) {
  Rules(sweep).Unary(s, x, z);
}

void ReverseBinary(AdjointSweep& sweep, const ir::BinaryOpStmt& s, Stmt* x,
                   Stmt* y, Stmt* z) {
  Rules(sweep).Binary(s, x, y, z);
}

}  // namespace quadrants::transforms::autodiff
