// Interior captures in recurrent blocks (SequenceState::request_capture): a chunk's recurrence runs
// in segments that end at its capture positions, with the state recorded between segments, and
// the conv window at each capture is read from the chunk's own inputs. Every segment runs the same
// kernel over the same tokens as a chunk split there would, so a capture's bytes equal those of a
// forward that stopped at that position.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "model/family.h"
#include "model/state.h"

namespace recur::model {

// Row (0 < row < n_rows) and index of each capture inside a chunk, ascending.
struct ChunkCapture {
  std::int64_t row = 0;
  std::size_t index = 0;
};
std::vector<ChunkCapture> captures_in(const ChunkRows& c);

// Records the conv window at each capture of the chunk: the last kernel - 1 conv inputs before it,
// from the state's window and the chunk's inputs x [n_rows, channels] (row stride x_stride). Call
// before the conv advances the window.
void capture_conv_windows(const ChunkRows& c, std::size_t layer, const float* x,
                          std::int64_t x_stride, std::int64_t channels, std::int64_t kernel);

// Runs one recurrence job per chunk (jobs[i] belongs to chunks[i]) through `run_batch`, and records
// each chunk's state (Job::state) at its captures. Without captures: one run_batch call.
// `slice(job, from, to)` is the job over rows [from, to) of its chunk.
template <typename Job, typename RunBatch, typename Slice>
void run_recurrence(std::span<const ChunkRows> chunks, const std::vector<Job>& jobs,
                    std::size_t layer, RunBatch&& run_batch, Slice&& slice) {
  // Decode steps never capture: no allocation on that path.
  if (std::none_of(chunks.begin(), chunks.end(),
                   [](const ChunkRows& c) { return c.seq->n_captures() > 0; })) {
    run_batch(std::span<const Job>(jobs));
    return;
  }
  std::vector<std::vector<ChunkCapture>> caps(chunks.size());
  std::size_t max_caps = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    caps[i] = captures_in(chunks[i]);
    max_caps = std::max(max_caps, caps[i].size());
  }
  if (max_caps == 0) {
    run_batch(std::span<const Job>(jobs));
    return;
  }
  // Segment s of a chunk ends at its s-th capture (or at its end): one dispatch per segment index.
  std::vector<Job> batch;
  for (std::size_t s = 0; s <= max_caps; ++s) {
    batch.clear();
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (s > caps[i].size()) continue;
      const std::int64_t from = s == 0 ? 0 : caps[i][s - 1].row;
      const std::int64_t to = s < caps[i].size() ? caps[i][s].row : chunks[i].n_rows;
      batch.push_back(slice(jobs[i], from, to));
    }
    run_batch(std::span<const Job>(batch));
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (s >= caps[i].size()) continue;
      chunks[i].seq->capture_recurrent(caps[i][s].index, layer, jobs[i].state);
    }
  }
}

}  // namespace recur::model
