#!/usr/bin/python3
# Convert a Hugging Face checkpoint (config.json + *.safetensors + tokenizer.json) of a qwen3,
# qwen3_5 (text part), mamba2 or gpt_oss model into a GGUF that llama.cpp loads, without torch: the
# safetensors are read with json + numpy and the GGUF is written with llama.cpp's gguf-py.
#
# It produces what llama.cpp's convert_hf_to_gguf.py would from the same checkpoint, so both
# engines compute the same model: the same tensor names (gguf-py's TensorNameMap), the same
# transforms (qwen3_5: -exp(A_log), dt_bias -> ssm_dt.bias, conv1d squeezed, RMSNorm weights
# stored as 1 + w except the gated delta net's own norm, V heads reordered from grouped to tiled
# when num_v_heads > num_k_heads; mamba2: A = -exp(A_log) and D as [n_head, 1], conv1d
# squeezed, the gated norm as [n_group, d_inner / n_group]; gpt_oss: MXFP4 experts repacked into
# ggml's block_mxfp4 with gate_up split into gate (even rows) and up (odd rows), its biases too,
# sinks as a .weight), the same metadata keys, and the same type rule (1-D tensors, norms,
# conv1d and non-.weight tensors in F32; the rest in --outtype).
#
# The token list is tokenizer.json's (byte-level BPE with merges), padded with "[PAD{i}]"
# UNUSED tokens up to the embedding's rows (gguf_tokens.py).
#
# Usage: convert_gguf.py CHECKPOINT_DIR OUT.gguf [--outtype bf16|f32] [--llama-cpp DIR]
#        (DIR: a llama.cpp checkout, for its gguf-py; default $LLAMA_CPP_DIR)
import argparse, json, os, struct, sys
from pathlib import Path

import numpy as np

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument('checkpoint', type=Path)
ap.add_argument('out', type=Path)
ap.add_argument('--outtype', choices=['bf16', 'f32'], default='bf16',
                help='type of the 2-D weights (norms, 1-D and conv tensors are always F32)')
ap.add_argument('--llama-cpp', default=os.environ.get('LLAMA_CPP_DIR'),
                help='llama.cpp checkout whose gguf-py to use (default: $LLAMA_CPP_DIR)')
args = ap.parse_args()
if not args.llama_cpp:
    sys.exit('convert_gguf.py: give --llama-cpp DIR or set LLAMA_CPP_DIR (a llama.cpp checkout)')
sys.path.insert(0, os.path.join(args.llama_cpp, 'gguf-py'))
import gguf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_tokens import token_list  # noqa: E402

ckpt = args.checkpoint
config = json.load(open(ckpt / 'config.json'))
# qwen3_5 keeps the language model's hyperparameters in text_config; llama.cpp lifts them up.
hp = {**config, **config.get('text_config', {})}
model_type = config.get('model_type')
FAMILIES = {'qwen3': gguf.MODEL_ARCH.QWEN3, 'qwen3_5': gguf.MODEL_ARCH.QWEN35,
            'mamba2': gguf.MODEL_ARCH.MAMBA2, 'gpt_oss': gguf.MODEL_ARCH.GPT_OSS}
if model_type not in FAMILIES:
    sys.exit(f'convert_gguf.py: model_type {model_type!r} is not one of {sorted(FAMILIES)}')
arch = FAMILIES[model_type]
n_layer = hp['num_hidden_layers']


# ---- safetensors ---------------------------------------------------------------------------

ST_DTYPES = {'BF16': np.uint16, 'F16': np.float16, 'F32': np.float32, 'U8': np.uint8}


def read_safetensors(path):
    """{name: (dtype string, numpy array over the file's bytes)}: bf16 stays uint16 bits."""
    with open(path, 'rb') as f:
        (n,) = struct.unpack('<Q', f.read(8))
        header = json.loads(f.read(n))
    data = np.memmap(path, dtype=np.uint8, mode='r', offset=8 + n)
    out = {}
    for name, info in header.items():
        if name == '__metadata__':
            continue
        if info['dtype'] not in ST_DTYPES:
            sys.exit(f'convert_gguf.py: {name}: unsupported dtype {info["dtype"]}')
        a, b = info['data_offsets']
        arr = data[a:b].view(ST_DTYPES[info['dtype']]).reshape(info['shape'])
        out[name] = (info['dtype'], arr)
    return out


tensors = {}
for p in sorted(ckpt.glob('*.safetensors')):
    tensors.update(read_safetensors(p))
if not tensors:
    sys.exit(f'convert_gguf.py: no *.safetensors in {ckpt}')


def to_f32(dtype, arr):
    if dtype == 'BF16':
        return (arr.astype(np.uint32) << 16).view(np.float32)
    return np.asarray(arr, dtype=np.float32)


# ---- tensor transforms (what llama.cpp's converter does for each family) --------------------

def qwen35_v_reorder(x, axis, head_dim):
    """V heads from grouped-by-K-head order to tiled order along `axis` (llama.cpp's ggml
    broadcasts [K0, K1, ..., K0, K1, ...]): a no-op when num_v_heads == num_k_heads."""
    nk, nv = hp['linear_num_key_heads'], hp['linear_num_value_heads']
    if nk == nv:
        return x
    axis %= x.ndim
    shape = x.shape
    y = x.reshape(shape[:axis] + (nk, nv // nk, head_dim) + shape[axis + 1:])
    return np.ascontiguousarray(np.swapaxes(y, axis, axis + 1)).reshape(shape)


def transform_qwen35(name, x):
    """x is f32 or raw (uint16 bf16 bits) for untouched weights; returns (name, x, changed)."""
    if 'linear_attn.' in name and hp['linear_num_key_heads'] != hp['linear_num_value_heads']:
        kd, vd, nk = hp['linear_key_head_dim'], hp['linear_value_head_dim'], hp['linear_num_key_heads']
        if '.in_proj_qkv.' in name:
            qk = 2 * kd * nk
            x = np.concatenate([x[:qk], qwen35_v_reorder(x[qk:], 0, vd)], axis=0)
        elif '.in_proj_z.' in name:
            x = qwen35_v_reorder(x, 0, vd)
        elif '.in_proj_a.' in name or '.in_proj_b.' in name:
            x = qwen35_v_reorder(x, 0, 1)
        elif name.endswith(('.A_log', '.dt_bias')):
            x = qwen35_v_reorder(x.reshape(-1, 1), 0, 1).reshape(-1)
        elif '.conv1d.' in name:
            x = x.reshape(x.shape[0], -1)
            qk = 2 * kd * nk
            x = np.concatenate([x[:qk], qwen35_v_reorder(x[qk:], 0, vd)], axis=0)
        elif '.out_proj.' in name:
            x = qwen35_v_reorder(x, 1, vd)
    if name.endswith('.A_log'):
        x = -np.exp(x)
    elif name.endswith('.dt_bias'):
        name = name[:-len('.dt_bias')] + '.dt_proj.bias'
    elif '.conv1d.' in name:
        x = x.reshape(x.shape[0], -1)  # [channels, 1, kernel] -> [channels, kernel]
    elif name.endswith('norm.weight') and not name.endswith('linear_attn.norm.weight'):
        x = x + np.float32(1)  # Qwen3.5's RMSNorm scales by (1 + w)
    return name, x


def transform_mamba2(name, x):
    d_inner = hp.get('intermediate_size') or hp.get('expand', 2) * hp['hidden_size']
    n_group = hp.get('n_groups', 1)
    if name.endswith('.dt_bias'):
        name = name[:-len('.dt_bias')] + '.dt_proj.bias'
    elif '.conv1d.weight' in name:
        x = x.reshape(x.shape[0], -1)
    elif name.endswith(('.A_log', '.D')):
        x = x.reshape(x.shape + (1,))
    elif name.endswith('.mixer.norm.weight'):
        x = x.reshape(n_group, d_inner // n_group)
    if name.endswith('.A_log'):
        x = -np.exp(x)
    return name, x


def mxfp4_to_ggml(blocks, scales):
    """HF MXFP4 [..., rows, cols/32, 16] (byte j: element 2j low nibble, 2j+1 high) and e8m0
    scales [..., rows, cols/32] -> ggml's block_mxfp4 bytes [..., rows, cols/32 * 17]: the scale
    byte, then qs[j] = element j | element j + 16 << 4."""
    b = np.asarray(blocks, dtype=np.uint8)
    codes = np.empty(b.shape[:-1] + (32,), dtype=np.uint8)
    codes[..., 0::2] = b & 0x0F
    codes[..., 1::2] = b >> 4
    qs = codes[..., :16] | (codes[..., 16:] << 4)
    out = np.concatenate([np.asarray(scales, dtype=np.uint8)[..., None], qs], axis=-1)
    return np.ascontiguousarray(out.reshape(out.shape[:-2] + (-1,)))


def gpt_oss_tensors(name, st_dtype, raw):
    """(hf-like name, array, ggml type or None) for llama.cpp's GPT_OSS names; [] to skip."""
    if name.endswith('_scales'):
        return []  # written with its blocks
    if name.endswith('_blocks'):
        scales = tensors[name[:-len('_blocks')] + '_scales'][1]
        mx = gguf.GGMLQuantizationType.MXFP4
        if 'gate_up_proj' in name:
            return [(name.replace('gate_up_proj_blocks', 'gate_proj.weight'),
                     mxfp4_to_ggml(raw[:, 0::2], scales[:, 0::2]), mx),
                    (name.replace('gate_up_proj_blocks', 'up_proj.weight'),
                     mxfp4_to_ggml(raw[:, 1::2], scales[:, 1::2]), mx)]
        return [(name.replace('down_proj_blocks', 'down_proj.weight'), mxfp4_to_ggml(raw, scales), mx)]
    x = to_f32(st_dtype, raw)
    if name.endswith('gate_up_proj_bias'):
        return [(name.replace('gate_up_proj_bias', 'gate_proj.bias'), x[..., 0::2], None),
                (name.replace('gate_up_proj_bias', 'up_proj.bias'), x[..., 1::2], None)]
    if name.endswith('down_proj_bias'):
        return [(name.replace('down_proj_bias', 'down_proj.bias'), x, None)]
    if name.endswith('.sinks'):
        return [(name + '.weight', x, None)]
    return None  # an ordinary tensor


# tensors whose values change: they are computed in f32, as llama.cpp's converter does
def needs_f32(name):
    if model_type == 'qwen3_5':
        return ('linear_attn.' in name and hp['linear_num_key_heads'] != hp['linear_num_value_heads']) \
            or name.endswith(('.A_log', 'norm.weight'))
    if model_type == 'mamba2':
        return name.endswith('.A_log')
    return False


def keep(name):
    if model_type == 'qwen3_5':
        # text part only: no vision tower, no multi-token-prediction head
        return 'visual.' not in name and not name.startswith(('mtp.', 'model.mtp.'))
    return True


tmap = gguf.get_tensor_name_map(arch, n_layer)
F32_ALWAYS = (gguf.MODEL_TENSOR.SSM_CONV1D,)


def gguf_name(name):
    new = tmap.get_name(name, try_suffixes=('.weight', '.bias'))
    if new is None:
        sys.exit(f'convert_gguf.py: cannot map tensor {name!r} for arch {gguf.MODEL_ARCH_NAMES[arch]}')
    return new


def is_kind(new_name, kind):
    base = gguf.TENSOR_NAMES[kind]
    return any(new_name.startswith(base.format(bid=b) + '.') for b in range(n_layer)) \
        if '{bid}' in base else new_name.startswith(base + '.')


out_tensors = []  # (gguf name, array, ggml type)
def layer_of(name):
    return int(name.split('layers.')[1].split('.')[0]) if 'layers.' in name else -1


for name in sorted(tensors, key=lambda n: (layer_of(n), n)):
    if not keep(name):
        continue
    st_dtype, raw = tensors[name]
    if model_type == 'gpt_oss':
        special = gpt_oss_tensors(name, st_dtype, raw)
        if special is not None:
            for hf_name, x, qtype in special:
                x = np.ascontiguousarray(x)
                out_tensors.append((gguf_name(hf_name), x,
                                    qtype if qtype is not None else gguf.GGMLQuantizationType.F32))
            continue
    hf = name.replace('language_model.', '')  # model.language_model.* -> model.*
    if needs_f32(hf) or raw.ndim <= 1 or args.outtype == 'f32' or st_dtype != 'BF16':
        x, is_raw_bf16 = to_f32(st_dtype, raw), False
    else:
        x, is_raw_bf16 = raw, True  # bf16 bits written as they are (f32 -> bf16 would give the same)
    if model_type == 'qwen3_5':
        hf, x = transform_qwen35(hf, x)
    elif model_type == 'mamba2':
        hf, x = transform_mamba2(hf, x)
    new = gguf_name(hf)
    f32 = (x.ndim <= 1 or new.endswith('_norm.weight') or not new.endswith('.weight')
           or any(is_kind(new, k) for k in F32_ALWAYS))
    if f32:
        x = to_f32('BF16', x) if is_raw_bf16 else x
        qtype = gguf.GGMLQuantizationType.F32
    elif args.outtype == 'f32':
        qtype = gguf.GGMLQuantizationType.F32
    else:
        qtype = gguf.GGMLQuantizationType.BF16
        if not is_raw_bf16:
            x = gguf.quants.quantize(np.ascontiguousarray(x, dtype=np.float32), qtype)
    out_tensors.append((new, x, qtype))


# ---- metadata --------------------------------------------------------------------------------

w = gguf.GGUFWriter(args.out, gguf.MODEL_ARCH_NAMES[arch])
w.add_type(gguf.GGUFType.MODEL)
w.add_name(ckpt.resolve().name)
ftype = gguf.LlamaFileType.ALL_F32 if args.outtype == 'f32' else gguf.LlamaFileType.MOSTLY_BF16

if model_type in ('qwen3', 'qwen3_5'):
    rope = hp.get('rope_parameters') or hp.get('rope_scaling') or {}
    w.add_block_count(n_layer)
    w.add_context_length(hp['max_position_embeddings'])
    w.add_embedding_length(hp['hidden_size'])
    w.add_feed_forward_length(hp['intermediate_size'])
    w.add_head_count(hp['num_attention_heads'])
    w.add_head_count_kv(hp['num_key_value_heads'])
    if rope.get('rope_type', rope.get('type')) not in (None, 'default'):
        sys.exit(f'convert_gguf.py: rope scaling {rope} is not handled')
    w.add_rope_freq_base(rope.get('rope_theta', hp.get('rope_theta')))
    w.add_layer_norm_rms_eps(hp['rms_norm_eps'])
    head_dim = hp.get('head_dim') or hp['hidden_size'] // hp['num_attention_heads']
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    if model_type == 'qwen3_5':
        # llama.cpp's qwen35 always runs interleaved M-RoPE; a text prompt puts the same position
        # on all sections, which makes it the ordinary rotation of the first rope dims.
        sections = list(rope.get('mrope_section', [11, 11, 10]))
        w.add_rope_dimension_sections((sections + [0, 0, 0, 0])[:4])
        partial = rope.get('partial_rotary_factor', hp.get('partial_rotary_factor', 0.25))
        w.add_rope_dimension_count(int(head_dim * partial))
        w.add_ssm_conv_kernel(hp['linear_conv_kernel_dim'])
        w.add_ssm_state_size(hp['linear_key_head_dim'])
        w.add_ssm_group_count(hp['linear_num_key_heads'])
        w.add_ssm_time_step_rank(hp['linear_num_value_heads'])
        w.add_ssm_inner_size(hp['linear_value_head_dim'] * hp['linear_num_value_heads'])
        w.add_full_attention_interval(hp.get('full_attention_interval', 4))
        if 'layer_types' in hp:
            want = [t != 'full_attention' for t in hp['layer_types']]
            got = [(i + 1) % hp.get('full_attention_interval', 4) != 0 for i in range(n_layer)]
            if want != got:
                sys.exit('convert_gguf.py: layer_types is not every full_attention_interval-th layer')
elif model_type == 'gpt_oss':
    rope = hp.get('rope_scaling') or {}
    w.add_block_count(n_layer)
    w.add_context_length(hp['max_position_embeddings'])
    w.add_embedding_length(hp['hidden_size'])
    w.add_feed_forward_length(hp['intermediate_size'])
    w.add_head_count(hp['num_attention_heads'])
    w.add_head_count_kv(hp['num_key_value_heads'])
    w.add_rope_freq_base(hp['rope_theta'])
    if rope.get('rope_type') == 'yarn':
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(rope['factor'])
        w.add_rope_scaling_orig_ctx_len(rope['original_max_position_embeddings'])
        w.add_rope_scaling_yarn_beta_fast(rope.get('beta_fast', 32.0))
        w.add_rope_scaling_yarn_beta_slow(rope.get('beta_slow', 1.0))
    w.add_layer_norm_rms_eps(hp['rms_norm_eps'])
    w.add_expert_count(hp['num_local_experts'])
    w.add_expert_used_count(hp['num_experts_per_tok'])
    w.add_key_length(hp['head_dim'])
    w.add_value_length(hp['head_dim'])
    w.add_sliding_window(hp['sliding_window'])
    w.add_expert_feed_forward_length(hp['intermediate_size'])
    if [t == 'sliding_attention' for t in hp['layer_types']] != [i % 2 == 0 for i in range(n_layer)]:
        sys.exit('convert_gguf.py: gpt_oss layer_types must alternate sliding, full (llama.cpp\'s period 2)')
elif model_type == 'mamba2':
    d_model = hp['hidden_size']
    d_inner = hp.get('intermediate_size') or hp.get('expand', 2) * d_model
    head_dim = hp.get('head_dim', 64)
    w.add_context_length(2 ** 20)  # llama.cpp's converter writes this arbitrary value
    w.add_embedding_length(d_model)
    w.add_feed_forward_length(0)
    w.add_head_count(0)
    w.add_block_count(n_layer)
    w.add_ssm_conv_kernel(hp.get('conv_kernel', 4))
    w.add_ssm_inner_size(d_inner)
    w.add_ssm_state_size(hp.get('state_size', 128))
    w.add_ssm_time_step_rank(d_inner // head_dim)
    w.add_ssm_group_count(hp.get('n_groups', 1))
    w.add_layer_norm_rms_eps(hp.get('layer_norm_epsilon', 1e-5))
w.add_file_type(ftype)

# ---- vocabulary ------------------------------------------------------------------------------

tok = json.load(open(ckpt / 'tokenizer.json'))
if tok['model']['type'] != 'BPE':
    sys.exit('convert_gguf.py: only byte-level BPE tokenizers are handled')
embd = next(x for n, x, _ in out_tensors if n == 'token_embd.weight')
n_vocab = embd.shape[0]
tokens, types, _ = token_list(tok, n_vocab, gguf)


def pretokenizer_name():
    """llama.cpp picks the pre-tokenizer by a hash of the real tokenizer; ours is a small
    stand-in, so pick by its split regex (the Qwen ones; llama.cpp's 'default' otherwise)."""
    pre = json.dumps(tok.get('pre_tokenizer'))
    if '\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}' in pre:
        return 'gpt-4o'  # o200k (gpt-oss)
    if "(?i:'s|'t|'re|'ve|'m|'ll|'d)" in pre:
        return 'qwen35' if '\\\\p{M}' in pre else 'qwen2'
    return 'default'


w.add_tokenizer_model('gpt2')
w.add_tokenizer_pre(pretokenizer_name())
w.add_token_list(tokens)
w.add_token_types(types)
# merges, bos/eos/pad ids, add_bos_token and the chat template, as llama.cpp's converter reads them
special = gguf.SpecialVocab(ckpt, load_merges=True, n_vocab=n_vocab)
special.add_to_gguf(w)

# ---- tensors ---------------------------------------------------------------------------------

for name, x, qtype in out_tensors:
    w.add_tensor(name, x, raw_dtype=qtype)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file(progress=False)
w.close()
n_real = len(tok['model']['vocab']) + len(tok.get('added_tokens', []))
print(f'{args.out}: {gguf.MODEL_ARCH_NAMES[arch]}, {len(out_tensors)} tensors, '
      f'vocab {n_vocab} ({n_real} real), {args.outtype}')
