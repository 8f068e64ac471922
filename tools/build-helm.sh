#!/usr/bin/env bash
# build-helm.sh builds tools/bin/helm from the version pinned in tools/go.mod, with the
# version metadata helm's own Makefile injects. Prints the binary's path.
set -euo pipefail

tools_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$tools_dir/bin/helm"

helm_version="$(cd "$tools_dir" && GOWORK=off GOFLAGS=-mod=mod go list -m -f '{{.Version}}' helm.sh/helm/v3)"
# The Kubernetes version helm was built against (k8s.io/client-go v0.M.P means 1.M).
k8s_minor="$(cd "$tools_dir" && GOWORK=off GOFLAGS=-mod=mod go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)"

if [[ -x "$bin" ]] && [[ "$("$bin" version --template '{{.Version}}' 2>/dev/null)" == "$helm_version" ]]; then
	echo "$bin"
	exit 0
fi

ldflags="-s -w"
ldflags+=" -X helm.sh/helm/v3/internal/version.version=$helm_version"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
	ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done

mkdir -p "$tools_dir/bin"
(cd "$tools_dir" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
	go build -trimpath -ldflags "$ldflags" -o "$bin" helm.sh/helm/v3/cmd/helm)
echo "$bin"
