#!/usr/bin/env bash
# Refuses to start the test run when the disk cannot hold it. The main
# build with its exported test models takes about 4 GiB, the sanitizer
# builds about 3.5 GiB more, and the tests write up to 1 GiB of scratch
# files to the temporary folder. A disk that fills up halfway fails tests
# far from the cause, with scattered "No space left on device" errors.
#   scripts/check_disk.sh BUILD_PARENT SANITIZE_DIR
# XONNX_DISK_CHECK=0 skips the check (for a disk that df misreports).
set -euo pipefail
[[ ${XONNX_DISK_CHECK:-1} == 0 ]] && exit 0
builds=$1
sanitize_parent=$(dirname "$2")
tmp=${TMPDIR:-/tmp}

# DIR, or its nearest existing parent (a build folder not made yet).
existing() {
  local dir=$1
  while [[ ! -d $dir ]]; do dir=$(dirname "$dir"); done
  echo "$dir"
}
# The free space, in GiB, of the filesystem holding DIR, and its device.
free_gib() { df -P -k "$(existing "$1")" | awk 'NR == 2 { printf "%d", $4 / 1048576 }'; }
device() { stat -c %d "$(existing "$1")"; }

# What each place needs, summed over the places that share a filesystem.
declare -A need free where
for entry in "$builds:4" "$sanitize_parent:4" "$tmp:1"; do
  dir=${entry%:*}
  gib=${entry##*:}
  dev=$(device "$dir")
  need[$dev]=$((${need[$dev]:-0} + gib))
  free[$dev]=$(free_gib "$dir")
  [[ ", ${where[$dev]:-}, " == *", $dir, "* ]] || where[$dev]="${where[$dev]:+${where[$dev]}, }$dir"
done
status=0
for dev in "${!need[@]}"; do
  if ((free[$dev] < need[$dev])); then
    echo "check_disk: ${where[$dev]}: ${free[$dev]} GiB free, the builds and tests need about ${need[$dev]} GiB" >&2
    status=1
  fi
done
if ((status)); then
  echo "check_disk: free some space (old build folders, $tmp), or set XONNX_DISK_CHECK=0 to run anyway" >&2
fi
exit $status
