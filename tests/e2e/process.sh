#!/usr/bin/env bash
# process.sh KPLANE KUBECTL -- `kplane server --runtime process`: one real
# node whose pods run as local processes, and `kubectl logs` through the API
# server: a Job's output; `logs -f` streaming until the container exits; a
# crash-looping Deployment (CrashLoopBackOff, restartCount rising, `logs
# --previous`); the API's errors for several containers and for a container
# that cannot start; graceful deletion (a SIGTERM trap exits at once; a pod
# that ignores SIGTERM is SIGKILLed after its 2 s grace period). No process
# of the test outlives it.
#
# KPLANE_NODE_BACKOFF_SCALE=0.05 shortens the crash-loop back-off (10 s
# doubling -> 0.5 s doubling) so restarts come within the test's deadline.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"

# procs_in DIR: the pids of processes whose working directory is under DIR.
procs_in() {
  local p cwd
  for p in /proc/[0-9]*; do
    cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
    case "$cwd" in "$1"*) printf ' %s' "${p#/proc/}" ;; esac
  done
}

# Every process the node started runs in a pod directory under
# $KP_DIR/data/node/pods; kill whatever is left there when the test ends
# (the node kills its pods when it stops; this is the safety net).
proc_cleanup() {
  local rc=$?
  set +e
  kp_stop
  local left
  left=$(procs_in "$KP_DIR/")
  if [ -n "$left" ]; then
    echo "FAIL: processes left in $KP_DIR:$left" >&2
    kill -KILL $left 2>/dev/null || true
    [ $rc -ne 0 ] || rc=1
  fi
  kp_cleanup $rc
}
trap proc_cleanup EXIT

export KPLANE_NODE_BACKOFF_SCALE=0.05
kp_start --runtime process
k() { "$KUBECTL" "$@"; }
echo "--- $(k version --client 2>/dev/null | head -1)"

# wait_for WHAT CMD...: poll CMD until it succeeds (60 s).
wait_for() {
  local what=$1
  shift
  for _ in $(seq 600); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  fail "timed out waiting for $what"
}
phase() { k get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null; }
phase_is() { [ "$(phase "$1")" = "$2" ]; }
gone() { ! k get pod "$1" >/dev/null 2>&1; }

echo "--- the node is Ready and reports its log port"
wait_for "a Ready node" sh -c "'$KUBECTL' get nodes --no-headers | grep -q ' Ready '"
NODE=$(k get nodes -o jsonpath='{.items[0].metadata.name}')
PORT=$(k get node "$NODE" -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}')
[ "$PORT" -gt 0 ] || fail "kubelet port: '$PORT'"
expect_eq "InternalIP" "$(k get node "$NODE" -o jsonpath='{.status.addresses[0].address}')" "127.0.0.1"
expect_eq "runtime" "$(k get node "$NODE" -o jsonpath='{.status.nodeInfo.containerRuntimeVersion}')" \
  "process://1.0"
# The log server wants the bearer token.
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/containerLogs/default/x/y")
expect_eq "log server without a token" "$code" "401"

echo "--- discovery lists pods/log"
disc=$(k get --raw /api/v1) # no `| grep -q`: with pipefail, an early exit of grep fails kubectl
expect_match "discovery" "$disc" '"name":"pods/log"'

echo "--- a Job runs its command and kubectl logs prints its output"
k create job hello --image=busybox -- sh -c 'echo hello from kplane; exit 0'
wait_for "the Job to complete" sh -c \
  "[ \"\$('$KUBECTL' get job hello -o jsonpath='{.status.succeeded}')\" = 1 ]"
k get job hello
out=$(k logs job/hello)
expect_eq "logs job/hello" "$out" "hello from kplane"
POD=$(k get pods -l job-name=hello -o jsonpath='{.items[0].metadata.name}')
expect_eq "job pod phase" "$(phase "$POD")" "Succeeded"
expect_eq "job pod exit code" \
  "$(k get pod "$POD" -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')" "0"
expect_eq "job pod reason" \
  "$(k get pod "$POD" -o jsonpath='{.status.containerStatuses[0].state.terminated.reason}')" "Completed"
expect_eq "logs POD" "$(k logs "$POD")" "hello from kplane"

echo "--- a Never pod that fails is Failed with exit code 3; env and fieldRefs"
cat >"$KP_DIR/env.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: envpod
  labels: {tier: test}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c"]
    args: ["echo \"greeting=$GREETING pod=$POD_NAME ns=$POD_NS tier=$TIER node=$NODE x=$(EXPANDED)\"; pwd >&2; exit 3"]
    env:
    - {name: GREETING, value: hi}
    - {name: EXPANDED, value: "$(GREETING)-there"}
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: POD_NS
      valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
    - name: TIER
      valueFrom: {fieldRef: {fieldPath: "metadata.labels['tier']"}}
    - name: NODE
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
YAML
k apply -f "$KP_DIR/env.yaml"
wait_for "envpod to fail" phase_is envpod Failed
expect_eq "exit code" \
  "$(k get pod envpod -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')" "3"
expect_eq "reason" \
  "$(k get pod envpod -o jsonpath='{.status.containerStatuses[0].state.terminated.reason}')" "Error"
out=$(k logs envpod)
expect_match "env" "$out" "^greeting=hi pod=envpod ns=default tier=test node=$NODE x=hi-there"
expect_match "stderr and the pod's working dir" "$out" "/data/node/pods/default_envpod_.*/work"
ts=$(k logs envpod --timestamps)
ts=${ts%%$'\n'*}
expect_match "timestamps" "$ts" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z greeting=hi'
expect_eq "tail 1" "$(k logs envpod --tail=1)" "$(k logs envpod | tail -1)"
expect_eq "limit-bytes" "$(k logs envpod --limit-bytes=8)" "greeting"
expect_eq "since 1h" "$(k logs envpod --since=1h)" "$out"
expect_eq "since a future time" "$(k logs envpod --since-time=2999-01-01T00:00:00Z)" ""

echo "--- kubectl logs -f streams a pod's lines and ends when it exits"
k run ticker --image=busybox --restart=Never --command -- \
  sh -c 'for i in 1 2 3 4 5; do echo tick $i; sleep 0.4; done'
wait_for "ticker to run" phase_is ticker Running
start=$(date +%s%N)
k logs -f ticker >"$KP_DIR/follow.out" &
fpid=$!
# Lines arrive as they are printed: the first while the last is not yet.
wait_for "the first streamed line" grep -q "tick 1" "$KP_DIR/follow.out"
grep -q "tick 5" "$KP_DIR/follow.out" && fail "logs -f gave everything at once, not as a stream"
kill -0 $fpid 2>/dev/null || fail "logs -f ended before the container did"
for _ in $(seq 300); do kill -0 $fpid 2>/dev/null || break; sleep 0.1; done
kill -0 $fpid 2>/dev/null && fail "logs -f did not end when the container exited"
wait $fpid || fail "logs -f failed"
elapsed=$((($(date +%s%N) - start) / 1000000))
expect_eq "followed lines" "$(tr '\n' ' ' <"$KP_DIR/follow.out")" "tick 1 tick 2 tick 3 tick 4 tick 5 "
echo "    (followed for ${elapsed} ms)"

echo "--- the API's errors"
cat >"$KP_DIR/two.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  containers:
  - {name: a, image: busybox, command: ["sleep", "300"]}
  - {name: b, image: busybox, command: ["sleep", "300"]}
YAML
k apply -f "$KP_DIR/two.yaml"
# kubectl 1.32 picks the first container itself ("Defaulted container");
# the API answers a request without one as Kubernetes does.
err=$(kp_curl GET "/api/v1/namespaces/default/pods/two/log")
expect_match "several containers" "$err" \
  'a container name must be specified for pod two, choose one of: \[a b\]'
code=$(kp_curl GET "/api/v1/namespaces/default/pods/two/log" -o /dev/null -w '%{http_code}')
expect_eq "several containers: HTTP code" "$code" "400"
err=$(k logs two 2>&1 || true)
expect_match "kubectl defaults the container" "$err" 'Defaulted container "a" out of: a, b'
err=$(k logs two -c nope 2>&1 || true)
expect_match "unknown container" "$err" "container nope is not valid for pod two"
k run nocmd --image=busybox --restart=Never -- sleep 1   # args only: no command
wait_for "nocmd to report RunContainerError" sh -c \
  "'$KUBECTL' get pod nocmd -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}' | grep -q RunContainerError"
err=$(k logs nocmd 2>&1 || true)
expect_match "waiting to start" "$err" 'container "nocmd" in pod "nocmd" is waiting to start: RunContainerError'
err=$(k logs envpod --previous 2>&1 || true)
expect_match "no previous" "$err" 'previous terminated container "main" in pod "envpod" not found'
k delete pod two nocmd --wait=false >/dev/null

echo "--- a crash-looping Deployment: CrashLoopBackOff, restarts, logs --previous"
k create deployment boom --image=busybox -- sh -c 'echo boom; exit 1'
BOOM=
crashloop() {
  BOOM=$(k get pods -l app=boom -o jsonpath='{.items[0].metadata.name}' 2>/dev/null) || return 1
  [ -n "$BOOM" ] || return 1
  local rc reason
  rc=$(k get pod "$BOOM" -o jsonpath='{.status.containerStatuses[0].restartCount}')
  reason=$(k get pod "$BOOM" -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')
  [ "${rc:-0}" -ge 2 ] && [ "$reason" = CrashLoopBackOff ]
}
wait_for "CrashLoopBackOff with restartCount >= 2" crashloop
k get pods -l app=boom
r1=$(k get pod "$BOOM" -o jsonpath='{.status.containerStatuses[0].restartCount}')
expect_eq "last exit code" \
  "$(k get pod "$BOOM" -o jsonpath='{.status.containerStatuses[0].lastState.terminated.exitCode}')" "1"
expect_eq "logs --previous" "$(k logs "$BOOM" --previous)" "boom"
rising() { [ "$(k get pod "$BOOM" -o jsonpath='{.status.containerStatuses[0].restartCount}')" -gt "$r1" ]; }
wait_for "restartCount to keep rising" rising
ev=$(k get events --field-selector "involvedObject.name=$BOOM,reason=BackOff" --no-headers)
expect_match "BackOff event" "$ev" "BackOff"
k delete deployment boom >/dev/null

echo "--- graceful deletion: a SIGTERM trap exits at once"
cat >"$KP_DIR/term.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: trapper}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "trap 'echo got TERM; exit 0' TERM; echo up; while true; do sleep 0.1; done"]
---
apiVersion: v1
kind: Pod
metadata: {name: stubborn}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "trap '' TERM; echo up; while true; do sleep 0.1; done"]
YAML
k apply -f "$KP_DIR/term.yaml"
wait_for "trapper to run" phase_is trapper Running
wait_for "stubborn to run" phase_is stubborn Running
wait_for "trapper's output" sh -c "'$KUBECTL' logs trapper | grep -q up"
start=$(date +%s%N)
k delete pod trapper --wait=false >/dev/null
wait_for "trapper to be gone" gone trapper
t_trap=$((($(date +%s%N) - start) / 1000000))
echo "    trapper gone after ${t_trap} ms (grace 30 s)"
[ "$t_trap" -lt 20000 ] || fail "trapper took ${t_trap} ms: the SIGTERM trap did not end it"

echo "--- a pod ignoring SIGTERM is SIGKILLed after its grace period (2 s)"
start=$(date +%s%N)
k delete pod stubborn --wait=false >/dev/null
sleep 1
phase_is stubborn Running || fail "stubborn stopped before its grace period: $(phase stubborn)"
wait_for "stubborn to be gone" gone stubborn
t_kill=$((($(date +%s%N) - start) / 1000000))
echo "    stubborn gone after ${t_kill} ms"
[ "$t_kill" -ge 1900 ] || fail "stubborn was gone after ${t_kill} ms, before its 2 s grace"
expect_eq "stubborn's processes left" "$(procs_in "$KP_DIR/data/node/pods/default_stubborn_")" ""

echo "--- stopping the node stops its pods' processes"
k run sleeper --image=busybox --restart=Never --command -- sleep 300
wait_for "sleeper to run" phase_is sleeper Running
kp_stop
expect_eq "processes after the server stopped" "$(procs_in "$KP_DIR/data/node/pods/")" ""
echo "PASS"
