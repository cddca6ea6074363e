// Dataflow: a graph of tasks run by workers at the places, scheduled
// through the Dht's task queue (the FOX report §3.1-3.2, mcphoton's
// DataflowCoordinator; issue 42). A task whose worker's place dies is
// queued again; results live in the Dht (replicated), so a death loses no
// task that finished, and the graph's answer is the one without deaths.
//
//   std::string Simulate(const dataflow::Task& t, const std::vector<std::string>& in) { ... }
//   finish([&] {
//     for (Place p : live) asyncAt(p, [](std::string n) { dataflow::Work(n, &Simulate); }, name);
//     auto sinks = dataflow::Coordinate(name, tasks, &stats);   // at place 0
//   });
//
// Work (at every place, one call each; returns at once) starts a worker
// per activity core under the current finish. A worker pops a task from
// the queue "NAME-ready", records its claim ("NAME/claim/ID" = its place),
// reads its inputs' results, runs fn and writes the result
// ("NAME/result/ID"), then tells the coordinator (the queue "NAME-done").
// Workers end when the coordinator marks the graph over ("NAME/over"; they
// look before each task, and every kPollMs while the queue is empty).
//
// Coordinate (at place 0, once) queues the tasks whose inputs are done, as
// they become so, at most twice the workers at once, and learns every
// completion. When a place dies it queues again every task queued and not
// done whose claim is the dead place's or missing (a worker that died
// between popping a task and claiming it takes it along; a task still in
// the queue may so run twice, at most the window's); and while nothing
// completes after a death it has the queue count again the tasks a worker
// that died in the middle of a pop left unpoppable (DhtQueue::Recover). A task may thus
// run more than once, so fn must be deterministic in its task and inputs:
// each run writes the same result. Returns the results of the sinks (tasks
// no other task reads), by id, and deletes the graph's items from the Dht.
//
// Failures: the Dht keeps what it holds through fewer than r deaths (r = 2
// by default: one at a time); place 0's death ends the job. A task whose
// fn throws is a failed graph: Coordinate throws std::runtime_error naming
// it (the worker's exception text); a malformed graph (an id twice, an
// input that is no task, more than kMaxInputs inputs, a cycle) throws
// std::invalid_argument before anything runs.
//
// Event context, inside an activity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fox::apgas::dataflow {

struct Task {
  uint64_t id = 0;
  uint32_t kind = 0;             // the application's, for fn
  std::vector<uint64_t> inputs;  // tasks whose results fn reads, in this order
  std::string arg;               // the task's own parameters
};

// A task's result from its inputs' results (in the order of task.inputs).
// At most the Dht's largest value (1 MiB).
using Fn = std::string (*)(const Task& task, const std::vector<std::string>& inputs);

inline constexpr uint32_t kPollMs = 100;
inline constexpr size_t kMaxInputs = size_t(1) << 16;  // a task's

void Work(const std::string& name, Fn fn);

struct Stats {
  uint64_t tasks = 0;     // in the graph
  uint64_t runs = 0;      // completions seen (more than tasks: some ran twice)
  uint64_t requeued = 0;  // queued again after a death
  uint64_t deaths = 0;    // places that died while the graph ran
  double seconds = 0;
};

std::map<uint64_t, std::string> Coordinate(const std::string& name, const std::vector<Task>& tasks,
                                           Stats* stats = nullptr);

// A task as bytes and back (the queue's items, dataflow_wire.cc; exposed
// for the fuzzer). Decode: false for bytes that are not a task (Encode's
// bytes of a task with at most kMaxInputs inputs, exactly).
std::string Encode(const Task& task);
bool Decode(const std::string& bytes, Task* task);

}  // namespace fox::apgas::dataflow
