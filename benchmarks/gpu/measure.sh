#!/bin/bash
# On the GPU machine, the last call (benchmarks/gpu/pack.sh says the order), within SECONDS:
#   1. llama-server in several arms, plain HTTP clients posting dptext's requests
#      (bench_llm_server.py --compare-docs 0): its defaults (sampling on the CPU); top-k
#      moved before DRY on the GPU (--backend-sampling --samplers ...: the CPU's samplers
#      see 40 candidates, not the 151,936 logits; x1.57 on the first lease, where
#      --backend-sampling alone gave x1.22 and dropping DRY a further x1.08); and the same
#      without the server's prompt cache (--cache-ram 0): after each request it launches,
#      the server offers every idle slot to that cache, comparing it with every cached
#      prompt (llama.cpp's source), the suspect for the per-request bound seen there
#      (x1.28 at most on the third lease, within the passes' spread: not the bound); and
#      the -x4 arms: four servers of a quarter of the slots each on the same GPU, measured
#      as one (the clients in turn, dptext through a pool:): x2.28 on the fourth lease, so
#      the bound is per server process (the scheduler's re-reservations, counted in the
#      servers' logs there, took about 1 % of the time: not the bound). SWEEP_DOCS
#      requests per client (default 1: one wave of CONC requests; 3 or more: a stream, each
#      request starting as another ends, as in a run, which ran at half the wave's rate);
#   2. dptext's stage against the runtime on the fastest arm (bench_llm_server.py);
#   3. the offloaded document stages of .gpu/jobs.tar.xz (llm_stage_offload.py write) on the
#      fastest arm (several servers: a pool: journaling under the jobs' identity) until 40 s
#      before the end; the finished cells' journals packed per seed,
#      the unfinished one's apart. BATCHED=1 first runs llama-batched-bench (the GPU's
#      ceiling without HTTP or sampling).
# usage: measure.sh OUT SECONDS   (NP, CTX, CONC, MAX_TOKENS: the slots and context over all
# servers, the requests in flight, the documents' length; SERVER_ARGS: their other flags;
# the defaults fit a 0.5B model on one large GPU;
# ONLY_ARMS="NAME ...": those arms only; SWEEP_DOCS: requests per client in an arm;
# ARM_S, COMPARE_S: seconds per arm and for the
# comparison, COMPARE_S=0 skips it; PORT: the first server's port, 8080 as the jobs' --llm
# names it; the script kills only servers of its own model file)
set -u
cd "$(dirname "$0")/../.."
OUT=$1; BUDGET=${2:-480}; T0=$SECONDS; export PYTHONUNBUFFERED=1
R=$OUT/measured  # everything but the journals, packed into OUT/measured.tar.xz at the end
left() { echo $((BUDGET - (SECONDS - T0))); }
until_() { local t=$(( $(left) - $1 )); [ $t -lt 5 ] && t=5; echo $t; }  # SECONDS - $1 - spent
cap() { local t=$(until_ $1); [ $t -gt $2 ] && t=$2; echo $t; }         # and at most $2
mkdir -p "$R" /tmp/gpu/jobs
mv .gpu/part.* /tmp/gpu/parts/ 2>/dev/null
[ -f .gpu/jobs.tar.xz ] && python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" .gpu/jobs.tar.xz /tmp/gpu/jobs
while [ ! -f /tmp/gpu/built ] && [ "$(left)" -gt 300 ]; do sleep 2; done
cat /tmp/gpu/built 2>/dev/null || { tail -40 /tmp/gpu/build.log > "$OUT/build.log"; exit 1; }
B=/tmp/gpu/src/llama.cpp/build/bin; M=/tmp/gpu/model.gguf
cat /tmp/gpu/parts/part.* > $M
echo "$(cat .gpu/model.sha256)  $M" | sha256sum -c - || exit 1
if [ "${BATCHED:-0}" = 1 ]; then
    timeout 100 $B/llama-batched-bench -m $M -ngl 99 -c 131072 -b 2048 -ub 512 -npp 128 \
        -ntg 256 -npl 16,64,128,256 > "$R/batched-bench.txt" 2>&1
    grep '^|' "$R/batched-bench.txt"
fi
NP=${NP:-256}; CTX=${CTX:-262144}; SERVER_ARGS=${SERVER_ARGS:--ngl 99}; PORT=${PORT:-8080}
CONC=${CONC:-256}; MAX_TOKENS=${MAX_TOKENS:-32}
healthy() { python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$1/health', timeout=5)" 2>/dev/null; }
serve() {  # serve NAME N FLAGS...: N llama-servers on the GPU (ports PORT, PORT+1, ...) of
    # NP/N slots and CTX/N context each, with extra FLAGS, each in a session of its own;
    # sets URLS (for bench_llm_server.py) and SPEC (dptext's --llm: a pool: of several)
    local name=$1 n=$2 port; shift 2
    # SIGKILL: a server told to stop waits for its open connections, and one still bound to
    # the port would share the next arm's requests
    pkill -9 -f -- "-m $M " ; sleep 2
    URLS=""; SPEC=""
    for port in $(seq $PORT $((PORT + n - 1))); do
        setsid nohup $B/llama-server -m $M $SERVER_ARGS -np $((NP / n)) -c $((CTX / n)) \
            --host 127.0.0.1 --port $port "$@" > "/tmp/gpu/server-$name-$port.log" 2>&1 < /dev/null &
        disown  # no job notice when the next arm kills it
        URLS+="${URLS:+,}http://127.0.0.1:$port/v1"
        SPEC+="${SPEC:+,}openai:qwen2.5-0.5b@http://127.0.0.1:$port/v1"
    done
    [ "$n" -gt 1 ] && SPEC="pool:$SPEC"
    for port in $(seq $PORT $((PORT + n - 1))); do
        for _ in $(seq 120); do healthy $port && continue 2; sleep 1; done; return 1
    done
}
described() { echo "$1 × llama-server $SERVER_ARGS -np $((NP / $1)) -c $((CTX / $1)) $2"; }
TOPK_FIRST="penalties;top_k;dry;top_p;min_p;temperature"
bench() {  # bench() NAME N SERVER-FLAGS [bench_llm_server.py arguments]: one measured arm,
    # twice at CONC, the better counting (on the second lease the second pass was slower)
    local name=$1 n=$2 flags=$3; shift 3
    timeout $(cap 200 ${ARM_S:-90}) python3 benchmarks/bench_llm_server.py --url $URLS --model qwen2.5-0.5b \
        --concurrency $CONC $CONC --max-tokens $MAX_TOKENS --sweep-docs ${SWEEP_DOCS:-1} --commit "$(cat .gpu/commit)" \
        --server "$(described $n "$flags")" --out "$R/$name.json" "$@" | grep -v '^|'
}
rate() { python3 -c "import json, sys; print(int(max(r['tok_s'] for r in json.load(open(sys.argv[1]))['sweep'])))" \
    "$1" 2>/dev/null || echo 0; }
best=""; best_n=1; best_rate=0
# NAME|SERVERS|FLAGS; the -x4 arms: four servers of a quarter of the slots each on the same
# GPU, each with its own HTTP thread, CPU samplers and scheduler (is the bound per process?);
# -x8: eight of an eighth (does it go on scaling?)
ARMS=("defaults|1|" "topk-first|1|--backend-sampling --samplers $TOPK_FIRST"
      "topk-first-no-prompt-cache|1|--backend-sampling --samplers $TOPK_FIRST --cache-ram 0"
      "topk-first-x4|4|--backend-sampling --samplers $TOPK_FIRST" "defaults-x4|4|"
      "topk-first-x8|8|--backend-sampling --samplers $TOPK_FIRST")
for arm in "${ARMS[@]}"; do
    IFS='|' read -r name n flags <<< "$arm"
    [[ " ${ONLY_ARMS:-$name} " == *" $name "* ]] || continue
    serve $name $n $flags || { echo "$name: the servers did not start"; continue; }
    bench "arm-$name" $n "$flags" --compare-docs 0
    r=$(rate "$R/arm-$name.json"); echo "$name: $r tokens/s"
    [ "$r" -gt "$best_rate" ] && { best=$flags; best_n=$n; best_rate=$r; }
done
if [ "$best_rate" -gt 0 ] && [ "${COMPARE_S:-180}" -gt 0 ]; then
    serve compare $best_n $best && ARM_S=${COMPARE_S:-180} bench server $best_n "$best" --compare-docs 1 \
        | grep 'dptext / runtime'
fi
if [ "$best_rate" -gt 0 ] && [ -n "$(ls /tmp/gpu/jobs)" ]; then
    # fresh servers, not the comparison's: the server slowed as it ran (second lease)
    serve offload $best_n $best && echo "offload on: $(described $best_n "$best")" | tee "$R/offload-server.txt"
    echo "$SPEC" > /tmp/gpu/offload-spec  # the --llm of these servers, for more.sh
    # several servers: a pool: that journals under the jobs' own (one-server) identity
    timeout $(until_ 40) python3 benchmarks/llm_stage_offload.py write --jobs /tmp/gpu/jobs \
        --journals /tmp/gpu/journals --llm "$SPEC" --concurrency $CONC
    python3 - "$OUT" <<'PY'
import glob, os, sys, tarfile
def pack(name, paths):
    if paths:
        with tarfile.open(f"{sys.argv[1]}/{name}.tar.xz", "w:xz", preset=1) as t:
            for path in paths:
                t.add(path, os.path.basename(path))
for seed in range(3):  # a cell is finished when its stats are written
    done = sorted(glob.glob(f"/tmp/gpu/journals/*-s{seed}.stats.json"))
    pack(f"journals-s{seed}", [p for s in done for p in (s, s[:-len(".stats.json")] + ".journal.jsonl")])
pack("journals-unfinished", [j for j in glob.glob("/tmp/gpu/journals/*.journal.jsonl")
                             if not os.path.exists(j[:-len(".journal.jsonl")] + ".stats.json")])
PY
fi
tar -C "$OUT" -cJf "$OUT/measured.tar.xz" measured && rm -r "$R"
ls -l "$OUT"; echo "measure.sh took $((SECONDS - T0)) s"
