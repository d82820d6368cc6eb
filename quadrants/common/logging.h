#ifndef QUADRANTS_COMMON_LOGGING_H_
#define QUADRANTS_COMMON_LOGGING_H_

#include <sstream>

#include "absl/strings/string_view.h"

namespace quadrants {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// The threshold comes from QD_LOG_LEVEL (debug|info|warning|error), default
// warning, so a library user sees warnings and errors only.
LogLevel GetLogThreshold();
void SetLogThreshold(LogLevel level);

// Collects one message and writes it to stderr, with its level and origin,
// when destroyed.
class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;

  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

// Swallows a stream expression whose level is below the threshold.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace quadrants

#define QD_LOG_LEVEL_DEBUG ::quadrants::LogLevel::kDebug
#define QD_LOG_LEVEL_INFO ::quadrants::LogLevel::kInfo
#define QD_LOG_LEVEL_WARNING ::quadrants::LogLevel::kWarning
#define QD_LOG_LEVEL_ERROR ::quadrants::LogLevel::kError

// QD_LOG(WARNING) << "text"; the message is built only when it will print.
#define QD_LOG(severity)                                               \
  (QD_LOG_LEVEL_##severity < ::quadrants::GetLogThreshold())           \
      ? (void)0                                                        \
      : ::quadrants::LogVoidify() &                                    \
            ::quadrants::LogMessage(QD_LOG_LEVEL_##severity, __FILE__, \
                                    __LINE__)                          \
                .stream()

#endif  // QUADRANTS_COMMON_LOGGING_H_
