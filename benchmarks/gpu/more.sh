#!/bin/bash
# On the GPU machine, after measure.sh, while it is still warm (it goes back after about
# 30 s idle, so call at once): go on writing the offloaded document stages on the servers
# measure.sh left running, for at most SECONDS, then pack every journal, finished or not,
# into OUT/journals-more.tar.xz (llm_stage_offload.py write resumes each from its journal).
# usage: more.sh OUT SECONDS   (CONC: the requests in flight)
cd "$(dirname "$0")/../.."
OUT=$1
SPEC=$(cat /tmp/gpu/offload-spec 2>/dev/null) || { echo "measure.sh started no offload servers"; exit 1; }
echo "writing on $SPEC"
timeout "$2" python3 benchmarks/llm_stage_offload.py write --jobs /tmp/gpu/jobs \
    --journals /tmp/gpu/journals --llm "$SPEC" --concurrency "${CONC:-256}"
wc -l /tmp/gpu/journals/*.journal.jsonl
tar -C /tmp/gpu/journals -cJf "$OUT/journals-more.tar.xz" .
ls -l "$OUT"
