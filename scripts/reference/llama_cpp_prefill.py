"""The local judge's reference ratio (BENCHMARKS.md "Local judge"): the same 128-token
prefill and a binary exam prompt's next-token read through llama.cpp (llama-cpp-python,
built with -DGGML_NATIVE=OFF and AMX off: the native build faults on this VM), timed the
same way as node/benches/local_judge.rs.

usage: python3 scripts/reference/llama_cpp_prefill.py MODEL.gguf [threads]
"""
import sys, time, statistics
from llama_cpp import Llama

path = sys.argv[1]
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
t = time.time()
llm = Llama(model_path=path, n_ctx=2048, n_threads=threads, n_batch=512, logits_all=False, verbose=False)
load = time.time() - t
text = ("The committee reviewed the evidence on bus lanes, commute times and air "
        "quality in three cities over five years. ") * 8
ids = llm.tokenize(text.encode(), add_bos=True)[:128]
runs = []
for _ in range(5):
    llm.reset()
    t = time.time()
    llm.eval(ids)
    runs.append(time.time() - t)
prefill = statistics.median(runs)
print(f"llama.cpp {path.split('/')[-1]}: load {load:.1f} s, prefill {len(ids)} tokens median "
      f"{prefill*1000:.0f} ms = {len(ids)/prefill:.0f} tok/s, threads {threads}")
