#include "model/capture.h"

#include <cstring>

#include "model/state.h"
#include "util/check.h"

namespace recur::model {

std::vector<ChunkCapture> captures_in(const ChunkRows& c) {
  std::vector<ChunkCapture> out;
  const std::int64_t n = c.seq->n_captures();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t row = c.seq->capture_position(static_cast<std::size_t>(i)) - c.pos0;
    if (row > 0 && row < c.n_rows) out.push_back({row, static_cast<std::size_t>(i)});
  }
  return out;
}

void capture_conv_windows(const ChunkRows& c, std::size_t layer, const float* x,
                          std::int64_t x_stride, std::int64_t channels, std::int64_t kernel) {
  if (c.seq->n_captures() == 0) return;
  const std::vector<ChunkCapture> caps = captures_in(c);
  if (caps.empty()) return;
  const float* old = c.seq->conv_window(layer);  // [kernel - 1, channels], oldest first
  std::vector<float> window(static_cast<std::size_t>((kernel - 1) * channels));
  for (const ChunkCapture& cap : caps) {
    // Window row j holds input r + j of (old window rows ++ chunk rows).
    for (std::int64_t j = 0; j + 1 < kernel; ++j) {
      const std::int64_t i = cap.row + j;
      const float* src = i < kernel - 1 ? old + i * channels : x + (i - (kernel - 1)) * x_stride;
      std::memcpy(window.data() + j * channels, src,
                  static_cast<std::size_t>(channels) * sizeof(float));
    }
    c.seq->capture_conv(cap.index, layer, window.data());
  }
}

}  // namespace recur::model
