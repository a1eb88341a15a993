#include "model/tensor_binding.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <tuple>

#include "kernels/quant.h"
#include "util/check.h"
#include "util/mmap_file.h"
#include "util/progress.h"

namespace recur::model {

namespace k = recur::kernels;

namespace {

// One expert's matrix of a stacked tensor: codes, scales and biases are [count, rows, ...].
struct Stacked {
  std::int64_t index = 0, count = 0;  // count 0: a plain 2-D tensor
};

// Binds a family's tensors to the checkpoint; the first error is kept and later calls are no-ops.
class BindingVisitor final : public TensorVisitor {
 public:
  BindingVisitor(const Checkpoint& ck, const std::optional<QuantizationConfig>& quant,
                 const LoadOptions& opts, std::string_view family, QuantizedStore* store,
                 std::vector<TensorEntry>* list)
      : ck_(ck), quant_(quant), opts_(opts), family_(family), store_(store), list_(list) {}
  Status status() const { return status_; }
  bool norms_hold_one() const override { return ck_.mlx_format(); }
  bool has_tensor(const std::string& name) const override { return ck_.find(name) != nullptr; }

  void matrix(const std::string& name, std::int64_t rows, std::int64_t cols, k::WeightView* slot,
              Need need) override {
    const std::string module = name.ends_with(".weight") ? name.substr(0, name.size() - 7) : "";
    if (!module.empty() && ck_.find(module + ".scales") != nullptr) {
      bind_quantized(module, rows, cols, slot);
      return;
    }
    list_->push_back({name, {rows, cols}, need == Need::kRequired});
    const TensorInfo* t = lookup(name, {rows, cols}, need);
    if (t == nullptr) return;
    list_->back().n_bytes = static_cast<std::int64_t>(t->n_bytes);
    *slot = {.data = t->data, .dtype = *t->dtype, .rows = rows, .cols = cols};
    if (const OnLoadFormat f = on_load_format(module, cols); f.bits != 0) {
      const std::size_t before = store_->bytes;
      quantize_in_memory(slot, f.bits, f.group_size);
      list_->back().n_bytes = static_cast<std::int64_t>(store_->bytes - before);
      drop_mapped_pages(t->data, t->n_bytes);  // the pages the row passes shared at their edges
    } else {
      advance(t->n_bytes);
    }
  }

  // MLX's stacked experts (`<p>switch_mlp.<proj>.weight` [experts, rows, cols], quantized or
  // not) when the checkpoint has them; else the stacked Hugging Face ones (layout.fused_gate_up
  // [experts, 2 * rows, cols], gate rows first, and layout.fused_down [experts, rows, cols]:
  // transformers 5's experts.gate_up_proj / down_proj, Granite 4.0-H's input_linear.weight /
  // output_linear.weight); else the per-expert tensors.
  void expert_matrices(const std::string& p, ExpertProj proj, std::int64_t rows, std::int64_t cols,
                       const ExpertLayout& layout, std::vector<k::WeightView>* slots) override {
    const std::string module = p + "switch_mlp." + layout.mlx_proj[static_cast<int>(proj)];
    const auto n = static_cast<std::int64_t>(slots->size());
    if (ck_.find(module + ".weight") == nullptr) {
      const bool gate_up = proj != ExpertProj::kDown;
      const std::string fused = p + (gate_up ? layout.fused_gate_up : layout.fused_down);
      if (ck_.find(fused) != nullptr || !layout.per_expert) {
        // The gate's call lists the fused tensor and leaves its pages for the up call (un-gated
        // experts: the up Linears alone).
        const bool pair = gate_up && layout.gated;
        const bool first = proj != ExpertProj::kUp || !pair, last = proj != ExpertProj::kGate;
        bind_stacked(fused, pair ? 2 : 1, pair && proj == ExpertProj::kUp ? 1 : 0, n, rows, cols,
                     first, last, slots);
        return;
      }
      TensorVisitor::expert_matrices(p, proj, rows, cols, layout, slots);
      return;
    }
    if (ck_.find(module + ".scales") != nullptr) {
      for (std::int64_t e = 0; e < n; ++e) {
        bind_quantized(module, rows, cols, &(*slots)[static_cast<std::size_t>(e)], {e, n});
      }
      return;
    }
    bind_stacked(module + ".weight", 1, 0, n, rows, cols, true, true, slots);
  }

  void interleaved_experts(const std::string& p, std::int64_t d_ff, std::int64_t d_model,
                           std::vector<k::WeightView>* gate, std::vector<k::WeightView>* up,
                           std::vector<k::WeightView>* down) override {
    if (ck_.find(p + "gate_up_proj_blocks") != nullptr) {
      bind_mxfp4(p + "gate_up_proj", 2 * d_ff, d_model, gate, up);
      bind_mxfp4(p + "down_proj", d_model, d_ff, down, nullptr);
      return;
    }
    bind_transposed(p + "gate_up_proj", d_model, 2 * d_ff, gate, up);
    bind_transposed(p + "down_proj", d_ff, d_model, down, nullptr);
  }

  // `name`_blocks [E, rows, cols / 32, 16] and `name`_scales [E, rows, cols / 32] (U8): each
  // expert's MXFP4 matrix packed into the kernels' layout (kernels/quant.h). With `odd`, the
  // rows alternate between two matrices [rows / 2, cols]: even rows into `even`, odd into `odd`.
  void bind_mxfp4(const std::string& name, std::int64_t rows, std::int64_t cols,
                  std::vector<k::WeightView>* even, std::vector<k::WeightView>* odd) {
    const auto n = static_cast<std::int64_t>(even->size());
    if (!status_.is_ok()) return;
    if (cols % 32 != 0) {
      status_ = Error(StatusCode::kInvalidArgument,
                      "{}: '{}_blocks': MXFP4 needs rows of whole blocks of 32, not {}", ck_.dir(),
                      name, cols);
      return;
    }
    const TensorInfo* blocks = lookup_bytes(name + "_blocks", {n, rows, cols / 32, 16});
    const TensorInfo* scales = lookup_bytes(name + "_scales", {n, rows, cols / 32});
    if (blocks == nullptr || scales == nullptr) return;
    const std::size_t listed = list_->size() - 2;  // the blocks' entry
    const std::int64_t out_rows = odd != nullptr ? rows / 2 : rows;
    const std::int64_t row_bytes = cols / 2, row_scales = cols / 32;
    const std::size_t before = store_->bytes;
    for (std::int64_t e = 0; e < n; ++e) {
      for (int half = 0; half < (odd != nullptr ? 2 : 1); ++half) {
        k::WeightView* slot = &(half == 0 ? *even : *odd)[static_cast<std::size_t>(e)];
        *slot = store_->add(k::mxfp4_packed_view(out_rows, cols, nullptr));
      }
    }
    // Each expert on a pool task: its rows (one matrix's, or every other one copied out first).
    std::atomic<std::int64_t> bad{-1}, huge{-1};
    auto pack_expert = [&](std::size_t task) {
      const auto e = static_cast<std::int64_t>(task);
      const std::uint8_t* b = blocks->data + e * rows * row_bytes;
      const std::uint8_t* sc = scales->data + e * rows * row_scales;
      // 253 and 254 are weights of 2^125 and more, whose group bias (−12 · 2^(e − 128)) the
      // packed layout's bf16 cannot hold: refused rather than run as inf.
      if (std::any_of(sc, sc + rows * row_scales,
                      [](std::uint8_t v) { return v == 253 || v == 254; })) {
        huge = e;
        return;
      }
      if (odd == nullptr) {
        if (!k::pack_mxfp4_rows({.blocks = b, .scales = sc, .rows = rows, .cols = cols}, 0, rows,
                                (*even)[task])) {
          bad = e;
        }
        return;
      }
      std::vector<std::uint8_t> rb(static_cast<std::size_t>(out_rows * row_bytes));
      std::vector<std::uint8_t> rs(static_cast<std::size_t>(out_rows * row_scales));
      for (int half = 0; half < 2; ++half) {
        for (std::int64_t r = 0; r < out_rows; ++r) {
          const std::int64_t src = 2 * r + half;
          std::memcpy(rb.data() + r * row_bytes, b + src * row_bytes,
                      static_cast<std::size_t>(row_bytes));
          std::memcpy(rs.data() + r * row_scales, sc + src * row_scales,
                      static_cast<std::size_t>(row_scales));
        }
        if (!k::pack_mxfp4_rows(
                {.blocks = rb.data(), .scales = rs.data(), .rows = out_rows, .cols = cols}, 0,
                out_rows, (half == 0 ? *even : *odd)[task])) {
          bad = e;
        }
      }
    };
    if (opts_.pool == nullptr) {
      for (std::size_t e = 0; e < static_cast<std::size_t>(n); ++e) pack_expert(e);
    } else {
      opts_.pool->run(static_cast<std::size_t>(n), pack_expert);
    }
    if (bad >= 0) {
      status_ = Error(StatusCode::kDataLoss,
                      "{}: tensor '{}_scales' of expert {} holds 255, which MXFP4 reserves for NaN",
                      scales->file, name, bad.load());
      return;
    }
    if (huge >= 0) {
      status_ = Error(StatusCode::kUnimplemented,
                      "{}: tensor '{}_scales' of expert {} holds a scale of 253 or 254 (weights of "
                      "2^125 and more), beyond what recur's packed MXFP4 layout holds",
                      scales->file, name, huge.load());
      return;
    }
    (*list_)[listed].n_bytes = static_cast<std::int64_t>(store_->bytes - before);
    advance(blocks->n_bytes + scales->n_bytes);
    drop_mapped_pages(blocks->data, blocks->n_bytes);
    drop_mapped_pages(scales->data, scales->n_bytes);
  }

  // A raw-byte tensor (U8) of exactly `shape`, listed.
  const TensorInfo* lookup_bytes(const std::string& name, const std::vector<std::int64_t>& shape) {
    list_->push_back({.name = name, .shape = shape, .u8 = true});
    if (!status_.is_ok()) return nullptr;
    const TensorInfo* t = ck_.find(name);
    if (t == nullptr) {
      status_ = Error(StatusCode::kNotFound, "{}: missing tensor '{}' (expected U8 {})", ck_.dir(),
                      name, shape_to_string(shape));
    } else if (t->dtype_text != "U8" || t->shape != shape) {
      status_ =
          Error(StatusCode::kInvalidArgument, "{}: tensor '{}' is {} {}, expected U8 {}", t->file,
                name, t->dtype_text, shape_to_string(t->shape), shape_to_string(shape));
    }
    return status_.is_ok() ? t : nullptr;
  }

  // `name` [E, cols, rows] applied as x · W (transformers' GptOssExperts parameters): each
  // expert's [rows, cols] Linear transposed into memory of the tensor's dtype (then quantized
  // under --quantize). With `odd`, its rows alternate as in bind_mxfp4.
  void bind_transposed(const std::string& name, std::int64_t cols, std::int64_t rows,
                       std::vector<k::WeightView>* even, std::vector<k::WeightView>* odd) {
    const auto n = static_cast<std::int64_t>(even->size());
    list_->push_back({name, {n, cols, rows}, true});
    const std::size_t listed = list_->size() - 1;
    const TensorInfo* t = lookup(name, {n, cols, rows}, Need::kRequired);
    if (t == nullptr) return;
    const k::DType dt = *t->dtype;
    const std::int64_t es = k::dtype_bytes(dt), out_rows = odd != nullptr ? rows / 2 : rows;
    const bool quantize = opts_.quantize_bits != 0 && cols % opts_.quantize_group_size == 0;
    const std::size_t before = store_->bytes;
    std::vector<std::uint8_t> linear;  // one transposed matrix on its way to being quantized
    for (std::int64_t e = 0; e < n; ++e) {
      const std::uint8_t* src = t->data + e * cols * rows * es;
      for (int half = 0; half < (odd != nullptr ? 2 : 1); ++half) {
        k::WeightView* slot = &(half == 0 ? *even : *odd)[static_cast<std::size_t>(e)];
        const k::WeightView shape{.dtype = dt, .rows = out_rows, .cols = cols};
        if (quantize) {
          linear.resize(static_cast<std::size_t>(shape.total_bytes()));
          *slot = shape;
          slot->data = linear.data();
        } else {
          *slot = store_->add(shape);
        }
        auto* dst = static_cast<std::uint8_t*>(const_cast<void*>(slot->data));
        const std::int64_t step = odd != nullptr ? 2 : 1;
        for (std::int64_t r = 0; r < out_rows; ++r) {
          const std::int64_t col = r * step + half;  // the source column of output row r
          for (std::int64_t c = 0; c < cols; ++c) {
            std::memcpy(dst + (r * cols + c) * es, src + (c * rows + col) * es,
                        static_cast<std::size_t>(es));
          }
        }
        if (quantize) quantize_in_memory(slot, opts_.quantize_bits, opts_.quantize_group_size);
      }
    }
    (*list_)[listed].n_bytes = static_cast<std::int64_t>(store_->bytes - before);
    if (!quantize) advance(t->n_bytes);  // quantize_in_memory counted the quantized ones
    drop_mapped_pages(t->data, t->n_bytes);
  }

  // Expert e's matrix is part `part` of `parts` [rows, cols] slabs in row e of the floating
  // tensor `name` [n, parts * rows, cols]. `first`: list the tensor; `last`: its pages may go.
  void bind_stacked(const std::string& name, std::int64_t parts, std::int64_t part, std::int64_t n,
                    std::int64_t rows, std::int64_t cols, bool first, bool last,
                    std::vector<k::WeightView>* slots) {
    const std::vector<std::int64_t> shape = {n, parts * rows, cols};
    if (first) list_->push_back({name, shape, true});
    const std::size_t listed = list_->size() - 1;
    const TensorInfo* t = lookup(name, shape, Need::kRequired);
    if (t == nullptr) return;
    if (first) (*list_)[listed].n_bytes = 0;
    const std::int64_t expert_bytes = rows * cols * k::dtype_bytes(*t->dtype);
    const std::size_t before = store_->bytes;
    for (std::int64_t e = 0; e < n; ++e) {
      k::WeightView* slot = &(*slots)[static_cast<std::size_t>(e)];
      *slot = {.data = t->data + (e * parts + part) * expert_bytes,
               .dtype = *t->dtype,
               .rows = rows,
               .cols = cols};
      if (opts_.quantize_bits != 0 && cols % opts_.quantize_group_size == 0) {
        quantize_in_memory(slot, opts_.quantize_bits, opts_.quantize_group_size);
      } else {
        advance(static_cast<std::size_t>(expert_bytes));
      }
    }
    // A fused tensor's entry was listed by the gate's call: the up call adds its share to it.
    TensorEntry& entry = first ? (*list_)[listed] : list_->back();
    entry.n_bytes += store_->bytes != before ? static_cast<std::int64_t>(store_->bytes - before)
                                             : n * expert_bytes;
    if (store_->bytes != before && last) drop_mapped_pages(t->data, t->n_bytes);
  }

  void vector(const std::string& name, std::vector<std::int64_t> shape, std::vector<float>* slot,
              Need need) override {
    if (status_.is_ok() && name.ends_with(".weight") &&
        ck_.find(name.substr(0, name.size() - 7) + ".scales") != nullptr) {
      status_ = Error(StatusCode::kInvalidArgument,
                      "{}: tensor '{}' is quantized, but recur reads it as floats (only Linear and "
                      "Embedding weights may be quantized)",
                      ck_.dir(), name);
      return;
    }
    // MLX stores conv kernels channels-last, [C, K, 1] for HF's [C, 1, K]: the same bytes.
    if (shape.size() == 3 && shape[1] == 1) {
      const TensorInfo* t = ck_.find(name);
      if (t != nullptr && t->shape == std::vector<std::int64_t>{shape[0], shape[2], 1}) {
        shape = t->shape;
      }
    }
    list_->push_back({name, shape, need == Need::kRequired});
    const TensorInfo* t = lookup(name, shape, need);
    if (t == nullptr) return;
    list_->back().n_bytes = static_cast<std::int64_t>(t->n_bytes);
    const k::DType dt = *t->dtype;
    const auto n = static_cast<std::int64_t>(t->n_bytes) / k::dtype_bytes(dt);
    slot->resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      (*slot)[static_cast<std::size_t>(i)] = load_unaligned(t->data, dt, i);
    }
    advance(t->n_bytes);
  }

 private:
  static float load_unaligned(const std::uint8_t* p, k::DType dt, std::int64_t i) {
    const auto size = static_cast<std::size_t>(k::dtype_bytes(dt));
    alignas(4) std::uint8_t tmp[4] = {};
    std::memcpy(tmp, p + static_cast<std::size_t>(i) * size, size);
    return k::load_as_f32(tmp, dt, 0);
  }

  const TensorInfo* lookup(const std::string& name, const std::vector<std::int64_t>& shape,
                           Need need) {
    if (!status_.is_ok()) return nullptr;
    const TensorInfo* t = ck_.find(name);
    if (t == nullptr) {
      if (need == Need::kRequired) {
        status_ = Error(StatusCode::kNotFound, "{}: missing tensor '{}' (expected shape {})",
                        ck_.dir(), name, shape_to_string(shape));
      }
      return nullptr;
    }
    if (t->shape != shape) {
      status_ = Error(StatusCode::kInvalidArgument, "{}: tensor '{}' has shape {}, expected {}",
                      t->file, name, shape_to_string(t->shape), shape_to_string(shape));
      return nullptr;
    }
    if (!t->dtype) {
      status_ = Error(StatusCode::kInvalidArgument,
                      "{}: tensor '{}' has dtype {}; supported: BF16, F16, F32{}", t->file, name,
                      t->dtype_text,
                      t->dtype_text == "U32" ? " (packed quantized codes need their .scales and "
                                               ".biases tensors beside them)"
                                             : "");
      return nullptr;
    }
    // Kernels read weights in place, so elements must sit at their natural alignment.
    const auto align = static_cast<std::uintptr_t>(k::dtype_bytes(*t->dtype));
    if (reinterpret_cast<std::uintptr_t>(t->data) % align != 0) {
      status_ = Error(StatusCode::kDataLoss, "{}: tensor '{}' data is not {}-byte aligned", t->file,
                      name, align);
      return nullptr;
    }
    return t;
  }

  // `module`.weight holds packed codes, `module`.scales and .biases one value per group: the
  // view reads all three in place. Bits and group size follow from the shapes and must agree with
  // config.json's quantization (its default or the module's override) when it has one.
  void bind_quantized(const std::string& module, std::int64_t rows, std::int64_t cols,
                      k::WeightView* slot, Stacked stack = {}) {
    if (!status_.is_ok()) return;
    const std::string name = module + ".weight";
    const TensorInfo* codes = ck_.find(name);
    const TensorInfo* scales = ck_.find(module + ".scales");
    const TensorInfo* biases = ck_.find(module + ".biases");
    auto fail = [&](StatusCode code, std::string msg) {
      status_ = Error(code, "{}: quantized tensor '{}': {}", scales->file, name, msg);
    };
    if (codes == nullptr) return fail(StatusCode::kNotFound, "missing (its .scales exist)");
    if (biases == nullptr) {
      return fail(StatusCode::kUnimplemented,
                  "no .biases: only MLX's affine mode (scales and biases) is supported");
    }
    // A stacked tensor leads with the expert count; the rest is one matrix's shape.
    const std::vector<std::int64_t> lead =
        stack.count > 0 ? std::vector<std::int64_t>{stack.count, rows} : std::vector{rows};
    const std::string lead_text =
        stack.count > 0 ? fmt::format("{}, {}", stack.count, rows) : fmt::format("{}", rows);
    auto leads_with = [&](const TensorInfo* t) {
      return t->shape.size() == lead.size() + 1 &&
             std::equal(lead.begin(), lead.end(), t->shape.begin());
    };
    if (codes->dtype_text != "U32" || !leads_with(codes)) {
      return fail(StatusCode::kInvalidArgument,
                  fmt::format("codes must be U32 [{}, cols*bits/32], got {} {}", lead_text,
                              codes->dtype_text, shape_to_string(codes->shape)));
    }
    const std::int64_t n_groups = scales->shape.empty() ? 0 : scales->shape.back();
    const std::int64_t words = codes->shape.back();
    if (!leads_with(scales) || n_groups <= 0 || cols % n_groups != 0 ||
        scales->shape != biases->shape) {
      return fail(StatusCode::kInvalidArgument,
                  fmt::format("scales {} and biases {} must both be [{}, {} / group_size]",
                              shape_to_string(scales->shape), shape_to_string(biases->shape),
                              lead_text, cols));
    }
    const std::int64_t group_size = cols / n_groups;
    const std::int64_t bits = words * 32 / cols;
    if (words * 32 != bits * cols ||
        !k::quant_format_supported(static_cast<int>(bits), static_cast<int>(group_size))) {
      return fail(
          StatusCode::kUnimplemented,
          fmt::format("{} words per row and {} groups for {} inputs are {} bits in groups "
                      "of {}; supported: 4 or 8 bits, groups of 32, 64 or 128",
                      words, n_groups, cols, words * 32.0 / static_cast<double>(cols), group_size));
    }
    if (quant_) {
      const QuantizationConfig::Format want = quant_->for_module(module);
      if (want.bits != bits || want.group_size != group_size) {
        return fail(
            StatusCode::kInvalidArgument,
            fmt::format("its shapes say {} bits in groups of {}, config.json's quantization "
                        "says {} bits in groups of {}",
                        bits, group_size, want.bits, want.group_size));
      }
    }
    if (!scales->dtype || scales->dtype != biases->dtype) {
      return fail(StatusCode::kInvalidArgument,
                  fmt::format("scales ({}) and biases ({}) must share one of BF16, F16, F32",
                              scales->dtype_text, biases->dtype_text));
    }
    const auto scale_align = static_cast<std::uintptr_t>(k::dtype_bytes(*scales->dtype));
    if (reinterpret_cast<std::uintptr_t>(codes->data) % 4 != 0 ||
        reinterpret_cast<std::uintptr_t>(scales->data) % scale_align != 0 ||
        reinterpret_cast<std::uintptr_t>(biases->data) % scale_align != 0) {
      return fail(StatusCode::kDataLoss, "data is not aligned to its element size");
    }
    if (stack.index == 0) {  // a stacked tensor is listed once, with its full shape
      std::vector<std::int64_t> shape = lead;
      shape.push_back(cols);
      list_->push_back({name, shape, true, static_cast<std::int64_t>(codes->n_bytes)});
      list_->push_back(
          {module + ".scales", scales->shape, true, static_cast<std::int64_t>(scales->n_bytes)});
      list_->push_back(
          {module + ".biases", biases->shape, true, static_cast<std::int64_t>(biases->n_bytes)});
    }
    const std::int64_t scale_bytes = rows * n_groups * k::dtype_bytes(*scales->dtype);
    const k::MlxQuantized mlx{
        .codes = reinterpret_cast<const std::uint32_t*>(codes->data) + stack.index * rows * words,
        .scales = scales->data + stack.index * scale_bytes,
        .biases = biases->data + stack.index * scale_bytes,
        .dtype = *scales->dtype,
        .rows = rows,
        .cols = cols,
        .bits = static_cast<int>(bits),
        .group_size = static_cast<int>(group_size)};
    // Repacked into the kernels' layout; the file's pages are released behind the copy.
    *slot = store_->add(k::packed_view(mlx, nullptr));
    pack_on_pool(mlx, *slot);
    advance(static_cast<std::size_t>(rows * words * 4 + 2 * scale_bytes));
    if (stack.index + 1 < stack.count) return;  // the later experts still read these pages
    drop_mapped_pages(codes->data, codes->n_bytes);
    drop_mapped_pages(scales->data, scales->n_bytes);
    drop_mapped_pages(biases->data, biases->n_bytes);
  }

  // --quantize: MLX's quantizer over the weight's values (converted to f32 row by row), scales
  // and biases in the weight's own dtype as MLX keeps them. Each pool thread quantizes one
  // contiguous share of the rows, kRowsPerPass at a time (a 30B-class bf16 checkpoint is minutes
  // of quantizer arithmetic on one thread).
  // --quantize's format for a floating matrix (bits 0: it stays floating), by mlx-lm's rule:
  // the family's routers at 8 bits in groups of 64 (mlx_keeps_at_8_bits), the rest at the asked
  // format; a matrix whose width its group does not divide stays floating, and so do those mlx-lm
  // never quantizes (mlx_keeps_floating).
  struct OnLoadFormat {
    int bits = 0, group_size = 0;
  };
  OnLoadFormat on_load_format(std::string_view module, std::int64_t cols) const {
    if (opts_.quantize_bits == 0 || mlx_keeps_floating(family_, module)) return {};
    const OnLoadFormat f =
        mlx_keeps_at_8_bits(family_, module)
            ? OnLoadFormat{.bits = 8, .group_size = 64}
            : OnLoadFormat{.bits = opts_.quantize_bits, .group_size = opts_.quantize_group_size};
    return cols % f.group_size == 0 ? f : OnLoadFormat{};
  }

  void quantize_in_memory(k::WeightView* w, int bits, int gs) {
    constexpr std::int64_t kRowsPerPass = 4 * k::kQuantBlockRows;
    const k::WeightView src = *w;
    const k::WeightView packed = store_->add(k::packed_view(
        {.dtype = src.dtype, .rows = src.rows, .cols = src.cols, .bits = bits, .group_size = gs},
        nullptr));
    const std::int64_t passes = (src.rows + kRowsPerPass - 1) / kRowsPerPass;
    const std::int64_t shares =
        opts_.pool == nullptr ? 1 : std::min<std::int64_t>(opts_.pool->n_threads(), passes);
    // Share i: passes [passes·i / shares, passes·(i + 1) / shares).
    auto quantize_share = [&](std::int64_t i) {
      const std::int64_t groups = src.cols / gs;
      std::vector<float> rows(static_cast<std::size_t>(kRowsPerPass * src.cols));
      std::vector<std::uint32_t> codes(
          static_cast<std::size_t>(kRowsPerPass * src.cols * bits / 32));
      std::vector<std::uint8_t> scales(
          static_cast<std::size_t>(kRowsPerPass * groups * k::dtype_bytes(src.dtype)));
      std::vector<std::uint8_t> biases(scales.size());
      const k::MlxQuantized mlx{.codes = codes.data(),
                                .scales = scales.data(),
                                .biases = biases.data(),
                                .dtype = src.dtype,
                                .rows = src.rows,
                                .cols = src.cols,
                                .bits = bits,
                                .group_size = gs};
      for (std::int64_t p = passes * i / shares; p < passes * (i + 1) / shares; ++p) {
        const std::int64_t r0 = p * kRowsPerPass, n = std::min(kRowsPerPass, src.rows - r0);
        const k::WeightView part = src.slice_rows(r0, n);
        for (std::int64_t e = 0; e < n * src.cols; ++e) {
          rows[static_cast<std::size_t>(e)] = k::load_as_f32(part.data, src.dtype, e);
        }
        k::quantize_rows(rows.data(), n, src.cols, bits, gs, src.dtype, codes.data(), scales.data(),
                         biases.data());
        k::pack_quantized_rows(mlx, r0, n, packed);
        advance(static_cast<std::size_t>(n * part.row_bytes()));
        // Released as it goes, so loading never holds a whole floating matrix (the embedding is
        // the largest: 0.5 GB at Qwen3.5-0.8B's vocabulary) beside the quantized copy.
        drop_mapped_pages(part.data, static_cast<std::size_t>(n * part.row_bytes()));
      }
    };
    if (shares == 1) {
      quantize_share(0);
    } else {
      opts_.pool->run(static_cast<std::size_t>(shares),
                      [&](std::size_t i) { quantize_share(static_cast<std::int64_t>(i)); });
    }
    *w = packed;
  }

  // pack_quantized_rows over runs of blocks on the pool, each from its own rows of m.
  void pack_on_pool(const k::MlxQuantized& m, const k::WeightView& out) {
    constexpr std::int64_t kRowsPerTask = 16 * k::kQuantBlockRows;
    const std::int64_t tasks = (m.rows + kRowsPerTask - 1) / kRowsPerTask;
    if (opts_.pool == nullptr || tasks < 2) {
      k::pack_quantized_rows(m, 0, m.rows, out);
      return;
    }
    const std::int64_t words = m.cols * m.bits / 32;
    const std::int64_t param_bytes = (m.cols / m.group_size) * k::dtype_bytes(m.dtype);
    opts_.pool->run(static_cast<std::size_t>(tasks), [&](std::size_t t) {
      const std::int64_t r0 = static_cast<std::int64_t>(t) * kRowsPerTask;
      k::MlxQuantized part = m;
      part.codes += r0 * words;
      part.scales = static_cast<const std::uint8_t*>(m.scales) + r0 * param_bytes;
      part.biases = static_cast<const std::uint8_t*>(m.biases) + r0 * param_bytes;
      k::pack_quantized_rows(part, r0, std::min(kRowsPerTask, m.rows - r0), out);
    });
  }

  void advance(std::size_t bytes) {
    if (opts_.progress != nullptr) opts_.progress->add(static_cast<std::int64_t>(bytes));
  }

  const Checkpoint& ck_;
  const std::optional<QuantizationConfig>& quant_;
  const LoadOptions& opts_;
  std::string_view family_;
  QuantizedStore* store_;
  std::vector<TensorEntry>* list_;
  Status status_;
};

}  // namespace

Status bind_tensors(FamilyModel& impl, const Checkpoint& ck,
                    const std::optional<QuantizationConfig>& quant, const LoadOptions& opts,
                    std::string_view family, QuantizedStore* store,
                    std::vector<TensorEntry>* list) {
  BindingVisitor binder(ck, quant, opts, family, store, list);
  impl.visit_tensors(binder);
  return binder.status();
}

}  // namespace recur::model
