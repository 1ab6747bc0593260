#!/bin/bash
# On the GPU machine, after measure.sh, while it is still warm (it goes back after about
# 30 s idle, so call at once): go on writing the offloaded document stages on the servers
# measure.sh left running, for at most SECONDS, then pack every journal, finished or not,
# into OUT/journals-more.tar.xz (llm_stage_offload.py write resumes each from its journal).
# usage: more.sh OUT SECONDS   (CONC: the requests in flight; PORT: the first server's port)
cd "$(dirname "$0")/../.."
OUT=$1; PORT=${PORT:-8080}
n=$(pgrep -c -f "[l]lama-server -m /tmp/gpu/model.gguf")
[ "$n" -gt 0 ] || { echo "no server of /tmp/gpu/model.gguf is running"; exit 1; }
SPEC=""
for port in $(seq $PORT $((PORT + n - 1))); do
    SPEC+="${SPEC:+,}openai:qwen2.5-0.5b@http://127.0.0.1:$port/v1"
done
[ "$n" -gt 1 ] && SPEC="pool:$SPEC"
echo "$n server(s): $SPEC"
timeout "$2" python3 benchmarks/llm_stage_offload.py write --jobs /tmp/gpu/jobs \
    --journals /tmp/gpu/journals --llm "$SPEC" --concurrency "${CONC:-256}"
wc -l /tmp/gpu/journals/*.journal.jsonl
tar -C /tmp/gpu/journals -cJf "$OUT/journals-more.tar.xz" .
ls -l "$OUT"
