// Wall time and matmul FLOPs per named stage of a forward pass, for `recur bench --bench-stages`:
// where a prefill's time goes (attention, the recurrences, the router, the experts ...) without
// a profiler, whose sampling the bench's own probes would dominate. Off unless enabled: a scope
// then costs one load and branch. Scopes nest (a stage's time includes its children's); the
// table is process-wide and guarded, the stack of open scopes is per thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace recur::stages {

namespace detail {
extern bool g_enabled;
}  // namespace detail

inline bool enabled() { return detail::g_enabled; }
void set_enabled(bool on);
// Empties the table; scopes open across it record nothing.
void reset();

// Adds to every open scope of this thread (the matmul dispatcher calls it with 2 x rows x weight
// elements); nothing when off or outside any scope.
void add_flops(double flops);

struct Stage {
  std::string path;  // "layer/mlp/experts.down": the names of the open scopes, outermost first
  int depth = 0;     // the number of '/' in path
  double seconds = 0, flops = 0;
  std::int64_t calls = 0;
};
// In order of first entry (a parent before its children).
std::vector<Stage> table();

class Scope {
 public:
  // `name` must outlive the program (a string literal).
  explicit Scope(const char* name) {
    if (enabled()) enter(name);
  }
  ~Scope() {
    if (open_) leave();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  void enter(const char* name);
  void leave();
  bool open_ = false;
};

}  // namespace recur::stages
