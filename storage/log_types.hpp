#pragma once

// What is kept beside the tasks: the event stream and its cursor, task
// images for export and import, job output.
// Part of the TaskStore's interface (storage/task_store.hpp).

#include "core/schedule.hpp"
#include "core/task.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage {

// One entry of the event stream (`events`): a row of the event log, or a
// task's creation as an `add` event (event.id 0), with the task's queue.
struct StreamEvent {
  core::Event event;
  std::string queue;
  // A flow's state change instead (event.task_id 0, event.to its state,
  // event.detail its name): the flow's id.
  int64_t flow = 0;
};

// Where a reader of the event stream is: the last event row, created task
// and flow event it has seen.
struct EventCursor {
  int64_t event_id = 0;
  int64_t task_id = 0;
  int64_t flow_event_id = 0;
  // How far the stream may read, per id sequence (events, tasks,
  // flow_events; storage/features/read_store.cpp): every id up to `final` has
  // committed or never will (-1: not known yet); `gap`, when not 0, is the
  // missing id that stopped it, a transaction still in flight perhaps.
  struct Horizon {
    int64_t final = -1;
    int64_t gap = 0;
  };
  std::array<Horizon, 3> horizon{};
  // The last read left rows for the next one: read again at once.
  bool more = false;
  // A barrier that timed out (a writer in flight for long): none is
  // taken again before this time (steady clock, ms), so that a long
  // transaction does not have every other writer wait behind the barrier
  // again and again.
  int64_t barrier_after_ms = 0;
  // A missing id holds the rest back: wait for a wake-up (its commit sends
  // one) and read again; a gap that outlives a wake-up is resolved then.
  bool held() const {
    return std::any_of(horizon.begin(), horizon.end(),
                       [](const Horizon& h) { return h.gap != 0; });
  }
};

// A task exactly as stored, for `export` and `import`: its row and the
// rows beside it, each a list of (column, value as JSON text) in the
// table's column order. Columns that hold JSON (payload, labels, ...) are
// embedded as stored, so the text round-trips byte for byte.
using ImageRow = std::vector<std::pair<std::string, std::string>>;
struct TaskImage {
  int64_t line = 0; // where it was read, named in errors (0: not named)
  ImageRow task;
  std::vector<ImageRow> errors;     // oldest first
  std::vector<ImageRow> events;     // oldest first, without their ids
  std::vector<ImageRow> deps;       // the dependencies it has waited for
  std::vector<ImageRow> deliveries; // a broadcast's deliveries
  // Its job output's chunks in the order written, without their ids;
  // `data` is the bytes in base64.
  std::vector<ImageRow> output;
  // Set when the image is a flow rather than a task (the lists above are
  // then empty): its `flows` row (without its version) followed by its
  // document's columns, its atoms' rows in node order (without their
  // flow_id) and its event history, oldest first, without ids.
  struct Flow {
    ImageRow flow;
    std::vector<ImageRow> atoms;
    std::vector<ImageRow> events;
  };
  std::optional<Flow> flow;
};

// Job output (schema 7): what a handler printed on stdout or stderr during
// one attempt, kept in chunks (`run`, `done`/`fail --output-file`).
struct OutputChunk {
  int64_t id = 0; // orders the chunks of an attempt's streams as written
  int64_t task = 0;
  int64_t attempt = 0;
  std::string stream; // "stdout" or "stderr"
  int64_t offset = 0; // of its first byte among all the stream printed
  std::string data;   // bytes, any
};

// Output to store along with a worker's outcome (complete, fail, release),
// in its transaction: see append_output.
struct OutputWrite {
  std::vector<OutputChunk> chunks;
  int64_t keep = 0;
};

// How much of one stream of one attempt is kept.
struct OutputSize {
  int64_t attempt = 0;
  std::string stream;
  int64_t kept = 0;  // bytes stored
  int64_t total = 0; // bytes printed; the first total - kept were dropped
};

} // namespace taskq::storage
