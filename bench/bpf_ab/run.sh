#!/bin/bash
# A/B of the classic BPF engines between a git revision (A) and the working tree (B), in
# one process with libpcap's bpf_filter interleaved (ab.cc): both builds of src/bpf are
# compiled with the release flags, the namespace renamed so that they link together.
#
#   bench/bpf_ab/run.sh REV [CAPTURE.pcap] [EXPR ...]
#   (default capture: bench_bpf_capi's generated mix; default filters: its three)
# Needs a configured build/ (for bench_bpf_capi and the base layer's headers).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rev=${1:?usage: run.sh REV [CAPTURE.pcap] [EXPR ...]}
shift
work=$(mktemp -d /tmp/bpf_ab.XXXXXX)
trap 'git -C "$root" worktree remove --force "$work/a" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$root" worktree add --detach "$work/a" "$rev" >/dev/null 2>&1
capture=${1:-}
if [[ -n "$capture" && "$capture" == *.pcap ]]; then shift; else
  capture=$work/mix.pcap
  "$root/build/bench/bench_bpf_capi" --write "$capture" --rounds 1 --passes 1 >/dev/null
fi
flags=(-O2 -DNDEBUG -march=x86-64-v2 -std=c++20 -fPIC -fno-gcse -fno-crossjumping)
build() {  # build NAME SRC_ROOT
  local name=$1 src=$2 objs=()
  mkdir -p "$work/$name/inc" && ln -s "$src/src/bpf" "$work/$name/inc/bpf"
  for f in "$src"/src/bpf/*.cc; do
    case $(basename "$f") in c_api.cc|bench_runner.cc) continue ;; esac
    g++ "${flags[@]}" -Dpktpath="$name" -I"$work/$name/inc" -I"$root/include" -I"$root/build/layers/base" \
        -c "$f" -o "$work/$name/$(basename "$f" .cc).o"
    objs+=("$work/$name/$(basename "$f" .cc).o")
  done
  g++ "${flags[@]}" -DSHIM="$name" -Dpktpath="$name" -I"$work/$name/inc" -I"$root/include" \
      -I"$root/build/layers/base" -c "$root/bench/bpf_ab/shim.cc" -o "$work/$name/shim.o"
  ar rcs "$work/$name.a" "$work/$name/shim.o" "${objs[@]}"
}
build pkA "$work/a" & a=$!
build pkB "$root" & b=$!
wait "$a" && wait "$b"
g++ -O2 -std=c++20 "$root/bench/bpf_ab/ab.cc" "$work/pkA.a" "$work/pkB.a" -lpcap -lfmt -o "$work/ab"
if [[ $# -eq 0 ]]; then set -- 'net 192.168.2.0/24' 'tcp and (port 80 or port 443) and not net 10.0.0.0/8' 'ip6 protochain 17'; fi
for expr in "$@"; do taskset -c 1 "$work/ab" "$capture" "$expr" "${AB_ROUNDS:-15}" "${AB_PASSES:-10}"; done
