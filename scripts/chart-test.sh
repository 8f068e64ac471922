#!/usr/bin/env bash
# chart-test.sh tests the Helm chart end to end (`make chart-test`):
#
#   1. helm (tools/ module) lint --strict and template, default and all-features values;
#   2. the Go tests of deploy/helm (strict decoding, security context, generated files,
#      flags the binary accepts);
#   3. a real kube-apiserver (built from k8s.io/kubernetes, cached by version) on etcd, both
#      on 127.0.0.1 random ports, with the Prometheus Operator CRDs installed, and every
#      values set applied with `kubectl apply --dry-run=server --validate=strict`;
#   4. deliberately broken values, which the API server must reject; the exporter's
#      ServiceAccount and ClusterRoles (DRA and the pod watch) applied for real, with
#      `kubectl auth can-i` holding them to least privilege, and the exporter's pod watch
#      run as that ServiceAccount against the API server;
#   5. the report's Kueue objects (kueue.x-k8s.io/v1beta2, from `report --demo` on the demo
#      fleet) with Kueue's own CRDs installed from the sigs.k8s.io/kueue module, server-side
#      dry-run; a ClusterQueue with v1beta1's `cohort` must be rejected;
#   6. the report's Volcano queues (scheduling.volcano.sh/v1beta1, from `report --demo
#      --scheduler=volcano` and report/advice's waiting story, with its Kueue objects) against
#      Volcano's Queue CRD (testdata/crds/volcano), server-side dry-run; a Queue with Volcano's
#      documented guarantee mistake must be rejected.
#
# Needs: Go, etcd (Debian: apt-get install -y etcd-server), openssl, curl. The first run builds
# helm, kube-apiserver and kubectl (long on 2 cores); later runs start in seconds.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

chart=deploy/helm/gputally
kube_version=v1.37.2
prometheus_operator=github.com/prometheus-operator/prometheus-operator@v0.85.0
# The first Kueue whose module carries CRDs serving v1beta2 (config/components/crd/bases/).
kueue=sigs.k8s.io/kueue@v0.17.0
namespace=gpu-monitoring
release=gputally
api_versions=(--api-versions monitoring.coreos.com/v1/ServiceMonitor --api-versions monitoring.coreos.com/v1/PrometheusRule)

# Values sets that must be accepted: name → values file ("" = chart defaults).
declare -A value_sets=([default]="" [all-features]="$chart/ci/all-features-values.yaml")
# Values that the API server must reject, and the text its error must contain.
broken_values=deploy/test/broken-interval-values.yaml
broken_error='spec.endpoints[0].interval'

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "--- PASS: $*"; }
fail() { failed=$((failed + 1)); echo "--- FAIL: $*"; }
step() { echo "=== [${SECONDS}s] $*"; }

for tool in go etcd openssl curl; do
	if ! command -v "$tool" >/dev/null; then
		echo "chart-test: $tool not found (etcd: apt-get install -y etcd-server)" >&2
		exit 1
	fi
done

step "build helm and kube-apiserver/kubectl $kube_version"
helm="$(tools/build-helm.sh)"
k8s_bin="$(tools/build-k8s.sh "$kube_version")"
kubectl="$k8s_bin/kubectl"
helm_kube_version="${kube_version#v}"

work="$(mktemp -d)"
pids=()
# stop ends one process: SIGTERM, then SIGKILL when it has not exited within 10 s.
stop() {
	local pid="$1"
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 20); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
cleanup() {
	# Last started first: kube-apiserver shuts down gracefully only while etcd is up.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		stop "${pids[$i]}"
	done
	rm -rf "$work"
}
trap cleanup EXIT

values_args() {
	if [[ -n "$1" ]]; then
		printf '%s\n' -f "$1"
	fi
}

step "helm lint --strict"
for name in "${!value_sets[@]}"; do
	mapfile -t extra < <(values_args "${value_sets[$name]}")
	if "$helm" lint --strict --kube-version "$helm_kube_version" "$chart" "${extra[@]}" >"$work/lint-$name.log" 2>&1; then
		pass "helm lint $name"
	else
		cat "$work/lint-$name.log"
		fail "helm lint $name"
	fi
done

step "helm template"
for name in "${!value_sets[@]}" broken; do
	file="${value_sets[$name]:-}"
	[[ "$name" == broken ]] && file="$broken_values"
	mapfile -t extra < <(values_args "$file")
	if "$helm" template "$release" "$chart" --namespace "$namespace" --kube-version "$helm_kube_version" \
		"${api_versions[@]}" "${extra[@]}" >"$work/$name.yaml" 2>"$work/template-$name.log"; then
		pass "helm template $name ($(grep -c '^kind:' "$work/$name.yaml") objects)"
	else
		cat "$work/template-$name.log"
		fail "helm template $name"
	fi
done

step "go test ./deploy/helm"
if go test -count=1 ./deploy/helm/...; then
	pass "go test ./deploy/helm"
else
	fail "go test ./deploy/helm"
fi

# free_port prints a TCP port on 127.0.0.1 that nothing listens on.
free_port() {
	local port
	for _ in $(seq 100); do
		port=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	echo "chart-test: no free port found" >&2
	return 1
}

# wait_for runs a command until it succeeds, for at most $1 seconds.
wait_for() {
	local seconds="$1"
	shift
	for _ in $(seq "$((seconds * 2))"); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.5
	done
	return 1
}

step "start etcd and kube-apiserver $kube_version"
etcd_client="$(free_port)"
etcd_peer="$(free_port)"
etcd --name chart-test --data-dir "$work/etcd" \
	--listen-client-urls "http://127.0.0.1:$etcd_client" --advertise-client-urls "http://127.0.0.1:$etcd_client" \
	--listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
	--initial-cluster "chart-test=http://127.0.0.1:$etcd_peer" >"$work/etcd.log" 2>&1 &
pids+=("$!")

mkdir -p "$work/pki"
openssl genrsa -out "$work/pki/sa.key" 2048 2>/dev/null
token="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
echo "$token,chart-test,chart-test,system:masters" >"$work/pki/tokens.csv"

api_port="$(free_port)"
"$k8s_bin/kube-apiserver" \
	--etcd-servers "http://127.0.0.1:$etcd_client" \
	--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
	--cert-dir "$work/pki/serving" \
	--token-auth-file "$work/pki/tokens.csv" \
	--authorization-mode RBAC \
	--service-account-issuer https://kubernetes.default.svc.cluster.local \
	--service-account-key-file "$work/pki/sa.key" \
	--service-account-signing-key-file "$work/pki/sa.key" \
	--service-cluster-ip-range 10.96.0.0/16 \
	--endpoint-reconciler-type none \
	--enable-priority-and-fairness=false \
	--profiling=false \
	>"$work/kube-apiserver.log" 2>&1 &
api_pid="$!"
pids+=("$api_pid")

cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: chart-test
    cluster:
      server: https://127.0.0.1:$api_port
      certificate-authority: $work/pki/serving/apiserver.crt
users:
  - name: chart-test
    user:
      token: $token
contexts:
  - name: chart-test
    context: {cluster: chart-test, user: chart-test}
current-context: chart-test
EOF
export KUBECONFIG="$work/kubeconfig"

if ! wait_for 180 "$kubectl" get --raw /readyz; then
	echo "chart-test: kube-apiserver did not become ready; its log ends:" >&2
	tail -n 40 "$work/kube-apiserver.log" >&2
	echo "etcd log ends:" >&2
	tail -n 10 "$work/etcd.log" >&2
	exit 1
fi
pass "kube-apiserver $("$kubectl" version -o json | sed -n 's/.*"gitVersion": "\(.*\)".*/\1/p' | tail -n1) ready on 127.0.0.1:$api_port"

step "install the Prometheus Operator CRDs"
crd_dir="$(go mod download -json "$prometheus_operator" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')/example/prometheus-operator-crd"
for crd in servicemonitors prometheusrules alertmanagerconfigs; do
	"$kubectl" apply --server-side -f "$crd_dir/monitoring.coreos.com_$crd.yaml" >/dev/null
done
if "$kubectl" wait --for condition=Established --timeout=60s \
	crd/servicemonitors.monitoring.coreos.com crd/prometheusrules.monitoring.coreos.com \
	crd/alertmanagerconfigs.monitoring.coreos.com >/dev/null; then
	pass "CRDs established"
else
	fail "CRDs established"
fi
"$kubectl" create namespace "$namespace" >/dev/null
# No controller manager runs: create the namespace's default ServiceAccount by hand.
"$kubectl" -n "$namespace" create serviceaccount default >/dev/null
wait_for 30 "$kubectl" -n "$namespace" get serviceaccount default

step "server-side dry-run"
for name in "${!value_sets[@]}"; do
	if "$kubectl" apply --dry-run=server --validate=strict -f "$work/$name.yaml" >"$work/apply-$name.log" 2>&1; then
		pass "API server accepts $name ($(grep -c 'created (server dry run)' "$work/apply-$name.log") objects)"
	else
		cat "$work/apply-$name.log"
		fail "API server accepts $name"
	fi
done

# helm's own install path against the real discovery: the kubeVersion constraint, the
# Capabilities-gated ServiceMonitor/PrometheusRule (auto), and the NOTES render.
for name in "${!value_sets[@]}"; do
	mapfile -t extra < <(values_args "${value_sets[$name]}")
	if "$helm" install "$release" "$chart" --namespace "$namespace" --dry-run=server "${extra[@]}" >"$work/install-$name.log" 2>&1 &&
		grep -q '^kind: ServiceMonitor' "$work/install-$name.log" && grep -q '^kind: PrometheusRule' "$work/install-$name.log" &&
		grep -q '^NOTES:' "$work/install-$name.log"; then
		pass "helm install --dry-run=server $name renders the monitoring objects and NOTES from the server's APIs"
	else
		cat "$work/install-$name.log"
		fail "helm install --dry-run=server $name"
	fi
	if [[ -n "${CHART_TEST_SHOW_NOTES:-}" ]]; then
		sed -n '/^NOTES:/,$p' "$work/install-$name.log"
	fi
done

if "$kubectl" apply --dry-run=server --validate=strict -f "$work/broken.yaml" >"$work/apply-broken.log" 2>&1; then
	cat "$work/apply-broken.log"
	fail "API server rejects $broken_values (it accepted it: the check cannot fail)"
elif grep -qF "$broken_error" "$work/apply-broken.log"; then
	pass "API server rejects $broken_values: $(grep -F "$broken_error" "$work/apply-broken.log" | head -n1)"
else
	cat "$work/apply-broken.log"
	fail "API server rejects $broken_values, but not for $broken_error"
fi

step "the exporter's API access, applied for real: what its ServiceAccount may and may not do"
# The ServiceAccount and the ClusterRoles of the all-features values (DRA and the pod watch on).
"$helm" template "$release" "$chart" --namespace "$namespace" --kube-version "$helm_kube_version" \
	-f "$chart/ci/all-features-values.yaml" --show-only templates/serviceaccount.yaml \
	--show-only templates/dra-rbac.yaml --show-only templates/pods-rbac.yaml >"$work/rbac.yaml"
sa="$(sed -n '/^kind: ServiceAccount/,/^---/s/^  name: //p' "$work/rbac.yaml" | head -n1)"
if "$kubectl" apply -f "$work/rbac.yaml" >"$work/apply-rbac.log" 2>&1; then
	pass "RBAC of the pod watch and DRA applied ($(grep -c '^kind:' "$work/rbac.yaml") objects, ServiceAccount $sa)"
else
	cat "$work/apply-rbac.log"
	fail "apply the RBAC of the pod watch and DRA"
fi
# What the ServiceAccount may do, and some of what it may not.
as_sa=(--as "system:serviceaccount:$namespace:$sa")
for allowed in "list pods" "watch pods" "get nodes" "list resourceslices.resource.k8s.io" "watch resourceslices.resource.k8s.io" \
	"get resourceclaims.resource.k8s.io"; do
	# shellcheck disable=SC2086
	if "$kubectl" auth can-i $allowed --all-namespaces "${as_sa[@]}" >/dev/null 2>&1; then
		pass "the exporter may $allowed"
	else
		fail "the exporter may not $allowed, which it needs"
	fi
done
for denied in "get pods" "create pods" "patch pods" "delete pods" "list nodes" "watch nodes" "patch nodes" \
	"list resourceclaims.resource.k8s.io" "get secrets" "list secrets" "get configmaps" "create pods/eviction"; do
	# shellcheck disable=SC2086
	if "$kubectl" auth can-i $denied --all-namespaces "${as_sa[@]}" >/dev/null 2>&1; then
		fail "the exporter may $denied: more than least privilege"
	else
		pass "the exporter may not $denied"
	fi
done

step "the pod watch as the exporter's ServiceAccount, against the real API server"
# A node with HAMi's registration, a HAMi pod bound to it and a pod bound to another node:
# the watch (list and watch by spec.nodeName, get of the node) sees the first alone.
cat >"$work/watch-objects.yaml" <<EOF
apiVersion: v1
kind: Node
metadata:
  name: chart-test-node
  annotations:
    hami.io/node-nvidia-register: '[{"id":"GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448","count":10,"devmem":81559,"devcore":100,"type":"NVIDIA H100 80GB HBM3","mode":"hami-core","health":true}]'
---
apiVersion: v1
kind: Pod
metadata:
  name: hami-pod
  namespace: $namespace
  annotations:
    hami.io/vgpu-devices-allocated: "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,20000,25:;"
    hami.io/bind-phase: success
spec:
  nodeName: chart-test-node
  containers: [{name: main, image: registry.invalid/none}]
---
apiVersion: v1
kind: Pod
metadata:
  name: elsewhere
  namespace: $namespace
spec:
  nodeName: another-node
  containers: [{name: main, image: registry.invalid/none}]
EOF
token="$("$kubectl" -n "$namespace" create token "$sa" --duration 10m 2>"$work/token.log" || true)"
sed -e "s/^      token: .*/      token: $token/" "$work/kubeconfig" >"$work/sa-kubeconfig"
metrics_port="$(free_port)"
if [[ -z "$token" ]]; then
	cat "$work/token.log"
	fail "a token for the exporter's ServiceAccount"
elif ! "$kubectl" apply -f "$work/watch-objects.yaml" >"$work/apply-watch.log" 2>&1; then
	cat "$work/apply-watch.log"
	fail "create the pod watch's node and pods"
elif ! go build -o "$work/gputally" ./cmd/gputally; then
	fail "build gputally for the pod watch"
else
	"$work/gputally" exporter --backend=sim --attribution.pods.enabled --kubeconfig "$work/sa-kubeconfig" \
		--hostname chart-test-node --web.listen-address "127.0.0.1:$metrics_port" >"$work/exporter.log" 2>&1 &
	exporter_pid="$!"
	pids+=("$exporter_pid")
	watched() {
		curl -fsS "http://127.0.0.1:$metrics_port/metrics" >"$work/metrics.txt" 2>/dev/null &&
			grep -qx 'gputally_pod_watch_up 1' "$work/metrics.txt" && grep -qx 'gputally_pod_watch_pods 1' "$work/metrics.txt"
	}
	if wait_for 120 watched && ! grep -qi 'forbidden' "$work/exporter.log"; then
		pass "the pod watch lists and watches its node's pods (1 of 2) and reads its node as the ServiceAccount, nothing forbidden"
	else
		grep '^gputally_pod_watch' "$work/metrics.txt" 2>/dev/null
		tail -n 20 "$work/exporter.log"
		fail "the pod watch as the exporter's ServiceAccount"
	fi
	stop "$exporter_pid"
fi

step "install the Kueue CRDs ($kueue) and dry-run the report's Kueue objects"
kueue_crd_dir="$(go mod download -json "$kueue" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')/config/components/crd/bases"
for crd in resourceflavors clusterqueues localqueues; do
	"$kubectl" apply --server-side -f "$kueue_crd_dir/kueue.x-k8s.io_$crd.yaml" >/dev/null
done
if "$kubectl" wait --for condition=Established --timeout=60s \
	crd/resourceflavors.kueue.x-k8s.io crd/clusterqueues.kueue.x-k8s.io crd/localqueues.kueue.x-k8s.io >/dev/null; then
	pass "Kueue CRDs established"
else
	fail "Kueue CRDs established"
fi
# One simulated day of the demo fleet is enough to produce every kind of object.
if go run ./cmd/gputally report --demo --demo.scenario testdata/scenarios/fleet --cost.price-book testdata/prices/fleet.yaml \
	--range 1d --format json --out "$work/fleet-report.json" --apply-dir "$work/apply" >"$work/report.log" 2>&1 &&
	[[ -s "$work/apply/kueue.yaml" ]]; then
	pass "report --demo on the demo fleet wrote $(grep -c '^kind:' "$work/apply/kueue.yaml") Kueue objects"
	# The LocalQueues live in the teams' namespaces.
	for ns in $(sed -n 's/^  namespace: //p' "$work/apply/kueue.yaml" | sort -u); do
		"$kubectl" create namespace "$ns" >/dev/null
	done
	if "$kubectl" apply --dry-run=server --validate=strict -f "$work/apply/kueue.yaml" >"$work/apply-kueue.log" 2>&1; then
		pass "API server accepts the report's Kueue objects ($(grep -c 'created (server dry run)' "$work/apply-kueue.log") objects)"
	else
		cat "$work/apply-kueue.log"
		fail "API server accepts the report's Kueue objects"
	fi
else
	tail -n 20 "$work/report.log"
	fail "report --demo on the demo fleet"
fi
# A ClusterQueue with v1beta1's field name must be rejected: the dry-run can fail.
cat >"$work/kueue-v1beta1-cohort.yaml" <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: old-style
spec:
  cohort: gputally
EOF
if "$kubectl" apply --dry-run=server --validate=strict -f "$work/kueue-v1beta1-cohort.yaml" >"$work/apply-kueue-broken.log" 2>&1; then
	fail "API server rejects v1beta1's cohort in a v1beta2 ClusterQueue (it accepted it: the check cannot fail)"
elif grep -q 'cohort' "$work/apply-kueue-broken.log"; then
	pass "API server rejects v1beta1's cohort in a v1beta2 ClusterQueue: $(head -n1 "$work/apply-kueue-broken.log")"
else
	cat "$work/apply-kueue-broken.log"
	fail "API server rejects the v1beta1-style ClusterQueue, but not for cohort"
fi

step "install Volcano's Queue CRD (testdata/crds/volcano) and dry-run the report's Volcano queues"
"$kubectl" apply --server-side -f testdata/crds/volcano/scheduling.volcano.sh_queues.yaml >/dev/null
if "$kubectl" wait --for condition=Established --timeout=60s crd/queues.scheduling.volcano.sh >/dev/null; then
	pass "Volcano Queue CRD established"
else
	fail "Volcano Queue CRD established"
fi
if go run ./cmd/gputally report --demo --demo.scenario testdata/scenarios/fleet --cost.price-book testdata/prices/fleet.yaml \
	--range 1d --format json --out "$work/fleet-report-volcano.json" --scheduler volcano --apply-dir "$work/apply-volcano" >"$work/report-volcano.log" 2>&1 &&
	[[ -s "$work/apply-volcano/volcano-queues.yaml" ]]; then
	pass "report --demo --scheduler=volcano wrote $(grep -c '^kind: Queue' "$work/apply-volcano/volcano-queues.yaml") Volcano queues"
else
	tail -n 20 "$work/report-volcano.log"
	fail "report --demo --scheduler=volcano"
fi
# Kueue's objects for the two-day waiting story (testdata/scenarios/waiting: a 4-GPU job
# that waited fragmented, notebooks that never ran), read from kube-state-metrics' series.
if go run ./cmd/gputally report --demo --demo.scenario testdata/scenarios/waiting --cost.price-book testdata/prices/fleet.yaml \
	--range 2d --format json --out "$work/waiting-report.json" --apply-dir "$work/apply-waiting" >"$work/report-waiting.log" 2>&1 &&
	[[ -s "$work/apply-waiting/kueue.yaml" ]]; then
	pass "report --demo on the waiting story wrote $(grep -c '^kind:' "$work/apply-waiting/kueue.yaml") Kueue objects"
else
	tail -n 20 "$work/report-waiting.log"
	fail "report --demo on the waiting story"
fi
# The queues and Kueue objects of report/advice's waiting story (GPU pods that waited, MIG
# instances among them; TestWaitingStoryFiles keeps them current).
story=report/advice/testdata/waiting-story
for ns in $(sed -n 's/^  namespace: //p' "$story/kueue.yaml" "$work/apply-waiting/kueue.yaml" | sort -u); do
	"$kubectl" get namespace "$ns" >/dev/null 2>&1 || "$kubectl" create namespace "$ns" >/dev/null
done
for f in "$work/apply-volcano/volcano-queues.yaml" "$story/volcano-queues.yaml" "$story/kueue.yaml" "$work/apply-waiting/kueue.yaml"; do
	if [[ -s "$f" ]] && "$kubectl" apply --dry-run=server --validate=strict -f "$f" >"$work/apply-story.log" 2>&1; then
		pass "API server accepts $f ($(grep -c '(server dry run)' "$work/apply-story.log") objects)"
	else
		cat "$work/apply-story.log" 2>/dev/null
		fail "API server accepts $f"
	fi
done
# Volcano's documents write guarantee: {<resource>: …}; the schema is guarantee.resource:
# strict field validation must reject it (non-strict validation drops it with a warning).
cat >"$work/volcano-guarantee.yaml" <<EOF
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: guarantee-without-resource
spec:
  deserved:
    nvidia.com/gpu: "2"
  guarantee:
    nvidia.com/gpu: "1"
EOF
if "$kubectl" apply --dry-run=server --validate=strict -f "$work/volcano-guarantee.yaml" >"$work/apply-volcano-broken.log" 2>&1; then
	fail "API server rejects guarantee without resource in a Queue (it accepted it: the check cannot fail)"
elif grep -qF 'unknown field "spec.guarantee.nvidia.com/gpu"' "$work/apply-volcano-broken.log"; then
	pass "API server rejects guarantee without resource in a Queue: $(head -n1 "$work/apply-volcano-broken.log")"
else
	cat "$work/apply-volcano-broken.log"
	fail "API server rejects the Queue, but not for guarantee"
fi

echo "chart-test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
