#!/usr/bin/env bash
# bundle.sh BIN_DIR OUT.tar.xz - the built binaries (and the CUDA module) with
# every shared library they need beyond glibc, libstdc++ and CUDA's own, in
# one archive, for a GPU node that lacks Debian's HDF5, FFTW, spdlog and the
# rest. There: tar -xJf OUT.tar.xz -C DIR; export LD_LIBRARY_PATH=DIR/nk/lib:
# (CUDA's lib folder); bash tests/bench/cuda_all.sh DIR/nk/bin.
set -euo pipefail
bin=$(cd "$1" && pwd)
out=$(realpath -m "$2")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/nk/bin" "$stage/nk/lib"
cp "$bin"/* "$stage/nk/bin/"
strip --strip-unneeded "$stage"/nk/bin/* 2>/dev/null || true
for f in "$bin"/*; do ldd "$f" 2>/dev/null || true; done | awk '/=> \// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+)\.so|ld-linux|/cuda' |
  while read -r lib; do cp -L "$lib" "$stage/nk/lib/"; done
tar -C "$stage" -cJf "$out" nk
echo "$out: $(du -h "$out" | cut -f1), $(ls "$stage/nk/bin" | wc -l) binaries, $(ls "$stage/nk/lib" | wc -l) libraries"
