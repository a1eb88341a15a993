// The softmax denominator of a query row with gpt-oss's attention sinks (AttentionShape::sinks).
// In an anonymous namespace: each ISA's object file keeps its own copy (an inline symbol shared
// between them could be the AVX-512 one on a machine without it).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/kernels.h"

namespace recur::kernels {
namespace {

// l: the row's Σ exp(s_j − m) over its keys, m their maximum. The sink adds exp(sink − m): the
// reference's softmax over [scores, sink] after subtracting the joint maximum, the same ratio.
// A sink far above every score makes it inf, and the output the 0 it tends to.
inline float sink_denominator(const AttentionShape& s, std::int64_t head, float l, float m) {
  return s.sinks == nullptr ? l : l + std::exp(s.sinks[head] - m);
}

}  // namespace
}  // namespace recur::kernels
