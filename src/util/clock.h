// Time sources. Code that expires or measures things takes a Clock so tests can inject time.
#pragma once

#include <chrono>
#include <cstdint>

namespace recur {

using Nanos = std::int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic nanoseconds from an arbitrary origin.
  virtual Nanos now_ns() const = 0;
};

class SteadyClock final : public Clock {
 public:
  Nanos now_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that only moves when told: for deterministic tests of TTLs and timeouts.
class ManualClock final : public Clock {
 public:
  Nanos now_ns() const override { return now_; }
  void advance_ns(Nanos d) { now_ += d; }
  void set_ns(Nanos t) { now_ = t; }

 private:
  Nanos now_ = 0;
};

}  // namespace recur
