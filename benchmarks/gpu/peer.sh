#!/bin/bash
# On the GPU machine: InvisibleInk's cells packed in .gpu/peer (benchmarks/peers/
# invisibleink_offload.py pack) written by WORKERS runner processes sharing the GPU, within
# SECONDS; OUT/peer.tar.xz holds every unit's output, statistics and log (no private text),
# finished or not, OUT/gpu.txt the GPU's load every 30 s. The run goes on in a session of its
# own: a second call on the still-warm machine (at once: it goes back after about 30 s idle)
# waits for it and packs again. Calls before this one carry the model's parts (part.sh, as
# pack.sh says); this one carries the last part, .gpu/model.sha256, .gpu/peer (its private
# inputs xz-compressed to fit: xz .gpu/peer/*.jsonl) and .gpu/whl
# (the wheels of invink==0.1.0 and gguf, which that machine lacks: pip download --no-deps).
# usage: peer.sh OUT SECONDS   (WORKERS: runner processes, default 14 of its 16 cores;
# MPS=1: start CUDA's multi-process service first, so that the processes' kernels share the
# GPU instead of taking turns: not yet tried on a lease)
# A later lease resumes the units of an earlier one: carry its peer.tar.xz as
# .gpu/peer/shards.tar.xz (the runner skips what a unit has written).
# Back here: unpack peer.tar.xz and run invisibleink_offload.py land, then
# bench_whole_documents.py --methods invisibleink for the cells; invisibleink_offload.py
# throughput --results benchmarks/results/NAME --shards UNPACKED --gpu-logs OUT1/gpu.txt
# OUT2/gpu.txt --record keeps and reports the lease's documents per second.
set -u
cd "$(dirname "$0")/../.."
OUT=$1; BUDGET=$2; T0=$SECONDS; export PYTHONUNBUFFERED=1
left() { echo $((BUDGET - (SECONDS - T0))); }
mkdir -p /tmp/gpu/parts /tmp/gpu/peer
mv .gpu/part.* /tmp/gpu/parts/ 2>/dev/null
H=/tmp/gpu/hf/qwen2.5-0.5b  # the runner records the folder's name: the benchmark's alias
if [ ! -f /tmp/gpu/peer.pid ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --target /tmp/site .gpu/whl/*.whl || exit 1
    cp -r .gpu/peer /tmp/gpu/peer-plan  # the plan and the private inputs, outside the tree
    xz -d /tmp/gpu/peer-plan/*.xz 2>/dev/null
    if [ -f /tmp/gpu/peer-plan/shards.tar ]; then
        tar -C /tmp/gpu/peer -xf /tmp/gpu/peer-plan/shards.tar || exit 1
    fi
    if [ "${MPS:-0}" = 1 ] && nvidia-cuda-mps-control -d; then  # kept only if CUDA works
        if python3 -c "import torch; torch.zeros(1, device='cuda').sum().item()"; then
            echo "MPS started"
        else
            echo quit | nvidia-cuda-mps-control; echo "MPS left off: CUDA failed under it"
        fi
    fi
    M=/tmp/gpu/model.gguf; cat /tmp/gpu/parts/part.* > $M
    echo "$(cat .gpu/model.sha256)  $M" | sha256sum -c - || exit 1
    # convert_gguf by its file: importing dptext.generators.dpft would pull in Opacus and
    # OpenDP, which this machine lacks; model.py itself needs only transformers and gguf
    PYTHONPATH=/tmp/site:src python3 -c "
import importlib.util, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location('model', 'src/dptext/generators/dpft/model.py')
model = importlib.util.module_from_spec(spec); spec.loader.exec_module(model)
model.convert_gguf(Path(sys.argv[1]), Path(sys.argv[2]))" $M $H || exit 1
    PYTHONPATH=/tmp/site setsid nohup python3 benchmarks/peers/invisibleink_offload.py run \
        --plan /tmp/gpu/peer-plan --model-dir $H --work /tmp/gpu/peer \
        --workers "${WORKERS:-14}" > /tmp/gpu/peer.log 2>&1 < /dev/null &
    echo $! > /tmp/gpu/peer.pid
    echo "converted and started after $((SECONDS - T0)) s"
fi
n=0
while kill -0 "$(cat /tmp/gpu/peer.pid)" 2>/dev/null && [ "$(left)" -gt 25 ]; do
    if [ $((n % 6)) = 0 ]; then
        echo "$((SECONDS - T0)) s: $(cat /tmp/gpu/peer/*/*.jsonl 2>/dev/null | wc -l) documents;" \
            "$(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader)" | tee -a "$OUT/gpu.txt"
    fi
    n=$((n + 1)); sleep 5
done
tail -5 /tmp/gpu/peer.log
tar -C /tmp/gpu/peer -cJf "$OUT/peer.tar.xz" . && cp /tmp/gpu/peer.log "$OUT/"
ls -l "$OUT"
