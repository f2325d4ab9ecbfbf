#!/usr/bin/env bash
# Installs what hintstream needs beyond Go, only when it is missing:
# libzmq (cgo, for github.com/pebbe/zmq4) and the Debian Python packages the
# tests use as an independent wire peer (/usr/bin/python3 with msgpack,
# pyzmq and xxhash), and prlimit (util-linux) for the file-limit test.
set -euo pipefail
need=()
if ! pkg-config --exists libzmq 2>/dev/null; then
  need+=(pkg-config libzmq3-dev)
fi
if ! /usr/bin/python3 -c 'import msgpack, zmq, xxhash' 2>/dev/null; then
  need+=(python3 python3-msgpack python3-zmq python3-xxhash)
fi
if ! command -v prlimit >/dev/null; then
  need+=(util-linux) # prlimit: the file-limit start-up test
fi
if ((${#need[@]} == 0)); then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root or sudo to install: ${need[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "deps: installing ${need[*]} with apt-get"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${need[@]}"
