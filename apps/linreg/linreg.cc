// linreg: linear regression by gradient descent over generated dense data
// (GML's LinReg) on every place of an APGAS job, resilient through the
// iterative executors (fox/apgas/iterative.h, apps/common/map_reduce.h).
//
//   fox run linreg [--places N] [--spares S] -- [samples=N] [features=D]
//       [iterations=I] [rate=A] [lambda=L] [seed=S] [blocks=B]
//       [executor=global|spmd] [every=N] [mtbf=SECONDS] [shrink=1|0] [check=1|0] [trace=1|0]
//
// Sample i: D features uniform in [-1, 1) and its target y = x . w* + noise
// (w* uniform in [-1, 1), noise in [-0.1, 0.1)), all from seed and i alone,
// in blocks dealt to the active places by index. A step: every place adds,
// over its samples, the residual r = x . w - y times x (the gradient) and r^2;
// then w -= rate * (gradient / N + lambda * w). The sums are integers (each
// term in units of 2^-24, r^2 in 2^-16, saturated at 2^31 units), so that
// they are exact in any order: a run through failures gives the same bits
// as one place (check=1). The checkpoint is w and the step.
//
// Prints the mean squared error (of the last step's w), the coefficients
// and their distance to w*. Exit status 0; 1 on a mismatch or a failure it
// could not recover from; 2 for bad arguments.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/args.h"
#include "../common/map_reduce.h"
#include "gd.h"
#include "fox/apgas/apgas.h"

int main(int argc, char** argv) {
  linreg::Config c;
  fox::apps::RunOptions o;
  fox::apps::Args args("linreg");
  args.UInt("samples", &c.samples, 1, uint64_t(1) << 26)
      .UInt("features", &c.features, 1, 4096)
      .UInt("iterations", &c.iterations, 0, 1'000'000)
      .Real("rate", &c.rate, 0, 1e6)
      .Real("lambda", &c.lambda, 0, 1e6)
      .UInt("seed", &c.seed, 0, UINT64_MAX)
      .UInt("blocks", &c.blocks, 1, 1 << 16);
  o.AddTo(args);
  if (!args.Parse(argc, argv)) return 2;
  return fox::apgas::Main(argc, argv, [c, o] {
    std::printf("linreg: %" PRIu64 " samples of %" PRIu64 " features, rate %g, lambda %g\n", c.samples, c.features,
                c.rate, c.lambda);
    fox::apps::RunIterative<linreg::LinReg>(c, o);
  });
}
