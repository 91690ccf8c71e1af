#!/usr/bin/env bash
# job.sh KPLANE KUBECTL -- Jobs with kubectl against a `kplane server`
# running its controllers, scheduler and 3 simulated nodes:
#   - completions 5, parallelism 2: completes (kubectl wait), succeeded 5,
#     and a watcher of its pods never sees more than 2 active at once;
#     every pod counted lost the tracking finalizer; SuccessfulCreate and
#     Completed events in describe;
#   - pods that fail (exit code 1, restartPolicy Never, backoffLimit 2):
#     Failed with BackoffLimitExceeded after 3 failures, FailureTarget
#     first, the second pod only after the 10 s back-off;
#   - Indexed, completions 3: pods carry the index (annotation, label, env
#     var JOB_COMPLETION_INDEX from the downward API, hostname), and
#     completedIndexes is "0-2";
#   - server defaulting (selector, labels, backoffLimit, ...);
#   - activeDeadlineSeconds: Failed, DeadlineExceeded, its pod deleted;
#   - suspend: no pods, Suspended True; resume: pods, Suspended False;
#     suspending a running Job deletes its pods without counting them failed;
#   - a running Job deleted: its pods go (the finalizer is removed);
#   - ttlSecondsAfterFinished: the finished Job is deleted.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start --nodes 3
k() { "$KUBECTL" "$@"; }
echo "--- $(k version --client 2>/dev/null | head -1)"

for _ in $(seq 100); do
  [ "$(k get nodes --no-headers 2>/dev/null | grep -c ' Ready ')" = 3 ] && break
  sleep 0.1
done
expect_eq "ready nodes" "$(k get nodes --no-headers | grep -c ' Ready ')" "3"

# A watcher records every event of the Job "par"'s pods.
kp_curl GET "/api/v1/namespaces/default/pods?watch=1&labelSelector=job-name%3Dpar&timeoutSeconds=240" \
  -N >"$KP_DIR/par.ndjson" &
WATCH_PID=$!
sleep 0.5

echo "--- completions 5, parallelism 2"
cat >"$KP_DIR/par.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: par
spec:
  completions: 5
  parallelism: 2
  template:
    metadata:
      annotations: {sim.kplane.io/run-ms: "1000"}
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox
YAML
k apply -f "$KP_DIR/par.yaml" >/dev/null
k wait --for=condition=complete job/par --timeout=120s >/dev/null
expect_eq "par succeeded" "$(k get job par -o jsonpath='{.status.succeeded}')" "5"
expect_eq "par failed" "$(k get job par -o jsonpath='{.status.failed}')" ""
expect_eq "par active" "$(k get job par -o jsonpath='{.status.active}')" ""
expect_match "par conditions" "$(k get job par -o jsonpath='{range .status.conditions[*]}{.type}={.status}/{.reason};{end}')" \
  '^SuccessCriteriaMet=True/CompletionsReached;Complete=True/CompletionsReached;$'
expect_match "par completionTime" "$(k get job par -o jsonpath='{.status.completionTime}')" '^20[0-9-]+T'
expect_match "par startTime" "$(k get job par -o jsonpath='{.status.startTime}')" '^20[0-9-]+T'
expect_eq "par uncounted" "$(k get job par -o jsonpath='{.status.uncountedTerminatedPods}')" "{}"
expect_eq "par pods" "$(k get pods -l job-name=par --no-headers | wc -l)" "5"
expect_eq "par pods succeeded" \
  "$(k get pods -l job-name=par --field-selector=status.phase=Succeeded --no-headers | wc -l)" "5"
# Counted pods lose the finalizer; the pods are the Job's, named after it.
expect_eq "finalizers left" "$(k get pods -l job-name=par -o jsonpath='{range .items[*]}{.metadata.finalizers}{end}')" ""
uid=$(k get job par -o jsonpath='{.metadata.uid}')
for p in $(k get pods -l job-name=par -o name); do
  expect_match "$p name" "$p" '^pod/par-[a-z0-9]{5}$'
  expect_eq "$p owner" "$(k get "$p" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].uid}/{.metadata.ownerReferences[0].controller}')" \
    "Job/par/$uid/true"
  expect_eq "$p labels" "$(k get "$p" -o jsonpath='{.metadata.labels.batch\.kubernetes\.io/controller-uid}/{.metadata.labels.batch\.kubernetes\.io/job-name}/{.metadata.labels.controller-uid}/{.metadata.labels.job-name}')" \
    "$uid/par/$uid/par"
done
desc=$(k describe job par)
expect_match "describe SuccessfulCreate" "$desc" 'Normal +SuccessfulCreate .*Created pod: par-'
expect_match "describe Completed" "$desc" 'Normal +Completed .*Job completed'
expect_match "describe statuses" "$desc" 'Pods Statuses: +0 Active .* 5 Succeeded / 0 Failed'
kill "$WATCH_PID" 2>/dev/null || true
wait "$WATCH_PID" 2>/dev/null || true
python3 - "$KP_DIR/par.ndjson" <<'PY'
import json, sys
pods, most, n, names = {}, 0, 0, set()
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    ev = json.loads(line)
    o = ev["object"]
    name = o["metadata"]["name"]
    names.add(name)
    n += 1
    if ev["type"] == "DELETED":
        pods.pop(name, None)
    else:
        pods[name] = o
    active = [p for p in pods.values()
              if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
              and not p["metadata"].get("deletionTimestamp")]
    most = max(most, len(active))
if n == 0 or len(names) != 5:
    sys.exit("watch saw %d events for %d pods, want 5 pods" % (n, len(names)))
if most > 2:
    sys.exit("saw %d active pods at once, parallelism is 2" % most)
if most < 2:
    sys.exit("never saw 2 active pods at once (parallelism 2): %d" % most)
print("--- watcher: %d events, at most %d active pods" % (n, most))
PY

echo "--- server defaults"
expect_eq "par defaults" "$(k get job par -o jsonpath='{.spec.backoffLimit}/{.spec.completionMode}/{.spec.suspend}/{.spec.podReplacementPolicy}/{.spec.selector.matchLabels.batch\.kubernetes\.io/controller-uid}')" \
  "6/NonIndexed/false/TerminatingOrFailed/$uid"

echo "--- failing pods, backoffLimit 2"
cat >"$KP_DIR/fail.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: fail
spec:
  backoffLimit: 2
  template:
    metadata:
      annotations: {sim.kplane.io/exit-code: "1", sim.kplane.io/run-ms: "200"}
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox
YAML
k apply -f "$KP_DIR/fail.yaml" >/dev/null
# Back-off: 10 s after the first failure, 20 s after the second.
k wait --for=condition=failed job/fail --timeout=150s >/dev/null
expect_eq "fail failed" "$(k get job fail -o jsonpath='{.status.failed}')" "3"
expect_eq "fail succeeded" "$(k get job fail -o jsonpath='{.status.succeeded}')" ""
expect_eq "fail reason" "$(k get job fail -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}')" \
  "BackoffLimitExceeded"
expect_eq "fail message" "$(k get job fail -o jsonpath='{.status.conditions[?(@.type=="Failed")].message}')" \
  "Job has reached the specified backoff limit"
expect_eq "fail target" "$(k get job fail -o jsonpath='{.status.conditions[?(@.type=="FailureTarget")].reason}')" \
  "BackoffLimitExceeded"
expect_eq "fail completionTime" "$(k get job fail -o jsonpath='{.status.completionTime}')" ""
expect_eq "fail pods" "$(k get pods -l job-name=fail --field-selector=status.phase=Failed --no-headers | wc -l)" "3"
# The second pod came at least the 10 s back-off after the first.
python3 - "$(k get pods -l job-name=fail -o json)" <<'PY'
import json, sys
from datetime import datetime
ts = sorted(datetime.strptime(p["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
            for p in json.loads(sys.argv[1])["items"])
gaps = [(b - a).total_seconds() for a, b in zip(ts, ts[1:])]
if len(ts) != 3 or gaps[0] < 10 or gaps[1] < 20:
    sys.exit("pod creation gaps %s, want >= 10 s then >= 20 s (back-off)" % gaps)
print("--- back-off gaps between pods: %s s" % gaps)
PY
expect_match "describe BackoffLimitExceeded" "$(k describe job fail)" \
  'Warning +BackoffLimitExceeded +.*Job has reached the specified backoff limit'

echo "--- Indexed, completions 3"
cat >"$KP_DIR/idx.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: idx
spec:
  completions: 3
  parallelism: 3
  completionMode: Indexed
  template:
    metadata:
      annotations: {sim.kplane.io/run-ms: "300"}
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox
YAML
k apply -f "$KP_DIR/idx.yaml" >/dev/null
k wait --for=condition=complete job/idx --timeout=120s >/dev/null
expect_eq "idx completedIndexes" "$(k get job idx -o jsonpath='{.status.completedIndexes}')" "0-2"
expect_eq "idx succeeded" "$(k get job idx -o jsonpath='{.status.succeeded}')" "3"
python3 - "$(k get pods -l job-name=idx -o json)" <<'PY'
import json, re, sys
items = json.loads(sys.argv[1])["items"]
seen = []
for p in items:
    m = p["metadata"]
    ix = m["annotations"]["batch.kubernetes.io/job-completion-index"]
    assert m["labels"]["batch.kubernetes.io/job-completion-index"] == ix, m["labels"]
    assert re.fullmatch(r"idx-%s-[a-z0-9]{5}" % ix, m["name"]), m["name"]
    assert p["spec"]["hostname"] == "idx-%s" % ix, p["spec"].get("hostname")
    env = {e["name"]: e for e in p["spec"]["containers"][0].get("env", [])}
    ref = env["JOB_COMPLETION_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"]
    # The downward API resolves the env var from this annotation.
    want = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    assert ref == want, ref
    path = re.fullmatch(r"metadata\.annotations\['(.*)'\]", ref).group(1)
    seen.append(int(m["annotations"][path]))
if sorted(seen) != [0, 1, 2]:
    sys.exit("indexes %s, want 0,1,2" % sorted(seen))
print("--- indexes from annotation and JOB_COMPLETION_INDEX: %s" % sorted(seen))
PY

echo "--- activeDeadlineSeconds"
cat >"$KP_DIR/late.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: late
spec:
  activeDeadlineSeconds: 2
  template:
    metadata:
      annotations: {sim.kplane.io/run-ms: "600000"}
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox
YAML
k apply -f "$KP_DIR/late.yaml" >/dev/null
k wait --for=condition=failed job/late --timeout=120s >/dev/null
expect_eq "late reason" "$(k get job late -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}')" \
  "DeadlineExceeded"
expect_eq "late failed" "$(k get job late -o jsonpath='{.status.failed}')" "1"
expect_eq "late active" "$(k get job late -o jsonpath='{.status.active}')" ""
for _ in $(seq 100); do
  [ -z "$(k get pods -l job-name=late -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{end}')" ] && break
  sleep 0.2
done
expect_eq "late running pods" "$(k get pods -l job-name=late -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{end}')" ""
expect_match "describe DeadlineExceeded" "$(k describe job late)" 'Warning +DeadlineExceeded'

echo "--- suspend and resume"
cat >"$KP_DIR/sus.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: sus
spec:
  suspend: true
  template:
    metadata:
      annotations: {sim.kplane.io/run-ms: "300"}
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox
YAML
k apply -f "$KP_DIR/sus.yaml" >/dev/null
for _ in $(seq 100); do
  [ "$(k get job sus -o jsonpath='{.status.conditions[?(@.type=="Suspended")].status}')" = True ] && break
  sleep 0.1
done
expect_eq "suspended" "$(k get job sus -o jsonpath='{.status.conditions[?(@.type=="Suspended")].reason}')" "JobSuspended"
expect_eq "suspended: no pods" "$(k get pods -l job-name=sus --no-headers 2>/dev/null | wc -l)" "0"
expect_eq "suspended: no startTime" "$(k get job sus -o jsonpath='{.status.startTime}')" ""
k patch job sus --type=merge -p '{"spec":{"suspend":false}}' >/dev/null
k wait --for=condition=complete job/sus --timeout=120s >/dev/null
expect_eq "resumed" "$(k get job sus -o jsonpath='{.status.conditions[?(@.type=="Suspended")].status}/{.status.conditions[?(@.type=="Suspended")].reason}')" \
  "False/JobResumed"
expect_match "resumed startTime" "$(k get job sus -o jsonpath='{.status.startTime}')" '^20[0-9-]+T'

echo "--- a running Job suspended: its pods go, not counted as failed"
cat >"$KP_DIR/run.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: run
spec:
  parallelism: 2
  completions: 2
  template:
    metadata:
      annotations: {sim.kplane.io/run-ms: "600000"}
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox
YAML
k apply -f "$KP_DIR/run.yaml" >/dev/null
for _ in $(seq 100); do
  [ "$(k get job run -o jsonpath='{.status.active}')" = 2 ] && break
  sleep 0.2
done
expect_eq "run active" "$(k get job run -o jsonpath='{.status.active}')" "2"
k patch job run --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
for _ in $(seq 150); do
  [ "$(k get pods -l job-name=run --no-headers 2>/dev/null | wc -l)" = 0 ] && break
  sleep 0.2
done
expect_eq "run pods" "$(k get pods -l job-name=run --no-headers 2>/dev/null | wc -l)" "0"
expect_eq "run suspended" "$(k get job run -o jsonpath='{.status.conditions[?(@.type=="Suspended")].status}/{.status.active}/{.status.failed}')" "True//"
expect_match "describe SuccessfulDelete" "$(k describe job run)" 'Normal +SuccessfulDelete .*Deleted pod: run-'
expect_match "describe Suspended" "$(k describe job run)" 'Normal +Suspended .*Job suspended'

echo "--- a running Job deleted: its pods go, the finalizer does not hold them"
cat >"$KP_DIR/gone.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: gone
spec:
  parallelism: 2
  completions: 4
  template:
    metadata:
      annotations: {sim.kplane.io/run-ms: "600000"}
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox
YAML
k apply -f "$KP_DIR/gone.yaml" >/dev/null
for _ in $(seq 100); do
  [ "$(k get pods -l job-name=gone --field-selector=status.phase=Running --no-headers 2>/dev/null | wc -l)" = 2 ] && break
  sleep 0.2
done
expect_eq "gone running" "$(k get pods -l job-name=gone --field-selector=status.phase=Running --no-headers | wc -l)" "2"
expect_eq "gone finalizers" "$(k get pods -l job-name=gone -o jsonpath='{range .items[*]}{.metadata.finalizers[0]} {end}')" \
  "batch.kubernetes.io/job-tracking batch.kubernetes.io/job-tracking "
k delete job gone --wait=false >/dev/null
for _ in $(seq 150); do
  [ "$(k get pods -l job-name=gone --no-headers 2>/dev/null | wc -l)" = 0 ] && break
  sleep 0.2
done
expect_eq "gone pods" "$(k get pods -l job-name=gone --no-headers 2>/dev/null | wc -l)" "0"

echo "--- ttlSecondsAfterFinished"
cat >"$KP_DIR/ttl.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: ttl
spec:
  ttlSecondsAfterFinished: 2
  template:
    metadata:
      annotations: {sim.kplane.io/run-ms: "200"}
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox
YAML
k apply -f "$KP_DIR/ttl.yaml" >/dev/null
k wait --for=condition=complete job/ttl --timeout=120s >/dev/null
for _ in $(seq 150); do
  k get job ttl >/dev/null 2>&1 || break
  sleep 0.2
done
k get job ttl >/dev/null 2>&1 && fail "job ttl still there after its TTL"

echo "PASS"
