#include "quadrants/ir/hash.h"

#include <string>

#include "quadrants/ir/printer.h"

namespace quadrants::ir {

uint64_t StructuralHash(const Kernel& kernel) {
  // The printed form with locations is canonical: statement numbers follow
  // program order and constants print round-trip exact.
  const std::string text = PrintKernel(kernel, PrintOptions{.locations = true});
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace quadrants::ir
