// Expected tensor tables, written from ../shared/reference/model-families.md (sections 1.2, 2.3,
// 4.2) with each preset's sizes filled in by hand, independently of modelgen's own table.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "modelgen/generator.h"

namespace recur::modelgen::testing {

struct Expected {
  std::vector<std::int64_t> shape;
  std::string dtype;
  bool operator==(const Expected&) const = default;
};
using Table = std::map<std::string, Expected>;
using Shape = std::vector<std::int64_t>;

// Lists every difference instead of printing two whole tables.
inline std::string table_diff(const Table& got, const Table& want) {
  std::string out;
  for (const auto& [name, w] : want) {
    auto it = got.find(name);
    if (it == got.end()) {
      out += "missing " + name + "\n";
    } else if (!(it->second == w)) {
      out += fmt::format("{}: got {} [{}], want {} [{}]\n", name, it->second.dtype,
                         fmt::join(it->second.shape, ","), w.dtype, fmt::join(w.shape, ","));
    }
  }
  for (const auto& [name, g] : got) {
    if (!want.contains(name)) out += "unexpected " + name + "\n";
  }
  return out;
}

// Qwen3: d, n_heads * head_dim = q, n_kv * head_dim = kv, head_dim, d_ff, vocab.
inline Table qwen3_table(int layers, std::int64_t d, std::int64_t q, std::int64_t kv,
                         std::int64_t hd, std::int64_t ff, std::int64_t vocab, std::string dt) {
  Table t;
  t["model.embed_tokens.weight"] = {{vocab, d}, dt};
  t["lm_head.weight"] = {{vocab, d}, dt};  // present although tied (1.2)
  t["model.norm.weight"] = {{d}, dt};
  for (int i = 0; i < layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    t[p + "input_layernorm.weight"] = {{d}, dt};
    t[p + "self_attn.q_proj.weight"] = {{q, d}, dt};
    t[p + "self_attn.k_proj.weight"] = {{kv, d}, dt};
    t[p + "self_attn.v_proj.weight"] = {{kv, d}, dt};
    t[p + "self_attn.o_proj.weight"] = {{d, q}, dt};
    t[p + "self_attn.q_norm.weight"] = {{hd}, dt};
    t[p + "self_attn.k_norm.weight"] = {{hd}, dt};
    t[p + "post_attention_layernorm.weight"] = {{d}, dt};
    t[p + "mlp.gate_proj.weight"] = {{ff, d}, dt};
    t[p + "mlp.up_proj.weight"] = {{ff, d}, dt};
    t[p + "mlp.down_proj.weight"] = {{d, ff}, dt};
  }
  return t;
}

struct Qwen35Sizes {
  int layers;
  std::int64_t d, heads, kv_heads, hd, ff, vocab, hk, hv, dk, dv, kernel;
};

// Qwen3.5 (2.3): every 4th layer full attention, the others Gated DeltaNet; A_log and the GDN
// norm are F32 whatever the checkpoint dtype; no lm_head (tied).
inline Table qwen3_5_table(const Qwen35Sizes& s, std::string dt) {
  Table t;
  const std::string r = "model.language_model.";
  const std::int64_t d = s.d, conv = 2 * s.hk * s.dk + s.hv * s.dv;
  t[r + "embed_tokens.weight"] = {{s.vocab, d}, dt};
  t[r + "norm.weight"] = {{d}, dt};
  for (int i = 0; i < s.layers; ++i) {
    const std::string p = fmt::format("{}layers.{}.", r, i);
    t[p + "input_layernorm.weight"] = {{d}, dt};
    t[p + "post_attention_layernorm.weight"] = {{d}, dt};
    t[p + "mlp.gate_proj.weight"] = {{s.ff, d}, dt};
    t[p + "mlp.up_proj.weight"] = {{s.ff, d}, dt};
    t[p + "mlp.down_proj.weight"] = {{d, s.ff}, dt};
    if ((i + 1) % 4 == 0) {
      t[p + "self_attn.q_proj.weight"] = {{2 * s.heads * s.hd, d}, dt};
      t[p + "self_attn.k_proj.weight"] = {{s.kv_heads * s.hd, d}, dt};
      t[p + "self_attn.v_proj.weight"] = {{s.kv_heads * s.hd, d}, dt};
      t[p + "self_attn.o_proj.weight"] = {{d, s.heads * s.hd}, dt};
      t[p + "self_attn.q_norm.weight"] = {{s.hd}, dt};
      t[p + "self_attn.k_norm.weight"] = {{s.hd}, dt};
    } else {
      t[p + "linear_attn.in_proj_qkv.weight"] = {{conv, d}, dt};
      t[p + "linear_attn.in_proj_z.weight"] = {{s.hv * s.dv, d}, dt};
      t[p + "linear_attn.in_proj_b.weight"] = {{s.hv, d}, dt};
      t[p + "linear_attn.in_proj_a.weight"] = {{s.hv, d}, dt};
      t[p + "linear_attn.conv1d.weight"] = {{conv, 1, s.kernel}, dt};
      t[p + "linear_attn.dt_bias"] = {{s.hv}, dt};
      t[p + "linear_attn.A_log"] = {{s.hv}, "F32"};
      t[p + "linear_attn.norm.weight"] = {{s.dv}, "F32"};
      t[p + "linear_attn.out_proj.weight"] = {{d, s.hv * s.dv}, dt};
    }
  }
  return t;
}

// Mamba2 (4.2): in_proj rows = d_inner + conv_dim + heads, conv_dim = d_inner + 2 * state.
inline Table mamba2_table(int layers, std::int64_t d, std::int64_t heads, std::int64_t d_inner,
                          std::int64_t conv_dim, std::int64_t vocab, std::string dt) {
  Table t;
  t["backbone.embeddings.weight"] = {{vocab, d}, dt};
  t["backbone.norm_f.weight"] = {{d}, dt};
  for (int i = 0; i < layers; ++i) {
    const std::string p = fmt::format("backbone.layers.{}.", i);
    t[p + "norm.weight"] = {{d}, dt};
    t[p + "mixer.in_proj.weight"] = {{d_inner + conv_dim + heads, d}, dt};
    t[p + "mixer.conv1d.weight"] = {{conv_dim, 1, 4}, dt};
    t[p + "mixer.conv1d.bias"] = {{conv_dim}, dt};
    t[p + "mixer.dt_bias"] = {{heads}, dt};
    t[p + "mixer.A_log"] = {{heads}, dt};
    t[p + "mixer.D"] = {{heads}, dt};
    t[p + "mixer.norm.weight"] = {{d_inner}, dt};
    t[p + "mixer.out_proj.weight"] = {{d, d_inner}, dt};
  }
  return t;
}

// Llama (docs/model-llama.md): no q/k norms; biases when attention_bias / mlp_bias; lm_head only
// when untied. q = n_heads * head_dim, kv = n_kv_heads * head_dim.
inline Table llama_table(int layers, std::int64_t d, std::int64_t q, std::int64_t kv,
                         std::int64_t ff, std::int64_t vocab, bool tied, bool bias,
                         std::string dt) {
  Table t;
  t["model.embed_tokens.weight"] = {{vocab, d}, dt};
  if (!tied) t["lm_head.weight"] = {{vocab, d}, dt};
  t["model.norm.weight"] = {{d}, dt};
  for (int i = 0; i < layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    t[p + "input_layernorm.weight"] = {{d}, dt};
    t[p + "self_attn.q_proj.weight"] = {{q, d}, dt};
    t[p + "self_attn.k_proj.weight"] = {{kv, d}, dt};
    t[p + "self_attn.v_proj.weight"] = {{kv, d}, dt};
    t[p + "self_attn.o_proj.weight"] = {{d, q}, dt};
    t[p + "post_attention_layernorm.weight"] = {{d}, dt};
    t[p + "mlp.gate_proj.weight"] = {{ff, d}, dt};
    t[p + "mlp.up_proj.weight"] = {{ff, d}, dt};
    t[p + "mlp.down_proj.weight"] = {{d, ff}, dt};
    if (bias) {
      for (auto [name, n] : {std::pair{"self_attn.q_proj", q},
                             {"self_attn.k_proj", kv},
                             {"self_attn.v_proj", kv},
                             {"self_attn.o_proj", d},
                             {"mlp.gate_proj", ff},
                             {"mlp.up_proj", ff},
                             {"mlp.down_proj", d}}) {
        t[p + name + ".bias"] = {{n}, dt};
      }
    }
  }
  return t;
}

// LFM2 (docs/model-lfm2.md): d, heads and kv heads of head_dim hd, MLP width ff, conv kernel K,
// the attention layers, tied unless `head`.
inline Table lfm2_table(int layers, std::int64_t d, std::int64_t heads, std::int64_t kv_heads,
                        std::int64_t hd, std::int64_t ff, std::int64_t kernel, std::int64_t vocab,
                        const std::vector<int>& attention, bool head, const std::string& dt) {
  Table t;
  t["model.embed_tokens.weight"] = {{vocab, d}, dt};
  t["model.embedding_norm.weight"] = {{d}, dt};
  if (head) t["lm_head.weight"] = {{vocab, d}, dt};
  for (int i = 0; i < layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    t[p + "operator_norm.weight"] = {{d}, dt};
    t[p + "ffn_norm.weight"] = {{d}, dt};
    t[p + "feed_forward.w1.weight"] = {{ff, d}, dt};
    t[p + "feed_forward.w3.weight"] = {{ff, d}, dt};
    t[p + "feed_forward.w2.weight"] = {{d, ff}, dt};
    if (std::find(attention.begin(), attention.end(), i) != attention.end()) {
      t[p + "self_attn.q_proj.weight"] = {{heads * hd, d}, dt};
      t[p + "self_attn.k_proj.weight"] = {{kv_heads * hd, d}, dt};
      t[p + "self_attn.v_proj.weight"] = {{kv_heads * hd, d}, dt};
      t[p + "self_attn.out_proj.weight"] = {{d, heads * hd}, dt};
      t[p + "self_attn.q_layernorm.weight"] = {{hd}, dt};
      t[p + "self_attn.k_layernorm.weight"] = {{hd}, dt};
    } else {
      t[p + "conv.in_proj.weight"] = {{3 * d, d}, dt};
      t[p + "conv.conv.weight"] = {{d, 1, kernel}, dt};
      t[p + "conv.out_proj.weight"] = {{d, d}, dt};
    }
  }
  return t;
}

// gpt-oss (docs/model-gpt-oss.md): biased attention with sinks, a biased router, MXFP4 experts
// (U8 blocks and scales, whatever dt the rest has) with their biases; separate head.
inline Table gpt_oss_table(int layers, std::int64_t d, std::int64_t heads, std::int64_t kv_heads,
                           std::int64_t hd, std::int64_t ff, std::int64_t experts,
                           std::int64_t vocab, const std::string& dt) {
  Table t;
  t["model.embed_tokens.weight"] = {{vocab, d}, dt};
  t["lm_head.weight"] = {{vocab, d}, dt};
  t["model.norm.weight"] = {{d}, dt};
  for (int i = 0; i < layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    t[p + "input_layernorm.weight"] = {{d}, dt};
    t[p + "post_attention_layernorm.weight"] = {{d}, dt};
    for (auto [proj, rows, cols] :
         {std::tuple{"q", heads * hd, d}, std::tuple{"k", kv_heads * hd, d},
          std::tuple{"v", kv_heads * hd, d}, std::tuple{"o", d, heads * hd}}) {
      t[p + "self_attn." + proj + "_proj.weight"] = {{rows, cols}, dt};
      t[p + "self_attn." + proj + "_proj.bias"] = {{rows}, dt};
    }
    t[p + "self_attn.sinks"] = {{heads}, dt};
    t[p + "mlp.router.weight"] = {{experts, d}, dt};
    t[p + "mlp.router.bias"] = {{experts}, dt};
    t[p + "mlp.experts.gate_up_proj_bias"] = {{experts, 2 * ff}, dt};
    t[p + "mlp.experts.down_proj_bias"] = {{experts, d}, dt};
    t[p + "mlp.experts.gate_up_proj_blocks"] = {{experts, 2 * ff, d / 32, 16}, "U8"};
    t[p + "mlp.experts.gate_up_proj_scales"] = {{experts, 2 * ff, d / 32}, "U8"};
    t[p + "mlp.experts.down_proj_blocks"] = {{experts, d, ff / 32, 16}, "U8"};
    t[p + "mlp.experts.down_proj_scales"] = {{experts, d, ff / 32}, "U8"};
  }
  return t;
}

// The generated tiny presets' Hugging Face tables (the tiny preset's sizes).
inline Table tiny_hf_table(Family family, const std::string& dt) {
  switch (family) {
    case Family::kQwen3:
      return qwen3_table(2, 64, 128, 64, 32, 192, 1024, dt);
    case Family::kQwen3_5:
      return qwen3_5_table({.layers = 4,
                            .d = 64,
                            .heads = 4,
                            .kv_heads = 2,
                            .hd = 32,
                            .ff = 192,
                            .vocab = 1024,
                            .hk = 2,
                            .hv = 4,
                            .dk = 16,
                            .dv = 16,
                            .kernel = 4},
                           dt);
    case Family::kMamba2:
      return mamba2_table(2, 64, 8, 128, 160, 1024, dt);
    case Family::kLlama:  // 1000 BPE tokens + Llama 3's 256 special ones, rounded up to 64
      return llama_table(2, 64, 64, 32, 192, 1280, /*tied=*/false, /*bias=*/false, dt);
    case Family::kLfm2:  // LFM2's 14 added tokens + 1000 BPE tokens, rounded up to 64
      return lfm2_table(4, 64, 4, 2, 16, 192, 3, 1024, {2}, false, dt);
    case Family::kGptOss:  // 1000 BPE tokens + 1090 harmony ones (199998..201087), rounded up
      return gpt_oss_table(2, 64, 4, 2, 16, 64, 8, 2112, dt);
    case Family::kSmolLm3:  // Llama's tensors; 1000 BPE tokens + 256 added ones, rounded up
      return llama_table(4, 64, 64, 32, 192, 1280, /*tied=*/false, /*bias=*/false, dt);
    case Family::kGemma3:  // no table here yet: not among the table-checked families
    case Family::kQwen3Moe:
    case Family::kGraniteHybrid:
    case Family::kNemotronH:
    case Family::kFalconH1:
    case Family::kQwen3_5Moe:
    case Family::kQwen3Next:
    case Family::kGraniteMoe:
    case Family::kLfm2Moe:
      break;
  }
  return {};
}

}  // namespace recur::modelgen::testing
