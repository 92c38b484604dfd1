"""Reference token ids for the local judge's tokenizers (testvectors/lm/).

Gemma 3 (`llama` = SentencePiece BPE): the `sentencepiece` library, fed a model built from
the GGUF's own pieces, scores and types (BPE, byte fallback, no dummy prefix, whitespace
kept). Qwen2.5 (`gpt2` BPE): `tiktoken`, built from the GGUF's tokens as byte-level ranks with
Qwen2's split pattern. Both are independent
of the Rust code under test (lm/src/tokenizer/).

usage: python3 scripts/reference/lm_tokens.py GEMMA.gguf QWEN.gguf OUT_DIR
"""
import json, sys, os
from gguf import GGUFReader
from sentencepiece import sentencepiece_model_pb2 as pb
import sentencepiece as spm

def texts():
    out = [
        "Yes", " Yes", "No", " No", "Answer: Yes", "Hello world!",
        "The quick brown fox jumps over the lazy dog.",
        "  two leading spaces and  double  spaces", "tabs\tand\nnewlines\n\nparagraphs",
        "Numbers 1234567 and 3.14159, dates 2026-12-04.", "naïve café — “quotes” … ünïcödé",
        "日本語のテキスト", "emoji 🙂 and symbols ∑∫√", "<html><body>tags</body></html>",
        "Side A holds that the policy reduced emissions by 12% (source: a 2019 meta-analysis).",
        "", " ", "\n", "a" * 40, "multiple   spaces\n   indented",
    ]
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "exams", "default-v2.jsonl")) as f:
        for i, line in enumerate(f):
            item = json.loads(line)
            if "motion" in item and i % 3 == 1:
                out.append(item["motion"])
    return out

def gemma_model(path):
    r = GGUFReader(path)
    toks = r.fields["tokenizer.ggml.tokens"].contents()
    scores = r.fields["tokenizer.ggml.scores"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    m = pb.ModelProto()
    kinds = {1: pb.ModelProto.SentencePiece.NORMAL, 2: pb.ModelProto.SentencePiece.UNKNOWN,
             3: pb.ModelProto.SentencePiece.CONTROL, 4: pb.ModelProto.SentencePiece.USER_DEFINED,
             5: pb.ModelProto.SentencePiece.UNUSED, 6: pb.ModelProto.SentencePiece.BYTE}
    for t, s, k in zip(toks, scores, types):
        p = m.pieces.add(); p.piece = t; p.score = s; p.type = kinds[k]
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.byte_fallback = True
    m.trainer_spec.vocab_size = len(toks)
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = False
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = True
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(m.SerializeToString())
    return sp

def byte_table():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return {chr(c): b for b, c in zip(bs, cs)}

def qwen_encoding(path):
    import tiktoken
    r = GGUFReader(path)
    toks = r.fields["tokenizer.ggml.tokens"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    table = byte_table()
    ranks, special = {}, {}
    for i, (t, k) in enumerate(zip(toks, types)):
        if k == 1:
            ranks[bytes(table[c] for c in t)] = i
        else:
            special[t] = i
    pat = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
    return tiktoken.Encoding("qwen2", pat_str=pat, mergeable_ranks=ranks, special_tokens=special)

def main():
    gemma, qwen, out = sys.argv[1:4]
    ts = texts()
    sp = gemma_model(gemma)
    g = [{"text": t, "ids": sp.encode(t)} for t in ts]
    json.dump({"tokenizer": "gemma3 (sentencepiece library, BPE from GGUF pieces)", "add_bos": False,
               "cases": g}, open(os.path.join(out, "gemma3-tokens.json"), "w"), ensure_ascii=False, indent=0)
    enc = qwen_encoding(qwen)
    ts = ts + ["<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"]
    q = [{"text": t, "ids": enc.encode(t, allowed_special="all")} for t in ts]
    json.dump({"tokenizer": "qwen2 (tiktoken from GGUF ranks)", "add_bos": False, "cases": q},
              open(os.path.join(out, "qwen2-tokens.json"), "w"), ensure_ascii=False, indent=0)

main()
