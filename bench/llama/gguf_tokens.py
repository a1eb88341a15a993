# The token list of a GGUF from a Hugging Face tokenizer.json (byte-level BPE): ids from its vocab
# and added tokens, every id no token names filled with an "[PAD{i}]" UNUSED placeholder up to
# n_vocab (the embedding's rows), so llama.cpp's loader finds one token per row. Shared by
# convert_gguf.py and bench/grammar/llama/vocab_gguf.py.


def token_list(tok, n_vocab, gguf):
    """(tokens, token types, merges) of tokenizer.json `tok` for a vocabulary of n_vocab rows."""
    tokens = [''] * n_vocab
    types = [gguf.TokenType.UNUSED] * n_vocab
    for t, i in tok['model']['vocab'].items():
        tokens[i] = t
        types[i] = gguf.TokenType.NORMAL
    for a in tok.get('added_tokens', []):
        tokens[a['id']] = a['content']
        types[a['id']] = gguf.TokenType.CONTROL if a['special'] else gguf.TokenType.USER_DEFINED
    for i in range(n_vocab):
        if tokens[i] == '':
            tokens[i] = f'[PAD{i}]'
    merges = [m if isinstance(m, str) else ' '.join(m) for m in tok['model'].get('merges', [])]
    return tokens, types, merges
