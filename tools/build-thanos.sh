#!/usr/bin/env bash
# build-thanos.sh builds the thanos binary from the github.com/thanos-io/thanos
# module (fetched through the Go module proxy) and caches it by version.
#
# Usage: tools/build-thanos.sh [VERSION]   (default v0.40.1)
# Prints the path of the binary. A warm cache returns at once.
#
# Built as Thanos's own release build does (.promu.yml): with -tags slicelabels,
# without which the sidecar panics in its gRPC codec on a querier's first Info
# call. v0.40.1 builds with the project's Go (about 3 minutes on 2 cores).
set -euo pipefail

version="${1:-v0.40.1}"
cache_root="${GPUTALLY_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gputally-tools}"
out="$cache_root/thanos-$version/thanos"

if [[ -x "$out" ]]; then
	echo "$out"
	exit 0
fi

mkdir -p "$cache_root"
moddir="$(cd "$cache_root" && GOWORK=off GOFLAGS= go mod download -json "github.com/thanos-io/thanos@$version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [[ -z "$moddir" || ! -d "$moddir" ]]; then
	echo "build-thanos: could not download github.com/thanos-io/thanos@$version" >&2
	exit 1
fi

src="$cache_root/src-thanos-$version"
rm -rf "$src"
cp -r "$moddir" "$src"
chmod -R u+w "$src"
rm -f "$src/go.work" "$src/go.work.sum"

tmp_out="$out.tmp"
rm -f "$tmp_out"
mkdir -p "$(dirname "$out")"
(
	cd "$src"
	export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0
	echo "build-thanos: building thanos $version (slow the first time)" >&2
	go build -trimpath -tags slicelabels -ldflags "-s -w -X github.com/prometheus/common/version.Version=${version#v}" \
		-o "$tmp_out" ./cmd/thanos
)
mv "$tmp_out" "$out"
rm -rf "$src"
echo "$out"
