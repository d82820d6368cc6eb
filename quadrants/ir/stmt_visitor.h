#ifndef QUADRANTS_IR_STMT_VISITOR_H_
#define QUADRANTS_IR_STMT_VISITOR_H_

#include "quadrants/ir/statements.h"
#include "quadrants/ir/stmt.h"

namespace quadrants::ir {

// Dispatches a statement to `Derived::Visit<Kind>(const <Kind>Stmt&)`, one
// method per statement kind, so code generators and passes write their
// per-kind code once and share the dispatch. Kinds a visitor leaves out go
// to `Derived::VisitStmt(const Stmt&)`, which it defines (e.g. as an
// "unsupported statement" error).
template <typename Derived, typename Result>
class StmtVisitor {
 public:
  Result Visit(const Stmt& s) {
    switch (s.kind()) {
#define QD_VISIT_KIND(name) \
  case StmtKind::k##name:   \
    return derived().Visit##name(static_cast<const name##Stmt&>(s));
      QD_FOR_EACH_STMT_KIND(QD_VISIT_KIND)
#undef QD_VISIT_KIND
    }
    return derived().VisitStmt(s);
  }

#define QD_DEFAULT_VISIT(name)                   \
  Result Visit##name(const name##Stmt& s) {      \
    return derived().VisitStmt(s);               \
  }
  QD_FOR_EACH_STMT_KIND(QD_DEFAULT_VISIT)
#undef QD_DEFAULT_VISIT

 private:
  Derived& derived() { return *static_cast<Derived*>(this); }
};

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_STMT_VISITOR_H_
