#!/bin/bash
# On the GPU machine, once per model part carried: keep it outside the tree; show the build.
cd "$(dirname "$0")/../.."
mkdir -p /tmp/gpu/parts
mv .gpu/part.* /tmp/gpu/parts/ 2>/dev/null; ls /tmp/gpu/parts | tr '\n' ' '; echo
cat /tmp/gpu/built 2>/dev/null || tail -1 /tmp/gpu/build.log | cut -c1-160
