#!/usr/bin/env bash
# Build the image with rootful podman on a locally made Debian base (see ../shared/docs/CONTAINERS.md),
# run it, upload a bundle, restart, and check the run survived on the volume.
# Usage: .ci/container.sh [base]   ("base" only builds/caches localhost/python-base)
set -euo pipefail
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
if ! command -v podman >/dev/null || ! command -v debootstrap >/dev/null || ! command -v curl >/dev/null; then
  apt-get install -y -q --no-install-recommends podman runc debootstrap uidmap curl >/dev/null
fi

# runc (crun fails on this cgroup v1 host); lower ulimits (root lacks CAP_SYS_RESOURCE); overlay is ~3x faster than vfs.
mkdir -p /etc/containers
cat > /etc/containers/containers.conf <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
CONF
printf '[storage]\ndriver = "overlay"\nrunroot = "/run/containers/storage"\ngraphroot = "/var/lib/containers/storage"\n' \
  > /etc/containers/storage.conf

# No registry is reachable, so python:3.12-slim can't be pulled: build a base from Debian packages instead.
if ! podman image exists localhost/python-base; then
  echo "== building localhost/python-base with debootstrap"
  R=$(mktemp -d /tmp/rootfs.XXXX)
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$R" \
    http://deb.debian.org/debian >/tmp/debootstrap.log 2>&1 || { tail -20 /tmp/debootstrap.log; exit 1; }
  # pip inside the build goes through a TLS-intercepting proxy: trust its CA in the rootfs.
  mkdir -p "$R/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$R/usr/local/share/ca-certificates/" 2>/dev/null || true
  chroot "$R" update-ca-certificates >/dev/null 2>&1 || true
  rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/var/lib/apt/lists/*
  tar -C "$R" -c . | podman import -q - localhost/python-base >/dev/null
  rm -rf "$R"
fi
[ "${1:-}" = base ] && exit 0

TAG=localhost/irlens:ci
NAME=irlens-ci-$$
VOL=irlens-ci-data-$$
PORT=${IRLENS_CI_PORT:-18000}
BASE=http://127.0.0.1:$PORT
BUNDLE=../shared/corpus/sm90_llvm.tar.xz

cleanup() {
  rc=$?
  if [ $rc != 0 ] && podman container exists "$NAME"; then echo "== container logs"; sleep 1; podman logs --tail 50 "$NAME" || true; fi
  podman rm -f -v -t 2 "$NAME" >/dev/null 2>&1 || true
  podman volume rm -f "$VOL" >/dev/null 2>&1 || true
  podman rmi -f "$TAG" >/dev/null 2>&1 || true
  podman image prune -f >/dev/null 2>&1 || true  # build-stage leftovers; localhost/python-base stays cached
  exit $rc
}
trap cleanup EXIT

# Without systemd podman can't schedule the HEALTHCHECK (it is run by hand below) and says so on every
# run/restart/rm: drop those lines.
pm() { podman "$@" 2> >(grep -v 'systemd connection' >&2); }
start() { pm run -d --name "$NAME" -p "127.0.0.1:$PORT:8000" -v "$VOL:/data" "$TAG" >/dev/null; }
wait_healthy() {
  for _ in $(seq 120); do
    curl -fsS -o /dev/null "$BASE/-/health" 2>/dev/null && return 0
    [ "$(podman inspect -f '{{.State.Running}}' "$NAME")" = true ] || { echo "container exited" >&2; return 1; }
    sleep 0.5
  done
  echo "not healthy after 60 s" >&2; return 1
}
# GET a URL, fail unless 200; prints the body.
get() { curl -fsS "$1"; }

echo "== podman build"
# --format docker: the OCI format drops HEALTHCHECK.
time podman build -q --format docker --network host --build-arg BASE_IMAGE=localhost/python-base -t "$TAG" . >/dev/null
podman image inspect -f 'image size: {{.Size}} bytes' "$TAG"

echo "== run"
t0=$(date +%s.%N)
start
wait_healthy
echo "healthy after $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s"
podman healthcheck run "$NAME"; echo "image HEALTHCHECK passes"
user=$(podman exec "$NAME" id -un); [ "$user" = irlens ] || { echo "runs as $user, not irlens" >&2; exit 1; }
home=$(get "$BASE/"); echo "GET / ok (templates found)"
asset=$(python3 -c 'import re,sys; m=re.search(r"/static/[^\"?#]+", sys.stdin.read()); print(m[0] if m else "")' <<<"$home")
if [ -n "$asset" ]; then get "$BASE$asset" >/dev/null; echo "GET $asset ok (static files found)"; fi

if [ ! -f "$BUNDLE" ]; then
  echo "== $BUNDLE not found (no ../shared beside the clone): skipping upload and restart checks"
  exit 0
fi

echo "== upload $BUNDLE"
# The image requires a token to upload: without one the server refuses, with one it accepts.
anon=$(curl -sS -o /dev/null -w '%{http_code}' -F "file=@$BUNDLE" "$BASE/runs")
[ "$anon" = 401 ] || { echo "upload without a token: HTTP $anon, expected 401" >&2; exit 1; }
TOKEN=$(podman exec "$NAME" irlens token create ci | tail -n 1)
resp=$(curl -sS -w '\n%{http_code}' -H "Authorization: Bearer $TOKEN" -F "file=@$BUNDLE" "$BASE/runs")
code=${resp##*$'\n'}; body=${resp%$'\n'*}
[ "$code" = 201 ] || { echo "upload: HTTP $code: $body" >&2; exit 1; }
# "url" may be relative or absolute; resolve it against the published port.
url=$(python3 -c 'import json,sys,urllib.parse as u; print(u.urljoin(sys.argv[1] + "/", json.loads(sys.argv[2])["url"]))' "$BASE" "$body")
echo "run url: $url"
get "$url" >/dev/null; echo "run page ok"
before=$(get "$url.json")

check_run_kept() {
  wait_healthy
  after=$(get "$url.json")
  [ "$before" = "$after" ] && echo "run still there after $1 (same JSON)" || echo "run still there after $1 (JSON differs)"
}
echo "== podman restart"
pm restart -t 10 "$NAME" >/dev/null
check_run_kept "podman restart"

# A restart keeps the container's own layer; a new container proves the data lives on the volume.
echo "== new container on the same volume"
pm rm -f -t 10 "$NAME" >/dev/null
start
check_run_kept "container re-creation"
echo "== container check passed"
