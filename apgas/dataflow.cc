// Dataflow's workers and coordinator over the Dht (dataflow.h).
#include "fox/apgas/dataflow.h"

#include <algorithm>
#include <deque>
#include <set>
#include <stdexcept>

#include "fox/apgas/apgas.h"
#include "fox/clock.h"
#include "fox/ebb/dht.h"
#include "fox/ebb/dht_queue.h"
#include "fox/log.h"
#include "fox/timer.h"

namespace fox::apgas::dataflow {
namespace {

constexpr uint32_t kOverTtlS = 120;    // the "over" mark outlives every worker's last look
constexpr int kMaxDhtErrors = 200;     // in a row (kPollMs apart): the Dht is gone
constexpr uint32_t kRecoverMs = 1500;  // a queue standing still this long after a death is stuck

std::string ResultKey(const std::string& name, uint64_t id) { return name + "/result/" + std::to_string(id); }
std::string ClaimKey(const std::string& name, uint64_t id) { return name + "/claim/" + std::to_string(id); }
std::string OverKey(const std::string& name) { return name + "/over"; }
std::string ErrorText(Error e) { return ErrorName(e); }

// The queue's leftovers: slots never popped (tasks queued twice) and its
// counters.
void DeleteQueue(const std::string& queue) {
  auto dht = ebb::Dht::Get();
  auto counter = [&](const char* which) -> uint64_t {
    auto item = dht->Get(queue + "/" + which);
    return item.ok() ? std::strtoull(item->value.c_str(), nullptr, 10) : 0;
  };
  uint64_t head = counter("head"), tail = counter("tail");
  for (uint64_t slot = head; slot < tail; ++slot) (void)dht->Delete(queue + "/" + std::to_string(slot));
  for (const char* which : {"head", "tail", "ready"}) (void)dht->Delete(queue + "/" + which);
}

// One worker: tasks until the graph is over. A task's failure (fn threw, an
// input missing, a result the Dht refuses) goes to the coordinator as
// "ID:why".
void WorkerLoop(const std::string& name, Fn fn) {
  ebb::DhtQueue ready(name + "-ready"), done(name + "-done");
  auto dht = ebb::Dht::Get();
  const std::string me = std::to_string(here().id);
  int errors = 0;
  while (true) {
    auto popped = ready.Pop(kPollMs);
    if (!popped.ok()) {
      if (dht->Get(OverKey(name)).ok()) return;
      if (popped.error() != Error::kTimedOut && ++errors >= kMaxDhtErrors) {
        LOG_ERROR("dataflow %s: a worker stops: the Dht failed %d times in a row (%s)", name.c_str(), errors,
                  ErrorName(popped.error()));
        return;
      }
      if (popped.error() != Error::kTimedOut) timer::Sleep(uint64_t(kPollMs) * 1000000);
      continue;
    }
    errors = 0;
    Task task;
    if (!Decode(*popped, &task)) {
      LOG_WARN("dataflow %s: a queued item that is not a task (%zu bytes) dropped", name.c_str(), popped->size());
      continue;
    }
    // A task queued twice may still be there once the graph is over: not
    // run again (its result would outlive the coordinator's clean-up).
    if (dht->Get(OverKey(name)).ok()) return;
    (void)dht->Set(ClaimKey(name, task.id), me);
    std::string failure;
    std::vector<std::string> inputs;
    for (uint64_t input : task.inputs) {
      auto item = dht->Get(ResultKey(name, input));
      if (!item.ok()) {
        failure = "input " + std::to_string(input) + " unreadable: " + ErrorText(item.error());
        break;
      }
      inputs.push_back(std::move(item->value));
    }
    if (failure.empty()) {
      try {
        std::string result = fn(task, inputs);
        auto set = dht->Set(ResultKey(name, task.id), result);
        if (!set.ok())
          failure = "its result (" + std::to_string(result.size()) + " bytes) not kept: " + ErrorText(set.error());
      } catch (const std::exception& e) {
        failure = e.what();
      }
    }
    std::string note = std::to_string(task.id) + (failure.empty() ? "" : ":" + failure);
    if (auto pushed = done.Push(note); !pushed.ok()) {
      LOG_WARN("dataflow %s: task %llu's completion not told: %s", name.c_str(), (unsigned long long)task.id,
               ErrorName(pushed.error()));
    }
  }
}

// The graph's checks: ids unique, inputs known, no cycle. Fills the
// dependents of each task (by index) and how many inputs each waits for.
void Check(const std::vector<Task>& tasks, std::map<uint64_t, size_t>* index,
           std::vector<std::vector<size_t>>* dependents, std::vector<size_t>* waiting) {
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!index->emplace(tasks[i].id, i).second) {
      throw std::invalid_argument("dataflow: task " + std::to_string(tasks[i].id) + " twice in the graph");
    }
  }
  dependents->assign(tasks.size(), {});
  waiting->assign(tasks.size(), 0);
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].inputs.size() > kMaxInputs) {
      throw std::invalid_argument("dataflow: task " + std::to_string(tasks[i].id) + " reads more than " +
                                  std::to_string(kMaxInputs) + " tasks");
    }
    for (uint64_t input : tasks[i].inputs) {
      auto it = index->find(input);
      if (it == index->end()) {
        throw std::invalid_argument("dataflow: task " + std::to_string(tasks[i].id) + " reads " +
                                    std::to_string(input) + ", which is no task");
      }
      (*dependents)[it->second].push_back(i);
      ++(*waiting)[i];
    }
  }
  // Kahn: every task reachable from those without inputs, else a cycle.
  std::vector<size_t> left = *waiting, order;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (left[i] == 0) order.push_back(i);
  }
  for (size_t k = 0; k < order.size(); ++k) {
    for (size_t d : (*dependents)[order[k]]) {
      if (--left[d] == 0) order.push_back(d);
    }
  }
  if (order.size() != tasks.size()) throw std::invalid_argument("dataflow: the graph has a cycle");
}

}  // namespace

void Work(const std::string& name, Fn fn) {
  for (int k = 0; k < std::max(1, activityCores()); ++k) async([name, fn] { WorkerLoop(name, fn); });
}

std::map<uint64_t, std::string> Coordinate(const std::string& name, const std::vector<Task>& tasks, Stats* stats) {
  std::map<uint64_t, size_t> index;
  std::vector<std::vector<size_t>> dependents;
  std::vector<size_t> waiting;
  Check(tasks, &index, &dependents, &waiting);
  Stats s;
  s.tasks = tasks.size();
  const uint64_t t0 = clock::NowNs();
  auto dht = ebb::Dht::Get();
  ebb::DhtQueue ready(name + "-ready"), done(name + "-done");
  std::vector<bool> finished(tasks.size()), queued(tasks.size());
  std::set<uint32_t> dead;
  for (Place p : places()) {
    if (isDead(p)) dead.insert(p.id);
  }
  // At most `window` tasks in the queue at once (twice the workers): what a
  // death makes run twice is bounded by it, not by the graph's width.
  const size_t window = 2 * size_t(places().size() - dead.size()) * size_t(std::max(1, activityCores()));
  std::deque<size_t> pending;  // ready, not queued yet
  size_t open = 0;             // queued, not done
  auto push = [&](size_t i) {
    if (auto r = ready.Push(Encode(tasks[i])); !r.ok()) {
      throw std::runtime_error("dataflow " + name + ": task " + std::to_string(tasks[i].id) +
                               " not queued: " + ErrorText(r.error()));
    }
  };
  auto queue = [&](size_t i) { pending.push_back(i); };
  auto fill = [&] {
    for (; open < window && !pending.empty(); pending.pop_front(), ++open) {
      push(pending.front());
      queued[pending.front()] = true;
    }
  };
  auto over = [&] { (void)dht->Set(OverKey(name), "1", 0, kOverTtlS); };
  try {
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (waiting[i] == 0) queue(i);
    }
    fill();
    size_t left = tasks.size();
    int errors = 0;
    uint64_t recovered_at = 0;
    while (left > 0) {
      auto note = done.Pop(kPollMs);
      if (note.ok()) {
        errors = 0;
        size_t colon = note->find(':');
        auto it = index.find(std::strtoull(note->substr(0, colon).c_str(), nullptr, 10));
        if (it == index.end()) continue;
        if (colon != std::string::npos) {
          throw std::runtime_error("dataflow " + name + ": task " + std::to_string(it->first) +
                                   " failed: " + note->substr(colon + 1));
        }
        ++s.runs;
        if (finished[it->second]) continue;
        finished[it->second] = true;
        --left;
        --open;
        for (size_t d : dependents[it->second]) {
          if (--waiting[d] == 0) queue(d);
        }
        fill();
      } else if (note.error() != Error::kTimedOut && ++errors >= kMaxDhtErrors) {
        throw std::runtime_error("dataflow " + name + ": the Dht failed " + std::to_string(errors) +
                                 " times in a row: " + ErrorText(note.error()));
      } else if (s.deaths > 0 && clock::NowNs() - recovered_at > uint64_t(kRecoverMs) * 1000000) {
        // Nothing done for a while since a death: a worker may have died
        // between taking a count and a slot, leaving tasks nobody can pop.
        auto credited = ready.Recover(kRecoverMs);
        recovered_at = clock::NowNs();
        if (credited.ok() && *credited > 0) {
          LOG_INFO("dataflow %s: %llu tasks a dead worker left unpoppable counted ready again", name.c_str(),
                   (unsigned long long)*credited);
        }
      }
      std::vector<uint32_t> newly;
      for (Place p : places()) {
        if (isDead(p) && dead.insert(p.id).second) newly.push_back(p.id);
      }
      if (newly.empty()) continue;
      s.deaths += newly.size();
      for (size_t i = 0; i < tasks.size(); ++i) {
        if (!queued[i] || finished[i]) continue;
        auto claim = dht->Get(ClaimKey(name, tasks[i].id));
        if (claim.ok() && dead.count(uint32_t(std::strtoul(claim->value.c_str(), nullptr, 10))) == 0) continue;
        push(i);  // still open: the window is not charged twice
        ++s.requeued;
      }
    }
  } catch (...) {
    over();
    throw;
  }
  over();
  std::map<uint64_t, std::string> sinks;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!dependents[i].empty()) continue;
    auto item = dht->Get(ResultKey(name, tasks[i].id));
    if (!item.ok()) {
      throw std::runtime_error("dataflow " + name + ": the result of task " + std::to_string(tasks[i].id) +
                               " unreadable: " + ErrorText(item.error()));
    }
    sinks[tasks[i].id] = std::move(item->value);
  }
  for (const Task& t : tasks) {
    (void)dht->Delete(ResultKey(name, t.id));
    (void)dht->Delete(ClaimKey(name, t.id));
  }
  DeleteQueue(name + "-ready");
  DeleteQueue(name + "-done");
  s.seconds = double(clock::NowNs() - t0) / 1e9;
  if (stats != nullptr) *stats = s;
  return sinks;
}

}  // namespace fox::apgas::dataflow
