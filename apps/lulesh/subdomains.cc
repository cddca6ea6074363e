// Subdomains (subdomains.h): dealing, the step's phases and exchanges,
// checkpoints.
#include "subdomains.h"

#include <algorithm>
#include <span>

namespace lulesh {

using fox::apgas::Team;

void Subdomains::Deal(size_t index, size_t n) {
  index_ = index;
  n_ = n;
  domains_.clear();  // made by the next step at time 0, or by a restore
  ready_ = false;
  finished_ = false;
  global_ = TimeConstraints{};
}

std::vector<uint64_t> Subdomains::Ids() const {
  std::vector<uint64_t> ids;
  uint64_t count = config_.domains * config_.domains * config_.domains;
  for (uint64_t b = index_; b < count; b += n_) ids.push_back(b);
  return ids;
}

Domain& Subdomains::Held(uint64_t b) {
  // Held subdomains are index_, index_ + n_, ...: the k-th is b / n_.
  if (b % n_ != index_ || b / n_ >= domains_.size()) throw std::logic_error("lulesh: subdomain not held here");
  return *domains_[b / n_];
}

// fn(domain) for every subdomain held, over the activity cores.
template <class Fn>
void Subdomains::ForEach(Fn fn) {
  if (domains_.size() <= 1 || fox::apgas::activityCores() <= 1) {
    for (auto& d : domains_) fn(*d);
    return;
  }
  fox::apgas::finish([&] {
    for (auto& d : domains_) {
      Domain* domain = d.get();
      fox::apgas::async([&fn, domain] { fn(*domain); });
    }
  });
}

void Subdomains::Exchange(lulesh::Exchange kind, Team* team) {
  size_t n = team ? team->places().size() : 1;
  std::vector<Packet> out(n);
  std::vector<double> buffer;
  for (auto& d : domains_) {
    for (int dir : d->Directions(kind)) {
      uint64_t b = d->Neighbour(dir);
      d->ExportInto(kind, dir, buffer);
      size_t holder = size_t(b % n);
      if (holder == index_) {
        Held(b).Import(kind, Domain::Opposite(dir), buffer);
        continue;
      }
      Packet& p = out[holder];
      p.heads.insert(p.heads.end(), {b, uint64_t(Domain::Opposite(dir)), buffer.size()});
      p.data.insert(p.data.end(), buffer.begin(), buffer.end());
    }
  }
  if (n == 1) return;
  std::vector<Packet> in = team->alltoall(out);
  for (const Packet& p : in) {
    size_t at = 0;
    for (size_t h = 0; h + 2 < p.heads.size(); h += 3) {
      uint64_t length = p.heads[h + 2];
      if (at + length > p.data.size()) throw std::runtime_error("lulesh: a malformed exchange");
      Held(p.heads[h]).Import(kind, int(p.heads[h + 1]), std::span<const double>(p.data.data() + at, length));
      at += length;
    }
  }
}

// The global constraints and whether every subdomain is done (min of
// courant, hydro and done: a place without subdomains counts as done).
void Subdomains::Reduce(Team* team) {
  std::vector<double> mine{1.0e20, 1.0e20, 1.0};
  for (auto& d : domains_) {
    TimeConstraints t = d->Constraints();
    mine[0] = std::min(mine[0], t.courant);
    mine[1] = std::min(mine[1], t.hydro);
    if (!d->Done()) mine[2] = 0.0;
  }
  std::vector<double> all = team && team->places().size() > 1 ? team->allreduce(mine, Team::Min<double>()) : mine;
  global_ = TimeConstraints{all[0], all[1]};
  finished_ = all[2] == 1.0;
}

void Subdomains::step(Team* team) {
  if (!ready_) {  // dealt or restored: the nodal masses first
    if (domains_.empty()) {
      for (uint64_t b : Ids()) domains_.push_back(std::make_unique<Domain>(config_, b));
    }
    Exchange(lulesh::Exchange::kNodalMass, team);
    for (auto& d : domains_) d->CompleteSetup();
    Reduce(team);  // a restored subdomain's constraints give the next increment
    ready_ = true;
  }
  ForEach([this](Domain& d) { d.StartStep(global_); });
  Exchange(lulesh::Exchange::kNodalForce, team);
  ForEach([](Domain& d) { d.AdvanceNodes(); });
  Exchange(lulesh::Exchange::kVelocityGradient, team);
  ForEach([](Domain& d) { d.FinishStep(); });
  Reduce(team);
}

void Subdomains::checkpoint(const fox::apgas::Snapshot& s) {
  if (!ready_) {  // before the first step: time 0, remade from the Config
    for (uint64_t b : Ids()) s.save("d" + std::to_string(b), std::vector<double>{});
    return;
  }
  for (auto& d : domains_) s.save("d" + std::to_string(d->index()), d->Save());
}

void Subdomains::restore(const fox::apgas::Snapshot& s) {
  size_t n_old = s.places().size();
  domains_.clear();
  for (uint64_t b : Ids()) {
    auto saved = s.load<std::vector<double>>(size_t(b % n_old), "d" + std::to_string(b));
    if (!saved) throw std::runtime_error("lulesh: the checkpoint lacks subdomain " + std::to_string(b));
    domains_.push_back(
        std::make_unique<Domain>(saved->empty() ? Domain(config_, b) : Domain::Restore(config_, b, *saved)));
  }
  ready_ = false;
  finished_ = false;
  global_ = TimeConstraints{};
}

}  // namespace lulesh
