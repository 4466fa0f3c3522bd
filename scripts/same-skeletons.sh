#!/usr/bin/env bash
# Builds a skeleton from every fixture trace (fixtures/traces), every NPB trace of
# ../shared/fixtures/npb and the public OTF2, DUMPI and SimGrid traces with two mpiskel binaries,
# in C and in Rust, and compares the folders byte for byte (skeleton.json's build timings
# aside). Exits 1 where any differs or where one binary builds what the other refuses. A pair
# that differs is built once more, one binary at a time, before it counts as different.
# With PROGRAMS_ONLY=1 the runtime copied into every folder (mpiskel_rt*, src/rt*), the Makefile
# and README.md are left out: what is compared is what the build made of the trace (the program,
# skeleton.json, run.sh, job.slurm), for a change that lays out the runtime's files anew.
#
# Usage: scripts/same-skeletons.sh BEFORE AFTER [OUT]   (binaries; OUT default /tmp/same-skeletons)
set -uo pipefail
before=$1 after=$2 out=${3:-/tmp/same-skeletons}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=$root/../shared/fixtures
rm -rf "$out" && mkdir -p "$out"
traces=()
for t in "$root"/fixtures/traces/*/; do traces+=("${t%/}"); done
for t in "$shared"/npb/*/; do [ -f "$t/trace.txt" ] && traces+=("$t/trace.txt"); done
traces+=("$shared/public/otf2/pipit-ping-pong" "$shared/public/dumpi/sst-dumpi-testtrace")
traces+=("$shared/public/simgrid-ti/ti_traces_32_1.index.txt")
differ=0 same=0
ignore=()
if [ "${PROGRAMS_ONLY:-0}" = 1 ]; then
  ignore=(-x 'mpiskel_rt*' -x rt -x rt.rs -x Makefile -x README.md -x target -x 'skeleton-*')
fi
# skeleton.json's timings of the build itself (its stages, the deadlock check) differ from run
# to run.
strip() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("stage_seconds",None); d.get("check",{}).pop("seconds",None); print(json.dumps(d,indent=1,sort_keys=True))' "$1" 2>/dev/null
}
same_pair() {
  local a=$1 b=$2
  if ! cmp -s "$a.rc" "$b.rc"; then return 1; fi
  [ -d "$a" ] || return 0
  diff -rq -x skeleton.json "${ignore[@]}" "$a" "$b" >/dev/null && diff -q <(strip "$a/skeleton.json") <(strip "$b/skeleton.json") >/dev/null
}
build_pair() {  # trace lang name
  for side in before after; do
    bin=$before; [ $side = after ] && bin=$after
    rm -rf "${out:?}/$side/$3-$2"
    "$bin" build "$1" --lang "$2" -o "$out/$side/$3-$2" >"$out/$side/$3-$2.log" 2>&1
    echo $? >"$out/$side/$3-$2.rc"
  done
}
mkdir -p "$out/before" "$out/after"
for t in "${traces[@]}"; do
  name=$(echo "${t#"$root"/}" | sed 's|\.\./shared/fixtures/||; s|/trace.txt||; s|[/.]|_|g')
  for lang in c rust; do
    build_pair "$t" "$lang" "$name"
    if ! same_pair "$out/before/$name-$lang" "$out/after/$name-$lang"; then
      build_pair "$t" "$lang" "$name"
    fi
    if same_pair "$out/before/$name-$lang" "$out/after/$name-$lang"; then
      same=$((same + 1))
    else
      echo "DIFFER $name $lang: exit $(cat "$out/before/$name-$lang.rc") before, $(cat "$out/after/$name-$lang.rc") after; $(diff -rq -x skeleton.json "${ignore[@]}" "$out/before/$name-$lang" "$out/after/$name-$lang" 2>&1 | head -3 | tr '\n' ' ')"
      differ=$((differ + 1))
    fi
  done
done
echo "$same builds the same, $differ differ"
[ "$differ" -eq 0 ]
