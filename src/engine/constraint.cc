#include "engine/constraint.h"

#include "util/check.h"

namespace recur::engine {

Constraint::Constraint(const ConstraintSpec& spec)
    : spec_(spec), matcher_(spec.grammar), phase_(Phase::kGrammar) {
  if (spec.starts_in_reasoning && spec.reasoning_close >= 0) {
    phase_ = Phase::kReasoning;
  } else if (spec.reasoning_open >= 0 && spec.reasoning_close >= 0) {
    phase_ = Phase::kFirst;
  }
}

TokenFilter Constraint::filter(std::span<const TokenId> stop_ids) {
  TokenFilter f;
  if (phase_ == Phase::kReasoning) {
    // The reasoning is free, but the answer the grammar guarantees must still come: the turn may
    // not end inside it.
    f.all = true;
    f.stop_ids = stop_ids;
    return f;
  }
  mask_ = matcher_.allowed();
  f.bits = *mask_;
  f.stop_ids = stop_ids;
  f.allow_stop = matcher_.is_complete();
  if (phase_ == Phase::kFirst) f.also = spec_.reasoning_open;
  return f;
}

void Constraint::accept(TokenId id) {
  switch (phase_) {
    case Phase::kReasoning:
      if (id == spec_.reasoning_close) phase_ = Phase::kGrammar;
      return;
    case Phase::kFirst:
      if (id == spec_.reasoning_open) {
        phase_ = Phase::kReasoning;
        return;
      }
      phase_ = Phase::kGrammar;
      [[fallthrough]];
    case Phase::kGrammar:
      // An end token the filter allowed ends the turn; it is not part of the text.
      if (matcher_.is_complete() && !matcher_.allows(id)) return;
      RECUR_CHECK(matcher_.accept(id));
      return;
  }
}

}  // namespace recur::engine
