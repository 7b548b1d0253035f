# Helpers sourced by the GPU-machine scripts (`. tools/device/common.sh`, from the repository root):
#   unpack_xz SRC DST        an xz-compressed carried binary to an executable DST (python3's lzma: the machine may
#                            have no xz)
#   run NAME TIMEOUT CMD...  CMD under `timeout`, its output in $RUN_LOG_DIR/NAME.log, then "== NAME rc=R T ms";
#                            returns R
#   tpot_line LOG            a bench log's "TPOT batch 1 / 4" summary rows on one line
#   last_timeline LOG        a bench log's last per-kernel timeline (variant bit 21: one per generate; the last is
#                            the batch asked for)
#   sampled CMD...           CMD under an nvidia-smi sampler (every ${SAMPLE_MS:-100} ms), then over the samples with
#                            the GPU busy: mean SM clock (its values counted), power, and the clock event reasons
unpack_xz() {
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$1" "$2" && chmod +x "$2"
}
run() {
  local name=$1 to=$2; shift 2
  local t0=$(date +%s%N)
  timeout "$to" "$@" > "$RUN_LOG_DIR/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  return $rc
}
tpot_line() {
  grep -E "TPOT batch (1|4) " "$1" | sed 's/|//g; s/  */ /g' | tr '\n' ';'
}
last_timeline() {
  grep -E "^timeline" "$1" | awk '/one step/ { n = 0 } { b[n++] = $0 } END { for (k = 0; k < n; ++k) print b[k] }'
}
sampled() {
  : > /tmp/smi.csv
  nvidia-smi --query-gpu=utilization.gpu,clocks.sm,power.draw,clocks_event_reasons.active --format=csv,noheader,nounits \
    -lms "${SAMPLE_MS:-100}" > /tmp/smi.csv &
  local sp=$!
  "$@"
  kill $sp 2>/dev/null; wait $sp 2>/dev/null
  awk -F', ' '$1 > 50 { n++; c += $2; w += $3; h[$2]++; r[$4]++ }
    END { if (!n) exit
          printf "   busy samples %d: SM %.0f MHz, %.0f W; MHz:count", n, c / n, w / n
          for (k in h) printf " %s:%d", k, h[k]
          printf "; event reasons:"
          for (k in r) printf " %s:%d", k, r[k]
          print "" }' /tmp/smi.csv
}
