#include "quadrants/codegen/spirv/msl_export.h"

#include <spirv_cross/spirv_cross_c.h>

#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "quadrants/common/dynamic_library.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::codegen::spirv {
namespace {

// X(member): the SPIRV-Cross C functions used here.
#define QD_SPVC_FUNCTIONS(X)                \
  X(spvc_context_create)                    \
  X(spvc_context_destroy)                   \
  X(spvc_context_get_last_error_string)     \
  X(spvc_context_parse_spirv)               \
  X(spvc_context_create_compiler)           \
  X(spvc_compiler_create_compiler_options)  \
  X(spvc_compiler_options_set_uint)         \
  X(spvc_compiler_install_compiler_options) \
  X(spvc_compiler_compile)

struct SpirvCross {
  std::unique_ptr<DynamicLibrary> library;
#define QD_DECLARE(name) decltype(&::name) name = nullptr;
  QD_SPVC_FUNCTIONS(QD_DECLARE)
#undef QD_DECLARE
};

absl::StatusOr<const SpirvCross*> Load() {
  static std::once_flag once;
  static absl::StatusOr<std::unique_ptr<SpirvCross>>* loaded = nullptr;
  std::call_once(once, [] {
    auto cross = std::make_unique<SpirvCross>();
    absl::Status status = [&]() -> absl::Status {
      QD_ASSIGN_OR_RETURN(cross->library,
                          DynamicLibrary::Open({"libspirv-cross-c-shared.so.0",
                                                "libspirv-cross-c-shared.so"}));
#define QD_LOAD(name) \
  QD_RETURN_IF_ERROR(cross->library->Load(#name, &cross->name));
      QD_SPVC_FUNCTIONS(QD_LOAD)
#undef QD_LOAD
      return absl::OkStatus();
    }();
    loaded = new absl::StatusOr<std::unique_ptr<SpirvCross>>(
        status.ok()
            ? absl::StatusOr<std::unique_ptr<SpirvCross>>(std::move(cross))
            : absl::StatusOr<std::unique_ptr<SpirvCross>>(
                  MakeError(ErrorKind::kUnavailable,
                            absl::StrCat("SPIRV-Cross is not "
                                         "available for MSL export: ",
                                         status.message()))));
  });
  if (!loaded->ok())
    return loaded->status();
  return loaded->value().get();
}

}  // namespace

absl::StatusOr<std::string> CrossCompileToMsl(
    absl::Span<const uint32_t> words) {
  QD_ASSIGN_OR_RETURN(const SpirvCross* cross, Load());
  spvc_context context = nullptr;
  if (cross->spvc_context_create(&context) != SPVC_SUCCESS)
    return MakeError(ErrorKind::kRuntime, "SPIRV-Cross: no context");
  std::unique_ptr<spvc_context_s, decltype(cross->spvc_context_destroy)> owner(
      context, cross->spvc_context_destroy);
  auto failure = [&](absl::string_view step) {
    return MakeError(
        ErrorKind::kCompilation,
        absl::StrCat("SPIRV-Cross could not ", step, " the module: ",
                     cross->spvc_context_get_last_error_string(context)));
  };
  spvc_parsed_ir ir = nullptr;
  if (cross->spvc_context_parse_spirv(context, words.data(), words.size(),
                                      &ir) != SPVC_SUCCESS) {
    return failure("parse");
  }
  spvc_compiler compiler = nullptr;
  if (cross->spvc_context_create_compiler(context, SPVC_BACKEND_MSL, ir,
                                          SPVC_CAPTURE_MODE_TAKE_OWNERSHIP,
                                          &compiler) != SPVC_SUCCESS) {
    return failure("load");
  }
  spvc_compiler_options options = nullptr;
  if (cross->spvc_compiler_create_compiler_options(compiler, &options) !=
          SPVC_SUCCESS ||
      cross->spvc_compiler_options_set_uint(
          options, SPVC_COMPILER_OPTION_MSL_VERSION,
          SPVC_MAKE_MSL_VERSION(2, 3, 0)) != SPVC_SUCCESS ||
      cross->spvc_compiler_install_compiler_options(compiler, options) !=
          SPVC_SUCCESS) {
    return failure("configure MSL output for");
  }
  const char* source = nullptr;
  if (cross->spvc_compiler_compile(compiler, &source) != SPVC_SUCCESS)
    return failure("cross-compile");
  return std::string(source);
}

}  // namespace quadrants::codegen::spirv
