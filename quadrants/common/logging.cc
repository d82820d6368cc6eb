#include "quadrants/common/logging.h"

#include <atomic>
#include <cstring>
#include <iostream>
#include <mutex>
#include <string>

#include "quadrants/common/options.h"

namespace quadrants {
namespace {

// A threshold above every level: nothing is written.
constexpr LogLevel kNothing = static_cast<LogLevel>(4);

// A value qd.init would reject reads as the default, warning. trace and
// warn are upstream's names; critical and off print nothing, as no message
// here is critical.
LogLevel ThresholdFromEnvironment() {
  const std::string value = options::EnvString(options::Option::kLogLevel);
  if (value == "debug" || value == "trace")
    return LogLevel::kDebug;
  if (value == "info")
    return LogLevel::kInfo;
  if (value == "error")
    return LogLevel::kError;
  if (value == "critical" || value == "off")
    return kNothing;
  return LogLevel::kWarning;
}

std::atomic<int>& Threshold() {
  static std::atomic<int> threshold{
      static_cast<int>(ThresholdFromEnvironment())};
  return threshold;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "D";
    case LogLevel::kInfo:
      return "I";
    case LogLevel::kWarning:
      return "W";
    case LogLevel::kError:
      return "E";
  }
  return "?";
}

const char* Basename(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

LogLevel GetLogThreshold() {
  return static_cast<LogLevel>(Threshold().load());
}

void SetLogThreshold(LogLevel level) {
  Threshold().store(static_cast<int>(level));
}

LogMessage::LogMessage(LogLevel level, const char* file, int line)
    : level_(level), file_(file), line_(line) {}

LogMessage::~LogMessage() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::cerr << "[quadrants " << LevelName(level_) << " " << Basename(file_)
            << ":" << line_ << "] " << stream_.str() << std::endl;
}

}  // namespace quadrants
