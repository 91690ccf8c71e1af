#!/usr/bin/python3
"""python_client.py KUBECONFIG -- the official Python client against kplane.

CRUD of a pod, a configmap and a deployment; a list, then a watch from the
list's resourceVersion that sees every later change exactly once; a replace
with a stale resourceVersion (409); a watch from a resourceVersion older than
the server's history (410)."""
import sys
import threading

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

config.load_kube_config(config_file=sys.argv[1])
core = client.CoreV1Api()
apps = client.AppsV1Api()
NS = "default"


def check(what, got, want):
    if got != want:
        sys.exit(f"FAIL: {what}: got {got!r}, want {want!r}")


def expect_status(what, code, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except ApiException as e:
        check(what, e.status, code)
        return e
    sys.exit(f"FAIL: {what}: no error, want {code}")


print("--- configmap CRUD")
cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-cm", labels={"app": "py"}),
                        data={"k": "v"})
made = core.create_namespaced_config_map(NS, cm)
check("created name", made.metadata.name, "py-cm")
got = core.read_namespaced_config_map("py-cm", NS)
check("read data", got.data, {"k": "v"})
check("uid kept", got.metadata.uid, made.metadata.uid)
lst = core.list_namespaced_config_map(NS, label_selector="app=py")
check("list", [i.metadata.name for i in lst.items], ["py-cm"])
got.data["k"] = "v2"
rep = core.replace_namespaced_config_map("py-cm", NS, got)
check("replaced", rep.data["k"], "v2")
# The old object carries a stale resourceVersion now: 409 Conflict.
got.data["k"] = "v3"
e = expect_status("stale replace", 409, core.replace_namespaced_config_map, "py-cm", NS, got)
check("conflict reason", "Conflict" in e.body, True)
expect_status("duplicate create", 409, core.create_namespaced_config_map, NS, cm)
core.delete_namespaced_config_map("py-cm", NS)
expect_status("read deleted", 404, core.read_namespaced_config_map, "py-cm", NS)

print("--- finalizers and graceful pod deletion")
core.create_namespaced_config_map(NS, client.V1ConfigMap(
    metadata=client.V1ObjectMeta(name="fin-cm", finalizers=["example.com/hold"])))
core.delete_namespaced_config_map("fin-cm", NS)
held = core.read_namespaced_config_map("fin-cm", NS)
check("held: deletionTimestamp", held.metadata.deletion_timestamp is not None, True)
core.patch_namespaced_config_map("fin-cm", NS, {"metadata": {"labels": {"still": "here"}}})
check("held after an update", core.read_namespaced_config_map("fin-cm", NS).metadata.labels,
      {"still": "here"})
core.patch_namespaced_config_map("fin-cm", NS, {"metadata": {"finalizers": None}})
expect_status("gone with its last finalizer", 404, core.read_namespaced_config_map, "fin-cm", NS)
# A bound pod is deleted gracefully: it stays, Terminating, through status
# updates from its node, until the node's final DELETE (grace period 0).
core.create_namespaced_pod(NS, client.V1Pod(
    metadata=client.V1ObjectMeta(name="grace-pod"),
    spec=client.V1PodSpec(node_name="no-such-node",
                          containers=[client.V1Container(name="c", image="busybox")])))
core.delete_namespaced_pod("grace-pod", NS)
core.patch_namespaced_pod_status("grace-pod", NS, {"status": {"phase": "Failed"}})
p = core.read_namespaced_pod("grace-pod", NS)
check("terminating pod kept", (p.status.phase, p.metadata.deletion_grace_period_seconds),
      ("Failed", 30))
core.delete_namespaced_pod("grace-pod", NS, grace_period_seconds=0)
expect_status("pod gone after its final delete", 404, core.read_namespaced_pod, "grace-pod", NS)

print("--- pod CRUD")
pod = client.V1Pod(metadata=client.V1ObjectMeta(name="py-pod"),
                   spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]))
core.create_namespaced_pod(NS, pod)
p = core.read_namespaced_pod("py-pod", NS)
check("pod image", p.spec.containers[0].image, "busybox")
p.metadata.labels = {"role": "test"}
p = core.replace_namespaced_pod("py-pod", NS, p)
check("pod labels", p.metadata.labels, {"role": "test"})
check("pods listed", [i.metadata.name for i in core.list_namespaced_pod(NS).items], ["py-pod"])
core.delete_namespaced_pod("py-pod", NS)
check("pods gone", core.list_namespaced_pod(NS).items, [])

print("--- deployment CRUD")
dep = client.V1Deployment(
    metadata=client.V1ObjectMeta(name="py-dep"),
    spec=client.V1DeploymentSpec(
        replicas=2, selector=client.V1LabelSelector(match_labels={"app": "d"}),
        template=client.V1PodTemplateSpec(
            metadata=client.V1ObjectMeta(labels={"app": "d"}),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]))))
apps.create_namespaced_deployment(NS, dep)
d = apps.read_namespaced_deployment("py-dep", NS)
check("replicas", d.spec.replicas, 2)
d.spec.replicas = 3
d = apps.replace_namespaced_deployment("py-dep", NS, d)
check("replicas updated", d.spec.replicas, 3)
check("generation moved with spec", d.metadata.generation, 2)
apps.delete_namespaced_deployment("py-dep", NS)
expect_status("deployment gone", 404, apps.read_namespaced_deployment, "py-dep", NS)

print("--- list, then watch from its resourceVersion: every change exactly once")
lst = core.list_namespaced_config_map(NS)
seen = []
ready = threading.Event()


def watcher():
    w = watch.Watch()
    ready.set()
    for ev in w.stream(core.list_namespaced_config_map, NS,
                       resource_version=lst.metadata.resource_version, timeout_seconds=10):
        seen.append((ev["type"], ev["object"].metadata.name, ev["object"].metadata.resource_version))
        if ev["type"] == "DELETED" and ev["object"].metadata.name == "w-2":
            w.stop()


t = threading.Thread(target=watcher)
t.start()
ready.wait()
for i in range(3):
    core.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"w-{i}")))
w1 = core.read_namespaced_config_map("w-1", NS)
w1.metadata.labels = {"x": "y"}
core.replace_namespaced_config_map("w-1", NS, w1)
for i in range(3):
    core.delete_namespaced_config_map(f"w-{i}", NS)
t.join(15)
want = [("ADDED", "w-0"), ("ADDED", "w-1"), ("ADDED", "w-2"), ("MODIFIED", "w-1"),
        ("DELETED", "w-0"), ("DELETED", "w-1"), ("DELETED", "w-2")]
check("watch events", [(a, b) for a, b, _ in seen], want)
revs = [int(rv) for _, _, rv in seen]
check("revisions increase", revs, sorted(set(revs)))

print("--- a watch from a resourceVersion older than the history: 410")
try:
    for ev in watch.Watch().stream(core.list_namespaced_config_map, NS, resource_version="1",
                                   timeout_seconds=5):
        if ev["type"] == "ERROR":
            check("410 code", ev["raw_object"]["code"], 410)
            break
        sys.exit(f"FAIL: expected an ERROR event, got {ev['type']}")
except ApiException as e:
    check("410", e.status, 410)
print("PASS")
