#!/usr/bin/env bash
# kinds_invalid.sh KPLANE KUBECTL -- the kinds served since issue 15 refuse
# bad objects as Kubernetes does (issue 15, deliver point 3): three (or more)
# bad objects per kind go through `kubectl create`, and each must come back
# 422 Invalid naming the field Kubernetes names; good objects of the kinds
# charts use most come back with Kubernetes' defaults.
#
# All bad objects go in one multi-document `kubectl create` (kubectl reports
# every failure), so the test makes a handful of requests per kind and stays
# well under a minute.
set -euo pipefail
KP_BIN=$1
KUBECTL=$2
. "$(dirname "$0")/lib.sh"
kp_start "${KP_API_ONLY[@]}"
k() { "$KUBECTL" --request-timeout=20s "$@"; }

POD='{spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}'
RBAC=rbac.authorization.k8s.io/v1
REQ=aGVsbG8= # base64 "hello": not a PEM CERTIFICATE REQUEST

# NAME FIELD: the bad object NAME must be refused naming FIELD.
EXPECT='
r-verbs rules[0].verbs
r-groups rules[0].apiGroups
r-url rules[0].nonResourceURLs
cr-verbs rules[0].verbs
cr-both rules[0].nonResourceURLs
cr-agg aggregationRule.clusterRoleSelectors
rb-kind roleRef.kind
rb-name roleRef.name
rb-subject subjects[0].kind
crb-kind roleRef.kind
crb-sa subjects[0].namespace
crb-group subjects[0].name
cj-schedule spec.schedule
cj-tz spec.timeZone
cj-policy spec.concurrencyPolicy
cj-restart spec.jobTemplate.spec.template.spec.restartPolicy
pvc-modes spec.accessModes
pvc-storage spec.resources[storage]
pvc-volmode spec.volumeMode
pv-capacity spec.capacity
pv-source spec
pv-policy spec.persistentVolumeReclaimPolicy
rc-selector spec.template.metadata.labels
rc-restart spec.template.spec.restartPolicy
rc-replicas spec.replicas
pt-containers template.spec.containers
pt-image template.spec.containers[0].image
pt-dns template.spec.dnsPolicy
lr-type spec.limits[0].type
lr-minmax spec.limits[0].min[cpu]
lr-pod spec.limits[0].default
rq-negative spec.hard[pods]
rq-scope spec.scopes
rq-selector spec.scopeSelector.matchExpressions[0].scopeName
ep-ip subsets[0].addresses[0].ip
ep-port subsets[0].ports[0].port
ep-protocol subsets[0].ports[0].protocol
es-type addressType
es-family endpoints[0].addresses[0]
es-empty endpoints[0].addresses
ing-pathtype spec.rules[0].http.paths[0].pathType
ing-host spec.rules[0].host
ing-port spec.rules[0].http.paths[0].backend
ic-controller spec.controller
ic-namespace spec.parameters.namespace
ic-kind spec.parameters.kind
np-port spec.ingress[0].ports[0].port
np-cidr spec.ingress[0].from[0].ipBlock.cidr
np-type spec.policyTypes[0]
10.96.0.10 spec.parentRef
10.96.0.300 metadata.name
10.96.0.11 spec.parentRef.resource
scidr-none spec.cidrs
scidr-bad spec.cidrs[0]
scidr-two spec.cidrs
pc-high value
system-mine metadata.name
pc-preempt preemptionPolicy
rtc-handler handler
rtc-overhead overhead.podFixed[cpu]
rtc-selector scheduling.nodeSelector
sc-provisioner provisioner
sc-reclaim reclaimPolicy
sc-binding volumeBindingMode
csid-fsgroup spec.fsGroupPolicy
csid-modes spec.volumeLifecycleModes
csid-token spec.tokenRequests[0].expirationSeconds
csin-nodeid spec.drivers[0].nodeID
csin-dup spec.drivers[1].name
csin-count spec.drivers[0].allocatable.count
csc-class storageClassName
csc-capacity capacity
csc-max maximumVolumeSize
va-attacher spec.attacher
va-source spec.source
va-node spec.nodeName
vac-driver driverName
vac-params parameters
vac-name driverName
csr-request spec.request
csr-signer spec.signerName
csr-usage spec.usages[0]
hpa-ref spec.scaleTargetRef.kind
hpa-max spec.maxReplicas
hpa-metric spec.metrics[0].type
'

out=$(k create -n default -f - 2>&1 <<YAML || true
apiVersion: $RBAC
kind: Role
metadata: {name: r-verbs}
rules: [{apiGroups: [""], resources: [pods], verbs: []}]
---
apiVersion: $RBAC
kind: Role
metadata: {name: r-groups}
rules: [{resources: [pods], verbs: [get]}]
---
apiVersion: $RBAC
kind: Role
metadata: {name: r-url}
rules: [{nonResourceURLs: [/healthz], verbs: [get]}]
---
apiVersion: $RBAC
kind: ClusterRole
metadata: {name: cr-verbs}
rules: [{apiGroups: [""], resources: [pods]}]
---
apiVersion: $RBAC
kind: ClusterRole
metadata: {name: cr-both}
rules: [{nonResourceURLs: [/x], resources: [pods], verbs: [get]}]
---
apiVersion: $RBAC
kind: ClusterRole
metadata: {name: cr-agg}
aggregationRule: {clusterRoleSelectors: []}
---
apiVersion: $RBAC
kind: RoleBinding
metadata: {name: rb-kind}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Foo, name: x}
---
apiVersion: $RBAC
kind: RoleBinding
metadata: {name: rb-name}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: ""}
---
apiVersion: $RBAC
kind: RoleBinding
metadata: {name: rb-subject}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}
subjects: [{kind: Robot, name: x}]
---
apiVersion: $RBAC
kind: ClusterRoleBinding
metadata: {name: crb-kind}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}
---
apiVersion: $RBAC
kind: ClusterRoleBinding
metadata: {name: crb-sa}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}
subjects: [{kind: ServiceAccount, name: sa}]
---
apiVersion: $RBAC
kind: ClusterRoleBinding
metadata: {name: crb-group}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}
subjects: [{kind: Group, name: ""}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cj-schedule}
spec: {schedule: "61 * * * *", jobTemplate: {spec: {template: $POD}}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cj-tz}
spec: {schedule: "@daily", timeZone: Mars/Olympus_Mons, jobTemplate: {spec: {template: $POD}}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cj-policy}
spec: {schedule: "@daily", concurrencyPolicy: Sometimes, jobTemplate: {spec: {template: $POD}}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cj-restart}
spec:
  schedule: "@daily"
  jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: pvc-modes}
spec: {resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: pvc-storage}
spec: {accessModes: [ReadWriteOnce]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: pvc-volmode}
spec: {accessModes: [ReadWriteOnce], volumeMode: Raw, resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-capacity}
spec: {accessModes: [ReadWriteOnce], hostPath: {path: /d}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-source}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce]}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-policy}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /d}, persistentVolumeReclaimPolicy: Keep}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc-selector}
spec: {selector: {app: db}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c, image: nginx}]}}}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc-restart}
spec: {template: {metadata: {labels: {app: web}}, spec: {restartPolicy: Never, containers: [{name: c, image: nginx}]}}}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc-replicas}
spec: {replicas: -1, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c, image: nginx}]}}}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: pt-containers}
template: {spec: {containers: []}}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: pt-image}
template: {spec: {containers: [{name: c}]}}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: pt-dns}
template: {spec: {dnsPolicy: Sometimes, containers: [{name: c, image: nginx}]}}
---
apiVersion: v1
kind: LimitRange
metadata: {name: lr-type}
spec: {limits: [{type: Node}]}
---
apiVersion: v1
kind: LimitRange
metadata: {name: lr-minmax}
spec: {limits: [{type: Container, max: {cpu: "1"}, min: {cpu: "2"}}]}
---
apiVersion: v1
kind: LimitRange
metadata: {name: lr-pod}
spec: {limits: [{type: Pod, default: {cpu: "1"}}]}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: rq-negative}
spec: {hard: {pods: "-1"}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: rq-scope}
spec: {scopes: [Sometimes]}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: rq-selector}
spec: {scopeSelector: {matchExpressions: [{scopeName: Sometimes, operator: Exists}]}}
---
apiVersion: v1
kind: Endpoints
metadata: {name: ep-ip}
subsets: [{addresses: [{ip: 10.0.0.300}]}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: ep-port}
subsets: [{addresses: [{ip: 10.0.0.1}], ports: [{port: 0}]}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: ep-protocol}
subsets: [{addresses: [{ip: 10.0.0.1}], ports: [{port: 80, protocol: ICMP}]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: es-type}
addressType: IPv5
endpoints: []
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: es-family}
addressType: IPv4
endpoints: [{addresses: ["fd00::1"]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: es-empty}
addressType: IPv4
endpoints: [{addresses: []}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing-pathtype}
spec: {rules: [{host: a.example.com, http: {paths: [{path: /, backend: {service: {name: web, port: {number: 80}}}}]}}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing-host}
spec: {rules: [{host: 10.0.0.1, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing-port}
spec: {rules: [{host: a.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web}}}]}}]}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: ic-controller}
spec: {controller: nginx}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: ic-namespace}
spec: {controller: example.com/ingress, parameters: {kind: P, name: p, scope: Namespace}}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: ic-kind}
spec: {controller: example.com/ingress, parameters: {name: p}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-port}
spec: {podSelector: {}, ingress: [{ports: [{port: 0}]}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-cidr}
spec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/33}}]}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-type}
spec: {podSelector: {}, policyTypes: [Sideways]}
---
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 10.96.0.10}
spec: {}
---
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 10.96.0.300}
spec: {parentRef: {resource: services, name: s, namespace: default}}
---
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 10.96.0.11}
spec: {parentRef: {name: s, namespace: default}}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: scidr-none}
spec: {cidrs: []}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: scidr-bad}
spec: {cidrs: [10.0.0.0]}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: scidr-two}
spec: {cidrs: [10.0.0.0/8, 11.0.0.0/8]}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: pc-high}
value: 2000000000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: system-mine}
value: 1
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: pc-preempt}
value: 1
preemptionPolicy: Sometimes
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: rtc-handler}
handler: Run_SC
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: rtc-overhead}
handler: runsc
overhead: {podFixed: {cpu: lots}}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: rtc-selector}
handler: runsc
scheduling: {nodeSelector: {"bad key!": x}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: sc-provisioner}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: sc-reclaim}
provisioner: example.com/disk
reclaimPolicy: Recycle
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: sc-binding}
provisioner: example.com/disk
volumeBindingMode: Later
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: csid-fsgroup}
spec: {fsGroupPolicy: Some}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: csid-modes}
spec: {volumeLifecycleModes: [Forever]}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: csid-token}
spec: {tokenRequests: [{audience: a, expirationSeconds: 60}]}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: csin-nodeid}
spec: {drivers: [{name: d}]}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: csin-dup}
spec: {drivers: [{name: d, nodeID: a}, {name: d, nodeID: b}]}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: csin-count}
spec: {drivers: [{name: d, nodeID: a, allocatable: {count: -1}}]}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: csc-class}
capacity: 10Gi
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: csc-capacity}
storageClassName: fast
capacity: "-1"
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: csc-max}
storageClassName: fast
maximumVolumeSize: "-5Gi"
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: va-attacher}
spec: {nodeName: node1, source: {persistentVolumeName: pv}}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: va-source}
spec: {attacher: d, nodeName: node1, source: {}}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: va-node}
spec: {attacher: d, nodeName: Bad_Node, source: {persistentVolumeName: pv}}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata: {name: vac-driver}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata: {name: vac-params}
driverName: d.example.com
parameters: {"": x}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata: {name: vac-name}
driverName: "-bad-"
---
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: csr-request}
spec: {request: $REQ, signerName: example.com/signer, usages: [client auth]}
---
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: csr-signer}
spec: {request: $REQ, signerName: signer, usages: [client auth]}
---
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: csr-usage}
spec: {request: $REQ, signerName: example.com/signer, usages: [flying]}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa-ref}
spec: {maxReplicas: 5}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa-max}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, minReplicas: 5, maxReplicas: 2}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa-metric}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, maxReplicas: 5, metrics: [{type: Magic}]}
YAML
)

[ -z "${KP_DEBUG:-}" ] || echo "$out" >&2
n=0
while read -r name field; do
  [ -n "$name" ] || continue
  line=$(grep -F "\"$name\" is invalid" <<<"$out" || true)
  [ -n "$line" ] || fail "$name: not refused as Invalid; kubectl said: $(grep -F "$name" <<<"$out" || echo nothing)"
  grep -qF -- "$field: " <<<"$line" || fail "$name: the 422 does not name $field: $line"
  n=$((n + 1))
done <<<"$EXPECT"
created=$(grep -c ' created$' <<<"$out" || true)
expect_eq "bad objects created" "$created" 0
echo "refused $n bad objects, each naming its field"

# Good objects: Kubernetes' defaults.
k apply -n default -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec: {schedule: "0 3 * * *", jobTemplate: {spec: {template: $POD}}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/disk
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny}
spec: {podSelector: {}, egress: [{ports: [{port: 53}]}]}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, maxReplicas: 5}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: $RBAC
kind: RoleBinding
metadata: {name: readers}
roleRef: {kind: Role, name: reader}
subjects: [{kind: User, name: alice}]
YAML
jp() { k get -n default "$1" -o "jsonpath=$2"; }
expect_eq "PVC volumeMode" "$(jp pvc/data '{.spec.volumeMode} {.status.phase}')" "Filesystem Pending"
expect_eq "CronJob defaults" \
  "$(jp cronjob/nightly '{.spec.concurrencyPolicy} {.spec.suspend} {.spec.successfulJobsHistoryLimit} {.spec.failedJobsHistoryLimit}')" \
  "Allow false 3 1"
expect_eq "StorageClass defaults" "$(jp storageclass/fast '{.reclaimPolicy} {.volumeBindingMode}')" \
  "Delete Immediate"
expect_eq "NetworkPolicy defaults" \
  "$(jp networkpolicy/deny '{.spec.policyTypes} {.spec.egress[0].ports[0].protocol}')" \
  '["Ingress","Egress"] TCP'
expect_eq "HPA defaults" \
  "$(jp hpa/web '{.spec.minReplicas} {.spec.metrics[0].resource.name} {.spec.metrics[0].resource.target.averageUtilization}')" \
  "1 cpu 80"
expect_eq "PriorityClass default" "$(jp priorityclass/high '{.preemptionPolicy}')" \
  "PreemptLowerPriority"
expect_eq "RoleBinding defaults" \
  "$(jp rolebinding/readers '{.roleRef.apiGroup} {.subjects[0].apiGroup}')" \
  "rbac.authorization.k8s.io rbac.authorization.k8s.io"

# Updates: the immutable fields.
out=$(k patch -n default rolebinding/readers --type=merge -p '{"roleRef":{"name":"writer"}}' 2>&1 || true)
expect_match "roleRef change" "$out" 'roleRef: Invalid value: .*cannot change roleRef'
out=$(k patch storageclass/fast --type=merge -p '{"parameters":{"type":"ssd"}}' 2>&1 || true)
expect_match "StorageClass parameters" "$out" 'parameters: Forbidden: updates to parameters are forbidden'
out=$(k patch -n default pvc/data --type=merge -p '{"spec":{"accessModes":["ReadWriteMany"]}}' 2>&1 || true)
expect_match "PVC spec" "$out" 'spec: Forbidden: spec is immutable after creation'
out=$(k patch priorityclass/high --type=merge -p '{"value":2000}' 2>&1 || true)
expect_match "PriorityClass value" "$out" 'value: Forbidden: may not be changed in an update'
echo "defaults and immutable fields as Kubernetes has them"
