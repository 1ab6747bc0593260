#!/bin/bash
# On the GPU machine, first call (benchmarks/gpu/pack.sh says the order): unpack llama.cpp and
# build its server with CUDA in the background, in a session of its own so that it outlives
# the call. Flash attention is left out: it halves the build (about 3 minutes on 16 cores).
# Here, for the CPU server that finishes a cell the lease cut off: GGML_CUDA=OFF (about 8
# minutes on 2 cores; it moves .gpu/part.* to /tmp/gpu/parts). Where the native build dies
# with "Illegal instruction" after loading the model (here, a VM whose CPU lists AMX and
# AVX512-FP16; which instruction was not pinned down), build for a fixed set instead:
# CMAKE_EXTRA="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON".
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc
nvcc --version | tail -1; cmake --version | head -1; python3 --version
mkdir -p /tmp/gpu/parts /tmp/gpu/src
mv .gpu/part.* /tmp/gpu/parts/ 2>/dev/null  # the first part may come with the source
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
    .gpu/llama-src.tar.xz /tmp/gpu/src || exit 1
cd /tmp/gpu/src/llama.cpp
setsid nohup bash -c 'cmake -B build -DGGML_CUDA=${GGML_CUDA:-ON} -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS:-native} \
  -DGGML_CUDA_NCCL=OFF -DGGML_CUDA_FA=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DCMAKE_BUILD_TYPE=Release ${CMAKE_EXTRA:-} > /tmp/gpu/cfg.log 2>&1 \
  && cmake --build build -j "$(nproc)" --target llama-server llama-batched-bench \
  > /tmp/gpu/build.log 2>&1; echo "build rc=$? at $(date +%T)" > /tmp/gpu/built' \
  > /dev/null 2>&1 < /dev/null &
sleep 10; tail -2 /tmp/gpu/cfg.log
