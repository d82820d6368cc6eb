// A hand-written forward + reverse pass of the adstack benchmark's
// recurrence, v = sin(v) * a + x[i] for `iterations` steps per thread, with
// an explicit per-thread tape: the reference a compiler-generated gradient
// should stay close to. Prints the best time of a forward+reverse pass.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: tape_reference THREADS ITERATIONS WORKERS\n");
    return 2;
  }
  const int n = std::atoi(argv[1]);
  const int iterations = std::atoi(argv[2]);
  const int workers = std::max(1, std::atoi(argv[3]));
  const float a = 0.9f;
  std::vector<float> x(n), grad(n);
  for (int i = 0; i < n; ++i)
    x[i] = 0.1f + 0.5f * i / n;
  std::vector<std::vector<float>> tapes(workers,
                                        std::vector<float>(iterations));
  std::vector<double> partial(workers);

  auto run = [&](int w) {
    std::vector<float>& tape = tapes[w];
    double loss = 0;
    for (int i = w; i < n; i += workers) {
      float v = x[i];
      for (int j = 0; j < iterations; ++j) {
        tape[j] = v;
        v = std::sin(v) * a + x[i];
      }
      loss += v;
      float g = 1.0f, gx = 0.0f;
      for (int j = iterations - 1; j >= 0; --j) {
        gx += g;
        g = g * std::cos(tape[j]) * a;
      }
      grad[i] = gx + g;
    }
    partial[w] = loss;
  };

  double best = 1e30;
  for (int repeat = 0; repeat < 5; ++repeat) {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int w = 1; w < workers; ++w)
      threads.emplace_back(run, w);
    run(0);
    for (auto& t : threads)
      t.join();
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
  }
  double checksum = 0;
  for (int i = 0; i < n; ++i)
    checksum += grad[i];
  std::printf("seconds=%.9f checksum=%.6f\n", best, checksum);
  return 0;
}
