#include "quadrants/program/field_access.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "quadrants/ir/snode.h"

namespace quadrants {
namespace {

// Host memory the host may not address in place: every access goes
// through its copies, which count the bytes they move.
class CopiedMemory : public ArrayMemory {
 public:
  absl::StatusOr<void*> Allocate(int64_t) override { return nullptr; }
  void Free(void*) override {}
  bool host_addressable() const override { return false; }
  absl::Status CopyToHost(void* host, const void* data,
                          int64_t bytes) override {
    copied += bytes;
    return ArrayMemory::CopyToHost(host, data, bytes);
  }
  absl::Status CopyFromHost(void* data, const void* host,
                            int64_t bytes) override {
    copied += bytes;
    return ArrayMemory::CopyFromHost(data, host, bytes);
  }
  int64_t copied = 0;
};

class HostMemory : public ArrayMemory {
 public:
  absl::StatusOr<void*> Allocate(int64_t) override { return nullptr; }
  void Free(void*) override {}
};

// A tree whose root holds, in order: `extra` (an i32 place filling the
// gap between components where `interleave` is set), then the components.
struct Tree {
  ir::SNodeTree snodes;
  std::vector<int> places;
  std::vector<char> root;

  // `components` f32 places over a (rows, cols) field, AoS (one dense cell
  // holding every component, and an i32 besides with `other`) or SoA (a
  // dense level per component).
  Tree(int components, int64_t rows, int64_t cols, bool soa, bool other) {
    if (soa) {
      for (int k = 0; k < components; ++k) {
        int cell = *snodes.AddDense(snodes.root(), {0, 1}, {rows, cols});
        places.push_back(*snodes.AddPlace(cell, ir::PrimitiveType::kF32, "c"));
      }
    } else {
      int cell = *snodes.AddDense(snodes.root(), {0, 1}, {rows, cols});
      for (int k = 0; k < components; ++k) {
        places.push_back(*snodes.AddPlace(cell, ir::PrimitiveType::kF32, "c"));
        if (other && k == 0)
          (void)*snodes.AddPlace(cell, ir::PrimitiveType::kI32, "other");
      }
    }
    EXPECT_TRUE(snodes.Finalize().ok());
    root.assign(static_cast<size_t>(snodes.root_bytes()), 0);
  }

  PlaceAccess Access(ArrayMemory& memory) {
    std::vector<ir::PlaceLayout> layouts;
    for (int p : places)
      layouts.push_back(*snodes.Layout(p));
    return PlaceAccess(memory, root.data(), std::move(layouts), 4);
  }
};

std::vector<float> Ramp(int64_t n) {
  std::vector<float> values(n);
  std::iota(values.begin(), values.end(), 1.0f);
  return values;
}

// Writes a ramp through one access and reads it back through another; then
// checks each element landed where its layout says.
void RoundTrip(Tree& tree, ArrayMemory& memory, int64_t rows, int64_t cols) {
  const int n = static_cast<int>(tree.places.size());
  const std::vector<float> in = Ramp(rows * cols * n);
  PlaceAccess access = tree.Access(memory);
  EXPECT_EQ(access.count(), rows * cols);
  ASSERT_TRUE(access.Write(in.data()).ok());
  std::vector<float> out(in.size(), -1.0f);
  ASSERT_TRUE(tree.Access(memory).Read(out.data()).ok());
  EXPECT_EQ(out, in);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      for (int k = 0; k < n; ++k) {
        const ir::PlaceLayout layout = *tree.snodes.Layout(tree.places[k]);
        float stored;
        std::memcpy(&stored, tree.root.data() + layout.ByteOffset({i, j}), 4);
        EXPECT_EQ(stored, in[(i * cols + j) * n + k]) << i << "," << j << "," << k;
      }
    }
  }
}

TEST(PlaceAccessTest, AosComponentsMoveInOneCopy) {
  Tree tree(3, 4, 5, /*soa=*/false, /*other=*/false);
  CopiedMemory memory;
  RoundTrip(tree, memory, 4, 5);
  // One span each way, no read-back: the packed path.
  EXPECT_EQ(memory.copied, 2 * 4 * 5 * 3 * 4);
}

TEST(PlaceAccessTest, SoaComponentsInterleaveInHostRows) {
  // The largest is more than one thread's share (2 MiB).
  for (int64_t cols : {1, 7, 5000, 200000}) {
    Tree tree(9, 3, cols, /*soa=*/true, /*other=*/false);
    HostMemory memory;
    RoundTrip(tree, memory, 3, cols);
  }
}

TEST(PlaceAccessTest, OtherPlacesBetweenComponentsKeepTheirBytes) {
  Tree tree(2, 6, 3, /*soa=*/false, /*other=*/true);
  const ir::PlaceLayout other = *tree.snodes.Layout(tree.places[0] + 1);
  for (ArrayMemory* memory : {static_cast<ArrayMemory*>(new HostMemory),
                              static_cast<ArrayMemory*>(new CopiedMemory)}) {
    std::fill(tree.root.begin(), tree.root.end(), 0);
    const int32_t marker = 0x5a5a5a5a;
    std::memcpy(tree.root.data() + other.ByteOffset({2, 1}), &marker, 4);
    RoundTrip(tree, *memory, 6, 3);
    int32_t kept;
    std::memcpy(&kept, tree.root.data() + other.ByteOffset({2, 1}), 4);
    EXPECT_EQ(kept, marker);
    delete memory;
  }
}

TEST(PlaceAccessTest, FillWritesEveryComponent) {
  Tree tree(4, 2, 3, /*soa=*/true, /*other=*/false);
  HostMemory memory;
  const float value = 2.5f;
  ASSERT_TRUE(tree.Access(memory).Fill(&value).ok());
  std::vector<float> out(2 * 3 * 4);
  ASSERT_TRUE(tree.Access(memory).Read(out.data()).ok());
  EXPECT_EQ(out, std::vector<float>(out.size(), value));
}

}  // namespace
}  // namespace quadrants
