#!/usr/bin/env bash
# The installed package, as another project sees it. Usage: run.sh BUILD_DIR SOURCE_DIR SANITIZED
#   1. cmake --install BUILD_DIR into a temporary prefix; the layout, the SONAME and the
#      shared library's exported symbols (the C API's only) are checked;
#   2. examples/bpf_filter_pcap.c built with pkg-config alone (shared, then the static
#      archive with `pkg-config --static`'s flags);
#   3. tests/install/consumer built with find_package(pktpath): the example against
#      pktpath::bpf and pktpath::bpf_static, a C++ program against pktpath::pktpath; and
#      tests/install/c_consumer, a C-only project, against pktpath::bpf_static;
#   4. every program run on captures of tests/data/conformance/libpcap-apply, each
#      output compared with the installed `pktpath bpf run --expr E --pcap F`'s.
# Exits 77 (skipped) for a sanitized build.
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
if [ "${3:-0}" = 1 ]; then
  echo "install.package: skipped in a sanitized build"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pktpath-install.XXXXXX")
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "install.package: $*" >&2; exit 1; }

# 1. install and layout
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install failed"; }
for f in bin/pktpath include/pktpath/bpf.h include/pktpath/bpf/program.h include/pktpath/core/netdevice.h \
         include/pktpath/base/compiler.h lib/libpktpath_bpf.a lib/libpktpath.a \
         lib/cmake/pktpath/pktpathConfig.cmake lib/cmake/pktpath/pktpathConfigVersion.cmake \
         lib/pkgconfig/pktpath.pc share/man/man1/pktpath.1; do
  [ -f "$prefix/$f" ] || fail "not installed: $f"
done
so=$(readelf -d "$prefix/lib/libpktpath_bpf.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
major=$(sed -n 's/^#define PKTPATH_BPF_VERSION_MAJOR \([0-9]*\)$/\1/p' "$src/include/pktpath/bpf.h")
[ "$so" = "libpktpath_bpf.so.$major" ] || fail "SONAME '$so', want libpktpath_bpf.so.$major"
[ -L "$prefix/lib/libpktpath_bpf.so" ] && [ -e "$prefix/lib/$so" ] || fail "no $so link"
extra=$(nm -D --defined-only "$prefix/lib/libpktpath_bpf.so" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' |
        grep -v '^pktpath_bpf_' || true)
[ -z "$extra" ] || fail "libpktpath_bpf.so exports more than the C API: $(echo $extra | head -c 400)"
[[ $(nm -D --defined-only "$prefix/lib/libpktpath_bpf.so") == *" T pktpath_bpf_filter@@"* ]] ||
  fail "pktpath_bpf_filter not exported"
roff=$(groff -man -Tutf8 -ww -z "$prefix/share/man/man1/pktpath.1" 2>&1) || fail "groff pktpath.1 failed: $roff"
[ -z "$roff" ] || fail "pktpath.1: $roff"

# 2. pkg-config only
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[ "$(pkg-config --modversion pktpath)" = "$(sed -n 's/^project(pktpath VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" ] ||
  fail "pkg-config --modversion pktpath: $(pkg-config --modversion pktpath)"
cc -Wall -Wextra -Werror -o "$tmp/pc_shared" "$src/examples/bpf_filter_pcap.c" \
   $(pkg-config --cflags --libs pktpath libpcap) || fail "pkg-config build (shared) failed"
[[ $(readelf -d "$tmp/pc_shared") == *"[$so]"* ]] || fail "pc_shared does not need $so"
static_libs=$(pkg-config --static --libs pktpath libpcap | sed "s|-lpktpath_bpf|$prefix/lib/libpktpath_bpf.a|")
cc -Wall -Wextra -Werror -o "$tmp/pc_static" "$src/examples/bpf_filter_pcap.c" $(pkg-config --cflags pktpath) \
   $static_libs || fail "pkg-config --static build failed"
[[ $(readelf -d "$tmp/pc_static") != *libpktpath_bpf* ]] || fail "pc_static still needs libpktpath_bpf.so"

# 3. find_package(pktpath)
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" -DPKTPATH_EXAMPLE="$src/examples/bpf_filter_pcap.c" >"$tmp/consumer.log" 2>&1 ||
  { cat "$tmp/consumer.log"; fail "consumer configure failed"; }
cmake --build "$tmp/consumer" >>"$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; fail "consumer build failed"; }
# a C-only project: project(app C) links pktpath::bpf_static with the C driver
cmake -S "$src/tests/install/c_consumer" -B "$tmp/c_consumer" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" -DPKTPATH_EXAMPLE="$src/examples/bpf_filter_pcap.c" >"$tmp/c_consumer.log" 2>&1 ||
  { cat "$tmp/c_consumer.log"; fail "C-only consumer configure failed"; }
cmake --build "$tmp/c_consumer" >>"$tmp/c_consumer.log" 2>&1 || { cat "$tmp/c_consumer.log"; fail "C-only consumer build failed"; }

# 4. the same numbers as `pktpath bpf run`
caps=$src/tests/data/conformance/libpcap-apply/captures
export LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[[ $(ldd "$tmp/pc_shared") == *"$prefix/lib/$so"* ]] || fail "pc_shared does not load the installed $so"
cases=(  # each gives accepted and rejected packets; link types EN10MB, ARCNET_LINUX, 802.11
         # radiotap; protochain's backward jump walks the AH headers (userland acceptance)
  "ip host 10.0.0.1 or len > 80|gateway_or_not.pcap"
  "ip6 protochain 108|AH-IPcomp-IPv6.pcap"
  "len > 100|pim-packet-assortment.pcap"
  "ip6 and len > 150|AH-IPcomp-IPv6.pcap"
  "tcp|arcnet-rfc1201-arp-icmp-http.pcap"
  "wlan type data|wpa2linkuppassphraseiswireshark.pcap"
)
checked=0
for c in "${cases[@]}"; do
  expr=${c%%|*} cap=$caps/${c#*|}
  "$prefix/bin/pktpath" bpf run --expr "$expr" --pcap "$cap" >"$tmp/want" || fail "pktpath bpf run '$expr' $cap failed"
  grep -qvx 0 "$tmp/want" || fail "'$expr' accepts nothing in $cap"
  grep -qx 0 "$tmp/want" || fail "'$expr' rejects nothing in $cap"
  for prog in "$tmp/pc_shared" "$tmp/pc_static" "$tmp/consumer/bpf_filter_pcap" "$tmp/consumer/bpf_filter_pcap_static" \
              "$tmp/c_consumer/bpf_filter_pcap_c_static" "$tmp/consumer/cxx_consumer"; do
    "$prog" "$expr" "$cap" >"$tmp/got" || fail "$(basename "$prog") '$expr' $cap failed"
    cmp -s "$tmp/want" "$tmp/got" || { diff "$tmp/want" "$tmp/got" | head; fail "$(basename "$prog") '$expr' $cap differs"; }
    checked=$((checked + 1))
  done
done
# usage and error exits
set +e
"$tmp/pc_shared" >/dev/null 2>&1; [ $? = 2 ] || fail "usage exit is not 2"
"$tmp/pc_shared" "tcp port" "$caps/llc.pcap" >/dev/null 2>&1; [ $? = 1 ] || fail "bad expression exit is not 1"
"$tmp/pc_shared" "tcp" "$tmp/none.pcap" >/dev/null 2>&1; [ $? = 1 ] || fail "missing file exit is not 1"
set -e
echo "install.package: $checked outputs equal to pktpath bpf run's"
