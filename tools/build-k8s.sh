#!/usr/bin/env bash
# build-k8s.sh builds kube-apiserver and kubectl from the k8s.io/kubernetes module
# (fetched through the Go module proxy) and caches them by version.
#
# Usage: tools/build-k8s.sh [VERSION]   (default v1.37.2)
# Prints the directory holding the two binaries. A warm cache returns at once.
#
# The module zip carries neither staging/ nor vendor/ (they are nested modules and
# symlinks), so the copy's go.mod is rewritten to take each staging module from the
# proxy at the matching v0.X.Y release.
set -euo pipefail

version="${1:-v1.37.2}"
cache_root="${GPUTALLY_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gputally-tools}"
out="$cache_root/k8s-$version"

if [[ -x "$out/kube-apiserver" && -x "$out/kubectl" ]]; then
	echo "$out"
	exit 0
fi

major_minor_patch="${version#v}"
major="${major_minor_patch%%.*}"
rest="${major_minor_patch#*.}"
minor="${rest%%.*}"
patch="${rest#*.}"
staging_version="v0.${minor}.${patch}"

mkdir -p "$cache_root"
moddir="$(cd "$cache_root" && GOWORK=off GOFLAGS= go mod download -json "k8s.io/kubernetes@$version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [[ -z "$moddir" || ! -d "$moddir" ]]; then
	echo "build-k8s: could not download k8s.io/kubernetes@$version" >&2
	exit 1
fi

src="$cache_root/src-$version"
rm -rf "$src"
cp -r "$moddir" "$src"
chmod -R u+w "$src"
rm -f "$src/go.work" "$src/go.work.sum"

# k8s.io/X => ./staging/src/k8s.io/X   becomes   k8s.io/X => k8s.io/X v0.M.P
sed -i \
	-e '/k8s\.io\/sample-cli-plugin/d' \
	-e '/k8s\.io\/sample-controller/d' \
	-e "s#^\([[:space:]]*\)k8s\.io/\([a-z0-9-]*\) => \./staging/src/k8s\.io/\2\$#\1k8s.io/\2 => k8s.io/\2 $staging_version#" \
	"$src/go.mod"
if grep -q '=> ./staging' "$src/go.mod"; then
	echo "build-k8s: go.mod still points into staging/:" >&2
	grep '=> ./staging' "$src/go.mod" >&2
	exit 1
fi

ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
	ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

tmp_out="$out.tmp"
rm -rf "$tmp_out"
mkdir -p "$tmp_out"
(
	cd "$src"
	export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0
	for cmd in kube-apiserver kubectl; do
		echo "build-k8s: building $cmd $version (slow the first time)" >&2
		go build -trimpath -ldflags "$ldflags" -o "$tmp_out/$cmd" "./cmd/$cmd"
	done
)
rm -rf "$out"
mv "$tmp_out" "$out"
rm -rf "$src"
echo "$out"
