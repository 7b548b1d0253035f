# Helpers sourced by the GPU-machine scripts (`. tools/device/common.sh`, from the repository root):
#   unpack_xz SRC DST        an xz-compressed carried binary to an executable DST (python3's lzma: the machine may
#                            have no xz)
#   run NAME TIMEOUT CMD...  CMD under `timeout`, its output in $RUN_LOG_DIR/NAME.log, then "== NAME rc=R T ms";
#                            returns R
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
