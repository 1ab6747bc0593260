#!/bin/bash
# On the GPU machine, the last call (benchmarks/gpu/pack.sh says the order), within SECONDS:
#   1. llama.cpp's batched decoding of the model without HTTP or sampling (the GPU's ceiling);
#   2. llama-server in two arms, sampling on the CPU (its default) and on the GPU
#      (--backend-sampling), each measured by bench_llm_server.py (runtime vs dptext);
#   3. the offloaded document stages of .gpu/jobs.tar.xz (llm_stage_offload.py write) on the
#      faster arm until 40 s before the end; the finished cells' journals packed per seed.
# usage: measure.sh OUT SECONDS   (SERVER_ARGS, CONC: the server's size and the requests in
# flight; the defaults fit a 0.5B model on one large GPU)
set -u
cd "$(dirname "$0")/../.."
OUT=$1; BUDGET=${2:-480}; T0=$SECONDS; export PYTHONUNBUFFERED=1
left() { echo $((BUDGET - (SECONDS - T0))); }
until_() { local t=$(( $(left) - $1 )); [ $t -lt 5 ] && t=5; echo $t; }
mkdir -p "$OUT" /tmp/gpu/jobs
mv .gpu/part.* /tmp/gpu/parts/ 2>/dev/null
[ -f .gpu/jobs.tar.xz ] && python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" .gpu/jobs.tar.xz /tmp/gpu/jobs
while [ ! -f /tmp/gpu/built ] && [ "$(left)" -gt 300 ]; do sleep 2; done
cat /tmp/gpu/built 2>/dev/null || { tail -40 /tmp/gpu/build.log > "$OUT/build.log"; exit 1; }
B=/tmp/gpu/src/llama.cpp/build/bin; M=/tmp/gpu/model.gguf
cat /tmp/gpu/parts/part.* > $M
echo "$(cat .gpu/model.sha256)  $M" | sha256sum -c - || exit 1
timeout 100 $B/llama-batched-bench -m $M -ngl 99 -c 131072 -b 2048 -ub 512 -npp 128 -ntg 256 \
    -npl 16,64,128,256 > "$OUT/batched-bench.txt" 2>&1
grep '^|' "$OUT/batched-bench.txt"
URL=http://127.0.0.1:8080/v1; SERVER_ARGS=${SERVER_ARGS:--ngl 99 -np 256 -c 262144}; CONC=${CONC:-128}
health() { python3 -c "import urllib.request as u; u.urlopen('$URL'[:-3] + '/health', timeout=5)" 2>/dev/null; }
serve() {  # llama-server with extra flags "$@", in a session of its own
    pkill -f llama-server; sleep 2
    setsid nohup $B/llama-server -m $M $SERVER_ARGS --host 127.0.0.1 --port 8080 \
        "$@" > "/tmp/gpu/server$*.log" 2>&1 < /dev/null &
    for _ in $(seq 120); do health && return 0; sleep 1; done; return 1
}
best=(); best_rate=0
for flags in "" "--backend-sampling"; do
    arm=${flags:-cpu-sampling}; arm=${arm#--}
    serve $flags || { echo "$arm: the server did not start"; continue; }
    timeout $(until_ 150) python3 benchmarks/bench_llm_server.py --url $URL --model qwen2.5-0.5b \
        --concurrency $CONC --max-tokens 64 --sweep-docs 1 --compare-docs 1 --commit "$(cat .gpu/commit)" \
        --server "llama-server $SERVER_ARGS $flags (CUDA, no flash attention)" \
        --out "$OUT/server-$arm.json" | grep 'dptext / runtime'
    rate=$(python3 -c "import json, sys; print(int(json.load(open(sys.argv[1]))['compare'][1]['tok_s']))" \
        "$OUT/server-$arm.json" 2>/dev/null || echo 0)
    echo "$arm: dptext at $rate tokens/s"
    [ "$rate" -gt "$best_rate" ] && { best=($flags); best_rate=$rate; }
done
if [ "$best_rate" -gt 0 ] && [ -n "$(ls /tmp/gpu/jobs)" ]; then
    serve "${best[@]}" && echo "offload on: llama-server ${best[*]}" | tee "$OUT/offload-server.txt"
    timeout $(until_ 40) python3 benchmarks/llm_stage_offload.py write --jobs /tmp/gpu/jobs \
        --journals /tmp/gpu/journals --llm openai:qwen2.5-0.5b@$URL --concurrency $((2 * CONC))
    python3 - "$OUT" <<'PY'
import glob, os, sys, tarfile
for seed in range(3):  # a cell is finished when its stats are written
    done = sorted(glob.glob(f"/tmp/gpu/journals/*-s{seed}.stats.json"))
    if done:
        with tarfile.open(f"{sys.argv[1]}/journals-s{seed}.tar.xz", "w:xz", preset=1) as t:
            for stats in done:
                for path in (stats, stats.replace(".stats.json", ".journal.jsonl")):
                    t.add(path, os.path.basename(path))
PY
fi
ls -l "$OUT"; echo "measure.sh took $((SECONDS - T0)) s"
