#!/usr/bin/python3
"""python_patch.py KUBECONFIG -- patches and manifests with the official
Python client: a strategic-merge patch of one container's image keeps the
other containers; a JSON merge patch; kubernetes.utils.create_from_yaml with a
multi-document file."""
import os
import sys
import tempfile

from kubernetes import client, config, utils
from kubernetes.client.rest import ApiException

config.load_kube_config(config_file=sys.argv[1])
api = client.ApiClient()
core = client.CoreV1Api()
apps = client.AppsV1Api()
NS = "default"


def check(what, got, want):
    if got != want:
        sys.exit(f"FAIL: {what}: got {got!r}, want {want!r}")


print("--- create_from_yaml with several documents")
manifest = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: py-multi
data:
  a: "1"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: py-web
spec:
  replicas: 1
  selector:
    matchLabels: {app: py-web}
  template:
    metadata:
      labels: {app: py-web}
    spec:
      containers:
      - name: app
        image: nginx:1.25
      - name: logger
        image: busybox:1.36
---
apiVersion: v1
kind: Service
metadata:
  name: py-web
spec:
  selector: {app: py-web}
  ports:
  - port: 80
"""
with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
    f.write(manifest)
try:
    created = utils.create_from_yaml(api, f.name, namespace=NS)
finally:
    os.unlink(f.name)
check("objects created", len(created), 3)
check("configmap", core.read_namespaced_config_map("py-multi", NS).data, {"a": "1"})
check("service port", core.read_namespaced_service("py-web", NS).spec.ports[0].port, 80)

print("--- strategic merge patch of one container's image")
patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}}}}
apps.patch_namespaced_deployment("py-web", NS, patch)
d = apps.read_namespaced_deployment("py-web", NS)
check("images", [(c.name, c.image) for c in d.spec.template.spec.containers],
      [("app", "nginx:1.26"), ("logger", "busybox:1.36")])
check("generation", d.metadata.generation, 2)

print("--- a patch with a stale resourceVersion: 409")
try:
    apps.patch_namespaced_deployment(
        "py-web", NS, {"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 2}})
    sys.exit("FAIL: stale patch accepted")
except ApiException as e:
    check("stale patch", e.status, 409)

print("--- delete a container by $patch: delete")
apps.patch_namespaced_deployment(
    "py-web", NS,
    {"spec": {"template": {"spec": {"containers": [{"name": "logger", "$patch": "delete"}]}}}})
d = apps.read_namespaced_deployment("py-web", NS)
check("containers", [c.name for c in d.spec.template.spec.containers], ["app"])
print("python_patch.py: all checks passed")
