#include "quadrants/adstack/reducer_job.h"

#include <algorithm>

namespace quadrants::adstack {

int64_t ReducerJob::Points() const {
  int64_t points = 1;
  for (size_t a = 0; a < begin.size(); ++a) {
    const int64_t n = std::max<int64_t>(0, end[a] - begin[a]);
    if (n == 0)
      return 0;
    if (points > std::numeric_limits<int64_t>::max() / n)
      return std::numeric_limits<int64_t>::max();
    points *= n;
  }
  return points;
}

}  // namespace quadrants::adstack
