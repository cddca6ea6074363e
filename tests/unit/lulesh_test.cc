// LULESH's Sedov problem (apps/lulesh/hydro.h) driven in one process: a
// test cluster holds every subdomain and moves the exchanges' vectors
// between them, in forward, reverse or shuffled order, as the application
// moves them between places.
//
// Reference numbers: LLNL's LULESH 2.0 built serially (-DUSE_MPI=0, no
// OpenMP), `lulesh2.0 -s N` (default -r 11): iteration count and "Final
// Origin Energy" as it prints them (%12.6e). The exact bits are those of
// the same reference with its cube root replaced by lulesh::CubeRoot.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../../apps/lulesh/cube_root.h"
#include "../../apps/lulesh/hydro.h"

namespace lulesh {
namespace {

enum class Order { kForward, kReverse, kShuffled };

// All subdomains of one problem, stepped together.
class Cluster {
 public:
  explicit Cluster(const Config& config, Order order = Order::kForward) : config_(config), order_(order), random_(7) {
    const uint64_t count = config.domains * config.domains * config.domains;
    for (uint64_t i = 0; i < count; ++i) domains_.emplace_back(config, i);
    Setup();
  }

  // Rebuilds every subdomain from its saved state.
  Cluster(const Config& config, const std::vector<std::vector<double>>& states, Order order = Order::kForward)
      : config_(config), order_(order), random_(11) {
    for (uint64_t i = 0; i < states.size(); ++i) domains_.push_back(Domain::Restore(config, i, states[i]));
    Setup();
  }

  // One step on every subdomain; false once the run is done.
  bool Step() {
    if (domains_[0].Done()) return false;
    TimeConstraints global = domains_[0].Constraints();
    for (const Domain& d : domains_) global = Min(global, d.Constraints());
    for (size_t i : PhaseOrder()) domains_[i].StartStep(global);
    Deliver(Exchange::kNodalForce);
    for (size_t i : PhaseOrder()) domains_[i].AdvanceNodes();
    Deliver(Exchange::kVelocityGradient);
    for (size_t i : PhaseOrder()) domains_[i].FinishStep();
    return true;
  }

  void Run() {
    while (Step()) {
    }
  }

  std::vector<std::vector<double>> Save() const {
    std::vector<std::vector<double>> states;
    for (const Domain& d : domains_) states.push_back(d.Save());
    return states;
  }

  const Domain& origin() const { return domains_[0]; }
  std::vector<Domain>& domains() { return domains_; }

 private:
  struct Message {
    uint64_t to;
    int from_direction;
    std::vector<double> data;
  };

  void Setup() {
    Deliver(Exchange::kNodalMass);
    for (size_t i : PhaseOrder()) domains_[i].CompleteSetup();
  }

  std::vector<size_t> PhaseOrder() {
    std::vector<size_t> order(domains_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (order_ == Order::kReverse) std::reverse(order.begin(), order.end());
    if (order_ == Order::kShuffled) std::shuffle(order.begin(), order.end(), random_);
    return order;
  }

  void Deliver(Exchange kind) {
    std::vector<Message> messages;
    for (const Domain& d : domains_) {
      for (int direction : d.Directions(kind)) {
        messages.push_back({d.Neighbour(direction), Domain::Opposite(direction), d.Export(kind, direction)});
      }
    }
    if (order_ == Order::kReverse) std::reverse(messages.begin(), messages.end());
    if (order_ == Order::kShuffled) std::shuffle(messages.begin(), messages.end(), random_);
    for (const Message& m : messages) domains_[m.to].Import(kind, m.from_direction, m.data);
  }

  Config config_;
  Order order_;
  std::mt19937_64 random_;
  std::vector<Domain> domains_;
};

std::string Printed(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%12.6e", value);
  return text;
}

Config Problem(uint64_t size, uint64_t domains, uint64_t iterations = 0) {
  Config config;
  config.size = size;
  config.domains = domains;
  config.iterations = iterations;
  return config;
}

TEST(LuleshReference, SingleDomainSize5) {
  Cluster c(Problem(5, 1));
  c.Run();
  EXPECT_EQ(c.origin().cycle(), 72u);
  EXPECT_EQ(Printed(c.origin().OriginEnergy()), "7.853665e+03");
  EXPECT_EQ(c.origin().OriginEnergy(), 0x1.eadaa44225ceap+12);  // 7.85366510214584741e+03
  EXPECT_EQ(c.origin().time(), 0x1.47ae147ae147bp-7);           // 0.01
  // LULESH's symmetry check, bit for bit.
  SymmetryReport s = c.origin().Symmetry();
  EXPECT_EQ(s.max_abs_diff, 0x1.8p-40);
  EXPECT_EQ(s.total_abs_diff, 0x1.74483p-39);
  EXPECT_EQ(s.max_rel_diff, 0x1.907e7ab3b4c01p-50);
}

TEST(LuleshReference, SingleDomainSize10) {
  Cluster c(Problem(10, 1));
  c.Run();
  EXPECT_EQ(c.origin().cycle(), 231u);
  EXPECT_EQ(Printed(c.origin().OriginEnergy()), "2.720531e+04");
  EXPECT_EQ(c.origin().OriginEnergy(), 0x1.a9153f2a466p+14);  // 2.72053116847034544e+04
}

TEST(LuleshReference, IterationCapStopsEarly) {
  Cluster c(Problem(5, 1, 10));
  c.Run();
  EXPECT_EQ(c.origin().cycle(), 10u);
  EXPECT_LT(c.origin().time(), 0.01);
}

// Eight subdomains of size 5 are the problem of size 10.
TEST(LuleshDecomposed, EightSubdomainsAgreeWithOneDomainOfTwiceTheSize) {
  Cluster forward(Problem(5, 2), Order::kForward);
  forward.Run();
  EXPECT_EQ(forward.origin().cycle(), 231u);
  EXPECT_EQ(Printed(forward.origin().OriginEnergy()), "2.720531e+04");
  // Only the shared nodes' sums are ordered differently from the single
  // domain's: observed relative difference 8e-16.
  const double single = 0x1.a9153f2a466p+14;
  EXPECT_LT(std::fabs(forward.origin().OriginEnergy() - single) / single, 1e-12);

  const std::vector<std::vector<double>> expected = forward.Save();
  for (Order order : {Order::kReverse, Order::kShuffled}) {
    Cluster other(Problem(5, 2), order);
    other.Run();
    EXPECT_EQ(other.Save(), expected) << "delivery order " << int(order);
  }
}

// 27 subdomains: the centre one has all 26 neighbours.
TEST(LuleshDecomposed, TwentySevenSubdomainsAreOrderIndependent) {
  Cluster forward(Problem(3, 3), Order::kForward);
  forward.Run();
  EXPECT_EQ(forward.origin().cycle(), 196u);                            // lulesh2.0 -s 9
  EXPECT_EQ(Printed(forward.origin().OriginEnergy()), "2.221045e+04");  // lulesh2.0 -s 9
  EXPECT_EQ(forward.domains()[13].Directions(Exchange::kNodalForce).size(), 26u);
  EXPECT_EQ(forward.domains()[13].Directions(Exchange::kVelocityGradient).size(), 6u);
  Cluster shuffled(Problem(3, 3), Order::kShuffled);
  shuffled.Run();
  EXPECT_EQ(shuffled.Save(), forward.Save());
}

TEST(LuleshCheckpoint, RestoredRunContinuesBitForBit) {
  const Config config = Problem(4, 2);
  Cluster whole(config);
  whole.Run();

  Cluster first(config);
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(first.Step());
  std::vector<std::vector<double>> states = first.Save();
  EXPECT_EQ(states[0].size(), 10 + 6 * 125 + 5 * 64u);
  Cluster second(config, states, Order::kShuffled);
  EXPECT_EQ(second.origin().cycle(), 40u);
  second.Run();
  EXPECT_EQ(second.Save(), whole.Save());
  EXPECT_EQ(second.origin().OriginEnergy(), whole.origin().OriginEnergy());
}

TEST(LuleshCheckpoint, MalformedStateIsRefused) {
  const Config config = Problem(3, 2);
  Cluster c(config);
  ASSERT_TRUE(c.Step());
  std::vector<double> state = c.domains()[1].Save();

  auto failure_of = [&](const std::vector<double>& s, uint64_t index) -> std::optional<Failure> {
    try {
      Domain::Restore(config, index, s);
    } catch (const HydroError& e) {
      return e.failure();
    }
    return std::nullopt;
  };
  std::vector<double> shorter(state.begin(), state.end() - 1);
  EXPECT_EQ(failure_of(shorter, 1), Failure::kBadState);
  std::vector<double> longer = state;
  longer.push_back(0.0);
  EXPECT_EQ(failure_of(longer, 1), Failure::kBadState);
  EXPECT_EQ(failure_of({}, 1), Failure::kBadState);
  EXPECT_EQ(failure_of(state, 2), Failure::kBadState);  // saved as subdomain 1
  std::vector<double> bad = state;
  bad[bad.size() / 2] = NAN;
  EXPECT_EQ(failure_of(bad, 1), Failure::kBadState);
  bad = state;
  bad[0] = 1.0;
  EXPECT_EQ(failure_of(bad, 1), Failure::kBadState);
  EXPECT_EQ(failure_of(state, 1), std::nullopt);  // the good one is taken
}

TEST(LuleshErrors, BadConfigIsRefused) {
  auto failure_of = [](const Config& config, uint64_t index) {
    try {
      Domain d(config, index);
    } catch (const HydroError& e) {
      return e.failure();
    }
    return Failure::kProtocol;
  };
  EXPECT_EQ(failure_of(Problem(0, 1), 0), Failure::kBadConfig);
  EXPECT_EQ(failure_of(Problem(3, 0), 0), Failure::kBadConfig);
  EXPECT_EQ(failure_of(Problem(3, 2), 8), Failure::kBadConfig);
  EXPECT_EQ(failure_of(Problem(kMaxSize + 1, 1), 0), Failure::kBadConfig);
}

TEST(LuleshErrors, ProtocolViolationsAreRefused) {
  const Config config = Problem(3, 2);
  Domain a(config, 0), b(config, 1);  // b lies at +x of a
  const int plus_x = Domain::Direction(1, 0, 0), minus_x = Domain::Direction(-1, 0, 0);
  EXPECT_EQ(a.Neighbour(plus_x), 1u);
  EXPECT_THROW(a.Neighbour(minus_x), HydroError);
  EXPECT_EQ(a.ExportSize(Exchange::kNodalMass, plus_x), 16u);
  EXPECT_EQ(a.ExportSize(Exchange::kNodalForce, plus_x), 48u);
  EXPECT_EQ(a.ExportSize(Exchange::kVelocityGradient, plus_x), 9u);
  EXPECT_EQ(a.ExportSize(Exchange::kVelocityGradient, Domain::Direction(1, 1, 0)), 0u);

  auto failure_of = [](auto&& call) {
    try {
      call();
    } catch (const HydroError& e) {
      return e.failure();
    }
    return Failure::kBadState;  // not refused
  };
  // Setup needs every mass import; a step cannot start before it.
  EXPECT_EQ(failure_of([&] { a.CompleteSetup(); }), Failure::kProtocol);
  EXPECT_EQ(failure_of([&] { a.StartStep({}); }), Failure::kProtocol);
  EXPECT_EQ(failure_of([&] { a.Save(); }), Failure::kProtocol);
  // Wrong length, wrong direction, wrong kind, twice.
  std::vector<double> mass = b.Export(Exchange::kNodalMass, minus_x);
  EXPECT_EQ(failure_of([&] { a.Import(Exchange::kNodalMass, plus_x, std::vector<double>(3)); }), Failure::kProtocol);
  EXPECT_EQ(failure_of([&] { a.Import(Exchange::kNodalMass, minus_x, mass); }), Failure::kProtocol);
  EXPECT_EQ(failure_of([&] { a.Import(Exchange::kNodalForce, plus_x, mass); }), Failure::kProtocol);
  a.Import(Exchange::kNodalMass, plus_x, mass);
  EXPECT_EQ(failure_of([&] { a.Import(Exchange::kNodalMass, plus_x, mass); }), Failure::kProtocol);
  // Forces cannot be exported before StartStep.
  EXPECT_EQ(failure_of([&] { a.Export(Exchange::kNodalForce, plus_x); }), Failure::kProtocol);
}

// An inverted element is reported as LULESH's VolumeError, not an exit.
TEST(LuleshErrors, InvertedElementIsReported) {
  const Config config = Problem(3, 1);
  Domain fresh(config, 0);
  fresh.CompleteSetup();
  std::vector<double> state = fresh.Save();
  // Move node 0 (the origin corner of element 0) far through the element.
  state[10 + 0] = 2.0;
  state[10 + 1] = 2.0;
  state[10 + 2] = 2.0;
  Domain broken = Domain::Restore(config, 0, state);
  broken.CompleteSetup();
  try {
    broken.StartStep({});
    FAIL() << "an inverted element was not reported";
  } catch (const HydroError& e) {
    EXPECT_EQ(e.failure(), Failure::kNegativeVolume);
  }
  EXPECT_THROW(broken.AdvanceNodes(), HydroError);  // a failed subdomain stays failed
}

TEST(LuleshCubeRoot, CorrectlyRoundedAndOdd) {
  EXPECT_EQ(CubeRoot(27.0), 3.0);  // glibc's cbrt gives 3.0000000000000004
  EXPECT_EQ(CubeRoot(0.125), 0.5);
  EXPECT_EQ(CubeRoot(-8.0), -2.0);
  EXPECT_EQ(CubeRoot(1e-300), 1e-100);
  EXPECT_EQ(CubeRoot(0.0), 0.0);
  EXPECT_TRUE(std::signbit(CubeRoot(-0.0)));
  EXPECT_TRUE(std::isnan(CubeRoot(NAN)));
  EXPECT_EQ(CubeRoot(INFINITY), INFINITY);
  EXPECT_GT(CubeRoot(5e-324), 0.0);
  // Correct rounding: the cube of the result brackets x between midpoints.
  std::mt19937_64 random(3);
  std::uniform_real_distribution<double> mantissa(1.0, 8.0);
  for (int i = 0; i < 20000; ++i) {
    double x = std::ldexp(mantissa(random), int(random() % 400) - 200);
    double r = CubeRoot(x);
    EXPECT_EQ(CubeRoot(-x), -r);
    long double below = (long double)r - (long double)(r - std::nextafter(r, 0.0)) / 2;
    long double above = (long double)r + (long double)(std::nextafter(r, INFINITY) - r) / 2;
    ASSERT_LE(below * below * below, (long double)x * (1 + 1e-18L)) << x;
    ASSERT_GE(above * above * above, (long double)x * (1 - 1e-18L)) << x;
  }
}

}  // namespace
}  // namespace lulesh
