#ifndef QUADRANTS_COMMON_STATUS_MACROS_H_
#define QUADRANTS_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns from the enclosing function when `expr` (an absl::Status) fails.
#define QD_RETURN_IF_ERROR(expr)        \
  do {                                  \
    ::absl::Status qd_status_ = (expr); \
    if (!qd_status_.ok())               \
      return qd_status_;                \
  } while (false)

#define QD_STATUS_CONCAT_INNER_(a, b) a##b
#define QD_STATUS_CONCAT_(a, b) QD_STATUS_CONCAT_INNER_(a, b)

// `QD_ASSIGN_OR_RETURN(auto x, MakeX());` unwraps an absl::StatusOr or
// returns its error from the enclosing function.
#define QD_ASSIGN_OR_RETURN(lhs, expr)                                      \
  QD_ASSIGN_OR_RETURN_IMPL_(QD_STATUS_CONCAT_(qd_statusor_, __LINE__), lhs, \
                            expr)

#define QD_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok())                                  \
    return std::move(tmp).status();               \
  lhs = std::move(tmp).value()

#endif  // QUADRANTS_COMMON_STATUS_MACROS_H_
