// plan_mlx: finds the expert tensors mlx-lm's sanitize reshapes (stacks of per-expert tensors,
// fused tensors to split), then plans each output tensor with mlx_tensor.
#include "convert/mlx_plan.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <span>

namespace recur::convert {

namespace {

struct ExpertName {
  std::string stacked;  // "<p>switch_mlp.<proj>.weight"
  int expert = -1;
};

// "<p>experts.<e>.<proj>.weight" -> ("<p>switch_mlp.<mlx proj>.weight", e); other names: e = -1.
// `fc`: nemotron_h.py's names, up_proj fc1 and down_proj fc2.
ExpertName expert_name(std::string_view name, bool fc) {
  constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kProj = {{
      {"gate_proj", "gate_proj"},
      {"up_proj", "up_proj"},
      {"down_proj", "down_proj"},
      {"w1", "gate_proj"},  // LFM2: w1 gate, w3 up, w2 down
      {"w3", "up_proj"},
      {"w2", "down_proj"},
  }};
  constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kFc = {{
      {"up_proj", "fc1"},
      {"down_proj", "fc2"},
  }};
  constexpr std::string_view kExperts = "experts.", kWeight = ".weight";
  const std::size_t at = name.rfind(kExperts);
  if (at == std::string_view::npos || (at != 0 && name[at - 1] != '.')) return {};
  const std::size_t num = at + kExperts.size(), dot = name.find('.', num);
  if (dot == std::string_view::npos || dot == num) return {};
  const std::string_view digits = name.substr(num, dot - num);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return {};
  }
  const std::string_view tail = name.substr(dot + 1);
  using Names = std::span<const std::pair<std::string_view, std::string_view>>;
  for (const auto& [hf, mlx] : fc ? Names(kFc) : Names(kProj)) {
    if (tail.size() == hf.size() + kWeight.size() && tail.starts_with(hf) &&
        tail.ends_with(kWeight)) {
      return {.stacked = std::string(name.substr(0, at)) + "switch_mlp." + std::string(mlx) +
                         std::string(kWeight),
              .expert = std::stoi(std::string(digits))};
    }
  }
  return {};
}

// transformers 5's stacked un-gated experts (nemotron_h: experts.up_proj [E, ff, d] and
// experts.down_proj [E, d, ff]) -> the MLX stack they are ("<p>switch_mlp.fc1.weight", fc2);
// other names: "".
std::string stacked_fc_name(std::string_view name) {
  constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kFc = {{
      {"experts.up_proj", "switch_mlp.fc1.weight"},
      {"experts.down_proj", "switch_mlp.fc2.weight"},
  }};
  for (const auto& [hf, mlx] : kFc) {
    const std::size_t at = name.size() - hf.size();
    if (name.ends_with(hf) && (at == 0 || name[at - 1] == '.')) {
      return std::string(name.substr(0, at)) + std::string(mlx);
    }
  }
  return "";
}

// A stack's members by expert index, when they are all there with one 2-D shape and dtype.
std::optional<std::vector<std::size_t>> complete(
    const std::vector<std::optional<std::size_t>>& members, std::span<const HfTensor> inputs) {
  std::vector<std::size_t> out;
  for (const std::optional<std::size_t>& m : members) {
    if (!m) return std::nullopt;
    const HfTensor& t = inputs[*m];
    const HfTensor& first = inputs[out.empty() ? *m : out.front()];
    if (t.shape.size() != 2 || t.shape != first.shape || t.dtype != first.dtype) {
      return std::nullopt;
    }
    out.push_back(*m);
  }
  return out;
}

}  // namespace

MlxPlan plan_mlx(const MlxRules& rules, std::span<const HfTensor> inputs) {
  // Per-expert tensors, grouped by the stacked tensor they make.
  std::map<std::string, std::vector<std::optional<std::size_t>>> groups;
  std::vector<std::string> group_of(inputs.size());
  if (rules.family->mlx.stacks_experts) {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const ExpertName e = expert_name(inputs[i].name, rules.family->mlx.switch_fc);
      if (e.expert < 0) continue;
      auto& members = groups[e.stacked];
      if (members.size() <= static_cast<std::size_t>(e.expert)) members.resize(e.expert + 1);
      members[static_cast<std::size_t>(e.expert)] = i;
      group_of[i] = e.stacked;
    }
  }
  std::map<std::string, std::optional<std::vector<std::size_t>>> stacks;
  std::map<std::string, std::size_t> first_listed;  // the stack takes this input's place
  for (const auto& [name, members] : groups) {
    stacks[name] = complete(members, inputs);
    if (stacks[name])
      first_listed[name] = *std::min_element(stacks[name]->begin(), stacks[name]->end());
  }

  MlxPlan plan;
  const auto add = [&](std::string_view name, std::vector<std::int64_t> shape, DType dtype,
                       MlxSource source) {
    plan.tensors.push_back(mlx_tensor(rules, name, shape, dtype));
    plan.sources.push_back(std::move(source));
  };
  // transformers 5's fused experts (qwen3_5_moe.py sanitize) and Granite 4.0-H's
  // (granitemoehybrid.py sanitize): [E, 2 * ff, d] with each expert's gate rows first.
  constexpr std::string_view kGateUp = "experts.gate_up_proj", kDown = "experts.down_proj";
  constexpr std::string_view kGraniteGateUp = "block_sparse_moe.input_linear.weight";
  constexpr std::string_view kGraniteDown = "block_sparse_moe.output_linear.weight";
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const HfTensor& t = inputs[i];
    const std::string& name = t.name;
    if (!group_of[i].empty()) {
      const std::optional<std::vector<std::size_t>>& stack = stacks.at(group_of[i]);
      if (stack) {
        if (first_listed.at(group_of[i]) == i) {
          std::vector<std::int64_t> shape = {static_cast<std::int64_t>(stack->size())};
          shape.insert(shape.end(), t.shape.begin(), t.shape.end());
          add(group_of[i], shape, t.dtype, {.inputs = *stack});
        }
        continue;
      }
    }
    if (rules.family->mlx.switch_fc && t.shape.size() == 3) {
      if (const std::string fc = stacked_fc_name(name); !fc.empty()) {
        add(fc, t.shape, t.dtype, {.inputs = {i}});
        continue;
      }
    }
    const bool granite = name.ends_with(kGraniteGateUp) || name.ends_with(kGraniteDown);
    const std::string_view gate_up = granite ? kGraniteGateUp : kGateUp;
    const std::string_view down = granite ? kGraniteDown : kDown;
    const std::string_view to = granite ? "block_sparse_moe.switch_mlp." : "switch_mlp.";
    if (t.shape.size() == 3 && name.ends_with(gate_up) && t.shape[1] % 2 == 0) {
      const std::string p = name.substr(0, name.size() - gate_up.size()) + std::string(to);
      const std::vector<std::int64_t> half = {t.shape[0], t.shape[1] / 2, t.shape[2]};
      add(p + "gate_proj.weight", half, t.dtype, {.inputs = {i}, .parts = 2, .part = 0});
      add(p + "up_proj.weight", half, t.dtype, {.inputs = {i}, .parts = 2, .part = 1});
      continue;
    }
    if (t.shape.size() == 3 && name.ends_with(down)) {
      const std::string p = name.substr(0, name.size() - down.size()) + std::string(to);
      add(p + "down_proj.weight", t.shape, t.dtype, {.inputs = {i}});
      continue;
    }
    // Dense Granite 4.0-H (granitemoehybrid.py sanitize without experts): the fused
    // shared_mlp.input_linear [2 * ff, d] becomes mlp.gate_proj and mlp.up_proj.
    constexpr std::string_view kSharedIn = "shared_mlp.input_linear.weight";
    constexpr std::string_view kSharedOut = "shared_mlp.output_linear.weight";
    if (rules.family->mlx.splits_shared_mlp && !rules.has_experts && t.shape.size() == 2) {
      if (name.ends_with(kSharedIn) && t.shape[0] % 2 == 0) {
        const std::string p = name.substr(0, name.size() - kSharedIn.size()) + "mlp.";
        const std::vector<std::int64_t> half = {t.shape[0] / 2, t.shape[1]};
        add(p + "gate_proj.weight", half, t.dtype, {.inputs = {i}, .parts = 2, .part = 0});
        add(p + "up_proj.weight", half, t.dtype, {.inputs = {i}, .parts = 2, .part = 1});
        continue;
      }
      if (name.ends_with(kSharedOut)) {
        add(name.substr(0, name.size() - kSharedOut.size()) + "mlp.down_proj.weight", t.shape,
            t.dtype, {.inputs = {i}});
        continue;
      }
    }
    add(name, t.shape, t.dtype, {.inputs = {i}});
  }
  return plan;
}

void read_planned(const MlxPlan& plan, std::size_t t, std::int64_t begin, std::span<float> out,
                  const InputReadFn& read_input) {
  const MlxSource& s = plan.sources[t];
  if (s.inputs.size() == 1 && s.parts == 1) return read_input(s.inputs[0], begin, out);
  // A 2-D split tensor is one "expert" of the whole tensor's rows.
  const std::vector<std::int64_t>& shape = plan.tensors[t].shape;
  const std::int64_t per_expert = shape.size() == 3 ? shape[1] * shape[2] : shape[0] * shape[1];
  for (std::size_t done = 0; done < out.size();) {
    const std::int64_t i = begin + static_cast<std::int64_t>(done);
    const std::int64_t e = i / per_expert, at = i % per_expert;
    const auto n =
        std::min<std::size_t>(out.size() - done, static_cast<std::size_t>(per_expert - at));
    if (s.inputs.size() > 1) {  // a stack: expert e is its own input
      read_input(s.inputs[static_cast<std::size_t>(e)], at, out.subspan(done, n));
    } else {  // a fused tensor: part `part` of expert e's rows
      read_input(s.inputs[0], (e * s.parts + s.part) * per_expert + at, out.subspan(done, n));
    }
    done += n;
  }
}

}  // namespace recur::convert
