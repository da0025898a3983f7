#!/usr/bin/env bash
# The from-scratch comparison with equal care (issue 45), prepared for a lent GPU: the tiny shape with the MLM
# stage long enough for both models to pass the held-out gate (8,000 steps), each model's initial temperature chosen
# on validation branches among the same three candidates, three seeds. The Trainer trains on the GPU it finds; the
# held-out scoring runs where the encoders are. Not yet run on a GPU (none was lent when it was written): time it
# with a first seed before trusting the whole.
#
#   bash benchmarks/gpu_from_scratch.sh [OUTPUT_DIR]     # default: $OUT where the device machine sets it, else runs/
set -euo pipefail
out="${1:-${OUT:-runs}}"
mkdir -p "$out"
python -c "import torch; assert torch.cuda.is_available(), 'no CUDA device: this script is for a lent GPU'"
python benchmarks/run_from_scratch.py --mlm-steps 8000 --temperatures 0.02 0.05 0.1 --seeds 0 1 2 --bf16 \
    --runs-dir "$out/from-scratch" --output "$out/from_scratch_equal_care.json"
