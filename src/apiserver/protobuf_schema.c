/*
 * protobuf_schema.c -- the protobuf messages api_pb_decode() reads: facts
 * only, one block per message, one line per field {number, JSON name, kind,
 * flags, message type}. protobuf_schema.h says what kinds and flags mean.
 *
 * WHERE THE FACTS COME FROM
 *   Numbers, names, types, `repeated` and `map`: the generated.proto files of
 *   k8s.io/api core/v1 (Namespace, ConfigMap, Secret, ServiceAccount, Service,
 *   ResourceQuota, Binding, PodTemplateSpec, PodSpec, Container and all they
 *   reach), apps/v1 (Deployment, DeploymentSpec, DeploymentStrategy,
 *   RollingUpdateDeployment, DeploymentStatus, DeploymentCondition), batch/v1
 *   (Job, JobSpec, JobStatus, JobCondition, PodFailurePolicy*, SuccessPolicy*,
 *   UncountedTerminatedPods, CronJob, CronJobSpec, JobTemplateSpec,
 *   CronJobStatus) and policy/v1 (Eviction), and of k8s.io/apimachinery
 *   pkg/apis/meta/v1 (ObjectMeta, OwnerReference, ManagedFieldsEntry,
 *   FieldsV1, LabelSelector, LabelSelectorRequirement, Condition,
 *   DeleteOptions, Preconditions, Time), pkg/util/intstr (IntOrString) and
 *   pkg/api/resource (Quantity): Kubernetes 1.32, plus the 1.33 additions
 *   Lifecycle.stopSignal and DeploymentStatus.terminatingReplicas.
 *   API_PB_KEEP and API_PB_INLINE come from the Go structs in the types.go
 *   beside each generated.proto: a pointer field or a json tag without
 *   omitempty is KEEP; an embedded struct tagged json:",inline" is INLINE.
 *
 *   Not covered, on purpose: the in-tree volume plugins of VolumeSource
 *   (gcePersistentDisk, awsElasticBlockStore, gitRepo, iscsi, glusterfs, rbd,
 *   flexVolume, cinder, cephfs, flocker, fc, azureFile, vsphereVolume, quobyte,
 *   azureDisk, photonPersistentDisk, portworxVolume, scaleIO, storageos). A
 *   body using one fails with "unknown field N in VolumeSource" rather than
 *   losing it.
 *
 * HOW TO EXTEND
 *   1. Copy the message's fields from its generated.proto, in that order, one
 *      line each: the number, the name (Kubernetes' JSON name is the proto
 *      name), the kind: string, bytes, bool, int32, int64; another message;
 *      map<string, string|bytes|Quantity> is API_PB_MAP with api_pb__map_string,
 *      api_pb__map_bytes or api_pb__map_quantity; meta/v1 Time, intstr IntOrString,
 *      resource Quantity and meta/v1 FieldsV1 have kinds of their own.
 *   2. Flags, from the Go struct in types.go: API_PB_REP for `repeated` (not
 *      for maps); API_PB_KEEP when the Go field is a pointer (*int32, *bool,
 *      *string, *SomeStringType) or its json tag has no omitempty
 *      (`json:"name"`); API_PB_INLINE for an embedded struct tagged
 *      `json:",inline"`.
 *   3. Declare every new message in protobuf_schema_int.h: messages refer to
 *      each other by address, in any order. The pod spec tree lives in
 *      protobuf_schema_pod.c, everything else here.
 *   4. A new top-level kind also gets a line in roots[] at the end.
 *   tests/apiserver/test_protobuf.c checks the table's shape (unique numbers
 *   and names, map entries, flags that fit the kind).
 */
#include <stddef.h>
#include <string.h>

#include "apiserver/protobuf_schema.h"
#include "apiserver/protobuf_schema_int.h"

/* Every message is declared in protobuf_schema_int.h: they refer to each other
 * by address, in any order, across the schema files. */

/* map<string, V> entries {1: key, 2: value}: keys and values are kept even
 * when empty. */
static const api_pb_field_t f_map_string[] = {
    {1, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "value", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__map_string = API_PB_MSG("map<string, string> entry", f_map_string);

static const api_pb_field_t f_map_bytes[] = {
    {1, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "value", API_PB_BYTES, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__map_bytes = API_PB_MSG("map<string, bytes> entry", f_map_bytes);

static const api_pb_field_t f_map_quantity[] = {
    {1, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "value", API_PB_QUANTITY, 0, NULL},
};
const api_pb_msg_t api_pb__map_quantity =
    API_PB_MSG("map<string, Quantity> entry", f_map_quantity);

/* core/v1 Namespace */
static const api_pb_field_t f_core_Namespace[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &api_pb__core_NamespaceSpec},
    {3, "status", API_PB_MESSAGE, 0, &api_pb__core_NamespaceStatus},
};
const api_pb_msg_t api_pb__core_Namespace = API_PB_MSG("Namespace", f_core_Namespace);

/* meta/v1 ObjectMeta */
static const api_pb_field_t f_meta_ObjectMeta[] = {
    {1, "name", API_PB_STRING, 0, NULL},
    {2, "generateName", API_PB_STRING, 0, NULL},
    {3, "namespace", API_PB_STRING, 0, NULL},
    {4, "selfLink", API_PB_STRING, 0, NULL},
    {5, "uid", API_PB_STRING, 0, NULL},
    {6, "resourceVersion", API_PB_STRING, 0, NULL},
    {7, "generation", API_PB_INT64, 0, NULL},
    {8, "creationTimestamp", API_PB_TIME, 0, NULL},
    {9, "deletionTimestamp", API_PB_TIME, 0, NULL},
    {10, "deletionGracePeriodSeconds", API_PB_INT64, API_PB_KEEP, NULL},
    {11, "labels", API_PB_MAP, 0, &api_pb__map_string},
    {12, "annotations", API_PB_MAP, 0, &api_pb__map_string},
    {13, "ownerReferences", API_PB_MESSAGE, API_PB_REP, &api_pb__meta_OwnerReference},
    {14, "finalizers", API_PB_STRING, API_PB_REP, NULL},
    {17, "managedFields", API_PB_MESSAGE, API_PB_REP, &api_pb__meta_ManagedFieldsEntry},
};
const api_pb_msg_t api_pb__meta_ObjectMeta = API_PB_MSG("ObjectMeta", f_meta_ObjectMeta);

/* meta/v1 OwnerReference */
static const api_pb_field_t f_meta_OwnerReference[] = {
    {5, "apiVersion", API_PB_STRING, API_PB_KEEP, NULL},
    {1, "kind", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "uid", API_PB_STRING, API_PB_KEEP, NULL},
    {6, "controller", API_PB_BOOL, API_PB_KEEP, NULL},
    {7, "blockOwnerDeletion", API_PB_BOOL, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__meta_OwnerReference =
    API_PB_MSG("OwnerReference", f_meta_OwnerReference);

/* meta/v1 ManagedFieldsEntry */
static const api_pb_field_t f_meta_ManagedFieldsEntry[] = {
    {1, "manager", API_PB_STRING, 0, NULL},     {2, "operation", API_PB_STRING, 0, NULL},
    {3, "apiVersion", API_PB_STRING, 0, NULL},  {4, "time", API_PB_TIME, 0, NULL},
    {6, "fieldsType", API_PB_STRING, 0, NULL},  {7, "fieldsV1", API_PB_FIELDSV1, 0, NULL},
    {8, "subresource", API_PB_STRING, 0, NULL},
};
const api_pb_msg_t api_pb__meta_ManagedFieldsEntry =
    API_PB_MSG("ManagedFieldsEntry", f_meta_ManagedFieldsEntry);

/* core/v1 NamespaceSpec */
static const api_pb_field_t f_core_NamespaceSpec[] = {
    {1, "finalizers", API_PB_STRING, API_PB_REP, NULL},
};
const api_pb_msg_t api_pb__core_NamespaceSpec = API_PB_MSG("NamespaceSpec", f_core_NamespaceSpec);

/* core/v1 NamespaceStatus */
static const api_pb_field_t f_core_NamespaceStatus[] = {
    {1, "phase", API_PB_STRING, 0, NULL},
    {2, "conditions", API_PB_MESSAGE, API_PB_REP, &api_pb__core_NamespaceCondition},
};
const api_pb_msg_t api_pb__core_NamespaceStatus =
    API_PB_MSG("NamespaceStatus", f_core_NamespaceStatus);

/* core/v1 NamespaceCondition */
static const api_pb_field_t f_core_NamespaceCondition[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "status", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "lastTransitionTime", API_PB_TIME, 0, NULL},
    {5, "reason", API_PB_STRING, 0, NULL},
    {6, "message", API_PB_STRING, 0, NULL},
};
const api_pb_msg_t api_pb__core_NamespaceCondition =
    API_PB_MSG("NamespaceCondition", f_core_NamespaceCondition);

/* core/v1 ConfigMap */
static const api_pb_field_t f_core_ConfigMap[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {4, "immutable", API_PB_BOOL, API_PB_KEEP, NULL},
    {2, "data", API_PB_MAP, 0, &api_pb__map_string},
    {3, "binaryData", API_PB_MAP, 0, &api_pb__map_bytes},
};
const api_pb_msg_t api_pb__core_ConfigMap = API_PB_MSG("ConfigMap", f_core_ConfigMap);

/* core/v1 Secret */
static const api_pb_field_t f_core_Secret[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {5, "immutable", API_PB_BOOL, API_PB_KEEP, NULL},
    {2, "data", API_PB_MAP, 0, &api_pb__map_bytes},
    {4, "stringData", API_PB_MAP, 0, &api_pb__map_string},
    {3, "type", API_PB_STRING, 0, NULL},
};
const api_pb_msg_t api_pb__core_Secret = API_PB_MSG("Secret", f_core_Secret);

/* core/v1 ServiceAccount */
static const api_pb_field_t f_core_ServiceAccount[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {2, "secrets", API_PB_MESSAGE, API_PB_REP, &api_pb__core_ObjectReference},
    {3, "imagePullSecrets", API_PB_MESSAGE, API_PB_REP, &api_pb__core_LocalObjectReference},
    {4, "automountServiceAccountToken", API_PB_BOOL, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_ServiceAccount =
    API_PB_MSG("ServiceAccount", f_core_ServiceAccount);

/* core/v1 ObjectReference */
static const api_pb_field_t f_core_ObjectReference[] = {
    {1, "kind", API_PB_STRING, 0, NULL},       {2, "namespace", API_PB_STRING, 0, NULL},
    {3, "name", API_PB_STRING, 0, NULL},       {4, "uid", API_PB_STRING, 0, NULL},
    {5, "apiVersion", API_PB_STRING, 0, NULL}, {6, "resourceVersion", API_PB_STRING, 0, NULL},
    {7, "fieldPath", API_PB_STRING, 0, NULL},
};
const api_pb_msg_t api_pb__core_ObjectReference =
    API_PB_MSG("ObjectReference", f_core_ObjectReference);

/* core/v1 LocalObjectReference */
static const api_pb_field_t f_core_LocalObjectReference[] = {
    {1, "name", API_PB_STRING, 0, NULL},
};
const api_pb_msg_t api_pb__core_LocalObjectReference =
    API_PB_MSG("LocalObjectReference", f_core_LocalObjectReference);

/* core/v1 Service */
static const api_pb_field_t f_core_Service[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &api_pb__core_ServiceSpec},
    {3, "status", API_PB_MESSAGE, 0, &api_pb__core_ServiceStatus},
};
const api_pb_msg_t api_pb__core_Service = API_PB_MSG("Service", f_core_Service);

/* core/v1 ServiceSpec */
static const api_pb_field_t f_core_ServiceSpec[] = {
    {1, "ports", API_PB_MESSAGE, API_PB_REP, &api_pb__core_ServicePort},
    {2, "selector", API_PB_MAP, 0, &api_pb__map_string},
    {3, "clusterIP", API_PB_STRING, 0, NULL},
    {18, "clusterIPs", API_PB_STRING, API_PB_REP, NULL},
    {4, "type", API_PB_STRING, 0, NULL},
    {5, "externalIPs", API_PB_STRING, API_PB_REP, NULL},
    {7, "sessionAffinity", API_PB_STRING, 0, NULL},
    {8, "loadBalancerIP", API_PB_STRING, 0, NULL},
    {9, "loadBalancerSourceRanges", API_PB_STRING, API_PB_REP, NULL},
    {10, "externalName", API_PB_STRING, 0, NULL},
    {11, "externalTrafficPolicy", API_PB_STRING, 0, NULL},
    {12, "healthCheckNodePort", API_PB_INT32, 0, NULL},
    {13, "publishNotReadyAddresses", API_PB_BOOL, 0, NULL},
    {14, "sessionAffinityConfig", API_PB_MESSAGE, 0, &api_pb__core_SessionAffinityConfig},
    {19, "ipFamilies", API_PB_STRING, API_PB_REP, NULL},
    {17, "ipFamilyPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {20, "allocateLoadBalancerNodePorts", API_PB_BOOL, API_PB_KEEP, NULL},
    {21, "loadBalancerClass", API_PB_STRING, API_PB_KEEP, NULL},
    {22, "internalTrafficPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {23, "trafficDistribution", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_ServiceSpec = API_PB_MSG("ServiceSpec", f_core_ServiceSpec);

/* core/v1 ServicePort */
static const api_pb_field_t f_core_ServicePort[] = {
    {1, "name", API_PB_STRING, 0, NULL},
    {2, "protocol", API_PB_STRING, 0, NULL},
    {6, "appProtocol", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "port", API_PB_INT32, API_PB_KEEP, NULL},
    {4, "targetPort", API_PB_INTORSTR, 0, NULL},
    {5, "nodePort", API_PB_INT32, 0, NULL},
};
const api_pb_msg_t api_pb__core_ServicePort = API_PB_MSG("ServicePort", f_core_ServicePort);

/* core/v1 SessionAffinityConfig */
static const api_pb_field_t f_core_SessionAffinityConfig[] = {
    {1, "clientIP", API_PB_MESSAGE, 0, &api_pb__core_ClientIPConfig},
};
const api_pb_msg_t api_pb__core_SessionAffinityConfig =
    API_PB_MSG("SessionAffinityConfig", f_core_SessionAffinityConfig);

/* core/v1 ClientIPConfig */
static const api_pb_field_t f_core_ClientIPConfig[] = {
    {1, "timeoutSeconds", API_PB_INT32, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_ClientIPConfig =
    API_PB_MSG("ClientIPConfig", f_core_ClientIPConfig);

/* core/v1 ServiceStatus */
static const api_pb_field_t f_core_ServiceStatus[] = {
    {1, "loadBalancer", API_PB_MESSAGE, 0, &api_pb__core_LoadBalancerStatus},
    {2, "conditions", API_PB_MESSAGE, API_PB_REP, &api_pb__meta_Condition},
};
const api_pb_msg_t api_pb__core_ServiceStatus = API_PB_MSG("ServiceStatus", f_core_ServiceStatus);

/* core/v1 LoadBalancerStatus */
static const api_pb_field_t f_core_LoadBalancerStatus[] = {
    {1, "ingress", API_PB_MESSAGE, API_PB_REP, &api_pb__core_LoadBalancerIngress},
};
const api_pb_msg_t api_pb__core_LoadBalancerStatus =
    API_PB_MSG("LoadBalancerStatus", f_core_LoadBalancerStatus);

/* core/v1 LoadBalancerIngress */
static const api_pb_field_t f_core_LoadBalancerIngress[] = {
    {1, "ip", API_PB_STRING, 0, NULL},
    {2, "hostname", API_PB_STRING, 0, NULL},
    {3, "ipMode", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "ports", API_PB_MESSAGE, API_PB_REP, &api_pb__core_PortStatus},
};
const api_pb_msg_t api_pb__core_LoadBalancerIngress =
    API_PB_MSG("LoadBalancerIngress", f_core_LoadBalancerIngress);

/* core/v1 PortStatus */
static const api_pb_field_t f_core_PortStatus[] = {
    {1, "port", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "protocol", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "error", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_PortStatus = API_PB_MSG("PortStatus", f_core_PortStatus);

/* meta/v1 Condition */
static const api_pb_field_t f_meta_Condition[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "status", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "observedGeneration", API_PB_INT64, 0, NULL},
    {4, "lastTransitionTime", API_PB_TIME, 0, NULL},
    {5, "reason", API_PB_STRING, API_PB_KEEP, NULL},
    {6, "message", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__meta_Condition = API_PB_MSG("Condition", f_meta_Condition);

/* core/v1 ResourceQuota */
static const api_pb_field_t f_core_ResourceQuota[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &api_pb__core_ResourceQuotaSpec},
    {3, "status", API_PB_MESSAGE, 0, &api_pb__core_ResourceQuotaStatus},
};
const api_pb_msg_t api_pb__core_ResourceQuota = API_PB_MSG("ResourceQuota", f_core_ResourceQuota);

/* core/v1 ResourceQuotaSpec */
static const api_pb_field_t f_core_ResourceQuotaSpec[] = {
    {1, "hard", API_PB_MAP, 0, &api_pb__map_quantity},
    {2, "scopes", API_PB_STRING, API_PB_REP, NULL},
    {3, "scopeSelector", API_PB_MESSAGE, 0, &api_pb__core_ScopeSelector},
};
const api_pb_msg_t api_pb__core_ResourceQuotaSpec =
    API_PB_MSG("ResourceQuotaSpec", f_core_ResourceQuotaSpec);

/* core/v1 ScopeSelector */
static const api_pb_field_t f_core_ScopeSelector[] = {
    {1, "matchExpressions", API_PB_MESSAGE, API_PB_REP, &api_pb__core_ScopedResourceSelectorRequirement},
};
const api_pb_msg_t api_pb__core_ScopeSelector = API_PB_MSG("ScopeSelector", f_core_ScopeSelector);

/* core/v1 ScopedResourceSelectorRequirement */
static const api_pb_field_t f_core_ScopedResourceSelectorRequirement[] = {
    {1, "scopeName", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "operator", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "values", API_PB_STRING, API_PB_REP, NULL},
};
const api_pb_msg_t api_pb__core_ScopedResourceSelectorRequirement =
    API_PB_MSG("ScopedResourceSelectorRequirement", f_core_ScopedResourceSelectorRequirement);

/* core/v1 ResourceQuotaStatus */
static const api_pb_field_t f_core_ResourceQuotaStatus[] = {
    {1, "hard", API_PB_MAP, 0, &api_pb__map_quantity},
    {2, "used", API_PB_MAP, 0, &api_pb__map_quantity},
};
const api_pb_msg_t api_pb__core_ResourceQuotaStatus =
    API_PB_MSG("ResourceQuotaStatus", f_core_ResourceQuotaStatus);

/* apps/v1 Deployment */
static const api_pb_field_t f_apps_Deployment[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &api_pb__apps_DeploymentSpec},
    {3, "status", API_PB_MESSAGE, 0, &api_pb__apps_DeploymentStatus},
};
const api_pb_msg_t api_pb__apps_Deployment = API_PB_MSG("Deployment", f_apps_Deployment);

/* apps/v1 DeploymentSpec */
static const api_pb_field_t f_apps_DeploymentSpec[] = {
    {1, "replicas", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "selector", API_PB_MESSAGE, 0, &api_pb__meta_LabelSelector},
    {3, "template", API_PB_MESSAGE, 0, &api_pb__core_PodTemplateSpec},
    {4, "strategy", API_PB_MESSAGE, 0, &api_pb__apps_DeploymentStrategy},
    {5, "minReadySeconds", API_PB_INT32, 0, NULL},
    {6, "revisionHistoryLimit", API_PB_INT32, API_PB_KEEP, NULL},
    {7, "paused", API_PB_BOOL, 0, NULL},
    {9, "progressDeadlineSeconds", API_PB_INT32, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__apps_DeploymentSpec =
    API_PB_MSG("DeploymentSpec", f_apps_DeploymentSpec);

/* meta/v1 LabelSelector */
static const api_pb_field_t f_meta_LabelSelector[] = {
    {1, "matchLabels", API_PB_MAP, 0, &api_pb__map_string},
    {2, "matchExpressions", API_PB_MESSAGE, API_PB_REP, &api_pb__meta_LabelSelectorRequirement},
};
const api_pb_msg_t api_pb__meta_LabelSelector = API_PB_MSG("LabelSelector", f_meta_LabelSelector);

/* meta/v1 LabelSelectorRequirement */
static const api_pb_field_t f_meta_LabelSelectorRequirement[] = {
    {1, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "operator", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "values", API_PB_STRING, API_PB_REP, NULL},
};
const api_pb_msg_t api_pb__meta_LabelSelectorRequirement =
    API_PB_MSG("LabelSelectorRequirement", f_meta_LabelSelectorRequirement);

/* apps/v1 DeploymentStrategy */
static const api_pb_field_t f_apps_DeploymentStrategy[] = {
    {1, "type", API_PB_STRING, 0, NULL},
    {2, "rollingUpdate", API_PB_MESSAGE, 0, &api_pb__apps_RollingUpdateDeployment},
};
const api_pb_msg_t api_pb__apps_DeploymentStrategy =
    API_PB_MSG("DeploymentStrategy", f_apps_DeploymentStrategy);

/* apps/v1 RollingUpdateDeployment */
static const api_pb_field_t f_apps_RollingUpdateDeployment[] = {
    {1, "maxUnavailable", API_PB_INTORSTR, 0, NULL},
    {2, "maxSurge", API_PB_INTORSTR, 0, NULL},
};
const api_pb_msg_t api_pb__apps_RollingUpdateDeployment =
    API_PB_MSG("RollingUpdateDeployment", f_apps_RollingUpdateDeployment);

/* apps/v1 DeploymentStatus */
static const api_pb_field_t f_apps_DeploymentStatus[] = {
    {1, "observedGeneration", API_PB_INT64, 0, NULL},
    {2, "replicas", API_PB_INT32, 0, NULL},
    {3, "updatedReplicas", API_PB_INT32, 0, NULL},
    {7, "readyReplicas", API_PB_INT32, 0, NULL},
    {4, "availableReplicas", API_PB_INT32, 0, NULL},
    {5, "unavailableReplicas", API_PB_INT32, 0, NULL},
    {6, "conditions", API_PB_MESSAGE, API_PB_REP, &api_pb__apps_DeploymentCondition},
    {8, "collisionCount", API_PB_INT32, API_PB_KEEP, NULL},
    {9, "terminatingReplicas", API_PB_INT32, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__apps_DeploymentStatus =
    API_PB_MSG("DeploymentStatus", f_apps_DeploymentStatus);

/* apps/v1 DeploymentCondition */
static const api_pb_field_t f_apps_DeploymentCondition[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL}, {2, "status", API_PB_STRING, API_PB_KEEP, NULL},
    {6, "lastUpdateTime", API_PB_TIME, 0, NULL},   {7, "lastTransitionTime", API_PB_TIME, 0, NULL},
    {4, "reason", API_PB_STRING, 0, NULL},         {5, "message", API_PB_STRING, 0, NULL},
};
const api_pb_msg_t api_pb__apps_DeploymentCondition =
    API_PB_MSG("DeploymentCondition", f_apps_DeploymentCondition);

/* batch/v1 Job */
static const api_pb_field_t f_batch_Job[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &api_pb__batch_JobSpec},
    {3, "status", API_PB_MESSAGE, 0, &api_pb__batch_JobStatus},
};
const api_pb_msg_t api_pb__batch_Job = API_PB_MSG("Job", f_batch_Job);

/* batch/v1 JobSpec */
static const api_pb_field_t f_batch_JobSpec[] = {
    {1, "parallelism", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "completions", API_PB_INT32, API_PB_KEEP, NULL},
    {3, "activeDeadlineSeconds", API_PB_INT64, API_PB_KEEP, NULL},
    {11, "podFailurePolicy", API_PB_MESSAGE, 0, &api_pb__batch_PodFailurePolicy},
    {16, "successPolicy", API_PB_MESSAGE, 0, &api_pb__batch_SuccessPolicy},
    {7, "backoffLimit", API_PB_INT32, API_PB_KEEP, NULL},
    {12, "backoffLimitPerIndex", API_PB_INT32, API_PB_KEEP, NULL},
    {13, "maxFailedIndexes", API_PB_INT32, API_PB_KEEP, NULL},
    {4, "selector", API_PB_MESSAGE, 0, &api_pb__meta_LabelSelector},
    {5, "manualSelector", API_PB_BOOL, API_PB_KEEP, NULL},
    {6, "template", API_PB_MESSAGE, 0, &api_pb__core_PodTemplateSpec},
    {8, "ttlSecondsAfterFinished", API_PB_INT32, API_PB_KEEP, NULL},
    {9, "completionMode", API_PB_STRING, API_PB_KEEP, NULL},
    {10, "suspend", API_PB_BOOL, API_PB_KEEP, NULL},
    {14, "podReplacementPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {15, "managedBy", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__batch_JobSpec = API_PB_MSG("JobSpec", f_batch_JobSpec);

/* batch/v1 PodFailurePolicy */
static const api_pb_field_t f_batch_PodFailurePolicy[] = {
    {1, "rules", API_PB_MESSAGE, API_PB_REP, &api_pb__batch_PodFailurePolicyRule},
};
const api_pb_msg_t api_pb__batch_PodFailurePolicy =
    API_PB_MSG("PodFailurePolicy", f_batch_PodFailurePolicy);

/* batch/v1 PodFailurePolicyRule */
static const api_pb_field_t f_batch_PodFailurePolicyRule[] = {
    {1, "action", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "onExitCodes", API_PB_MESSAGE, 0, &api_pb__batch_PodFailurePolicyOnExitCodesRequirement},
    {3, "onPodConditions", API_PB_MESSAGE, API_PB_REP,
     &api_pb__batch_PodFailurePolicyOnPodConditionsPattern},
};
const api_pb_msg_t api_pb__batch_PodFailurePolicyRule =
    API_PB_MSG("PodFailurePolicyRule", f_batch_PodFailurePolicyRule);

/* batch/v1 PodFailurePolicyOnExitCodesRequirement */
static const api_pb_field_t f_batch_PodFailurePolicyOnExitCodesRequirement[] = {
    {1, "containerName", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "operator", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "values", API_PB_INT32, API_PB_REP, NULL},
};
const api_pb_msg_t api_pb__batch_PodFailurePolicyOnExitCodesRequirement = API_PB_MSG(
    "PodFailurePolicyOnExitCodesRequirement", f_batch_PodFailurePolicyOnExitCodesRequirement);

/* batch/v1 PodFailurePolicyOnPodConditionsPattern */
static const api_pb_field_t f_batch_PodFailurePolicyOnPodConditionsPattern[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "status", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__batch_PodFailurePolicyOnPodConditionsPattern = API_PB_MSG(
    "PodFailurePolicyOnPodConditionsPattern", f_batch_PodFailurePolicyOnPodConditionsPattern);

/* batch/v1 SuccessPolicy */
static const api_pb_field_t f_batch_SuccessPolicy[] = {
    {1, "rules", API_PB_MESSAGE, API_PB_REP, &api_pb__batch_SuccessPolicyRule},
};
const api_pb_msg_t api_pb__batch_SuccessPolicy =
    API_PB_MSG("SuccessPolicy", f_batch_SuccessPolicy);

/* batch/v1 SuccessPolicyRule */
static const api_pb_field_t f_batch_SuccessPolicyRule[] = {
    {1, "succeededIndexes", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "succeededCount", API_PB_INT32, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__batch_SuccessPolicyRule =
    API_PB_MSG("SuccessPolicyRule", f_batch_SuccessPolicyRule);

/* batch/v1 JobStatus */
static const api_pb_field_t f_batch_JobStatus[] = {
    {1, "conditions", API_PB_MESSAGE, API_PB_REP, &api_pb__batch_JobCondition},
    {2, "startTime", API_PB_TIME, 0, NULL},
    {3, "completionTime", API_PB_TIME, 0, NULL},
    {4, "active", API_PB_INT32, 0, NULL},
    {5, "succeeded", API_PB_INT32, 0, NULL},
    {6, "failed", API_PB_INT32, 0, NULL},
    {11, "terminating", API_PB_INT32, API_PB_KEEP, NULL},
    {7, "completedIndexes", API_PB_STRING, 0, NULL},
    {10, "failedIndexes", API_PB_STRING, API_PB_KEEP, NULL},
    {8, "uncountedTerminatedPods", API_PB_MESSAGE, 0, &api_pb__batch_UncountedTerminatedPods},
    {9, "ready", API_PB_INT32, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__batch_JobStatus = API_PB_MSG("JobStatus", f_batch_JobStatus);

/* batch/v1 JobCondition */
static const api_pb_field_t f_batch_JobCondition[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL}, {2, "status", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "lastProbeTime", API_PB_TIME, 0, NULL},    {4, "lastTransitionTime", API_PB_TIME, 0, NULL},
    {5, "reason", API_PB_STRING, 0, NULL},         {6, "message", API_PB_STRING, 0, NULL},
};
const api_pb_msg_t api_pb__batch_JobCondition = API_PB_MSG("JobCondition", f_batch_JobCondition);

/* batch/v1 UncountedTerminatedPods */
static const api_pb_field_t f_batch_UncountedTerminatedPods[] = {
    {1, "succeeded", API_PB_STRING, API_PB_REP, NULL},
    {2, "failed", API_PB_STRING, API_PB_REP, NULL},
};
const api_pb_msg_t api_pb__batch_UncountedTerminatedPods =
    API_PB_MSG("UncountedTerminatedPods", f_batch_UncountedTerminatedPods);

/* batch/v1 CronJob */
static const api_pb_field_t f_batch_CronJob[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &api_pb__batch_CronJobSpec},
    {3, "status", API_PB_MESSAGE, 0, &api_pb__batch_CronJobStatus},
};
const api_pb_msg_t api_pb__batch_CronJob = API_PB_MSG("CronJob", f_batch_CronJob);

/* batch/v1 CronJobSpec */
static const api_pb_field_t f_batch_CronJobSpec[] = {
    {1, "schedule", API_PB_STRING, API_PB_KEEP, NULL},
    {8, "timeZone", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "startingDeadlineSeconds", API_PB_INT64, API_PB_KEEP, NULL},
    {3, "concurrencyPolicy", API_PB_STRING, 0, NULL},
    {4, "suspend", API_PB_BOOL, API_PB_KEEP, NULL},
    {5, "jobTemplate", API_PB_MESSAGE, 0, &api_pb__batch_JobTemplateSpec},
    {6, "successfulJobsHistoryLimit", API_PB_INT32, API_PB_KEEP, NULL},
    {7, "failedJobsHistoryLimit", API_PB_INT32, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__batch_CronJobSpec = API_PB_MSG("CronJobSpec", f_batch_CronJobSpec);

/* batch/v1 JobTemplateSpec */
static const api_pb_field_t f_batch_JobTemplateSpec[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &api_pb__batch_JobSpec},
};
const api_pb_msg_t api_pb__batch_JobTemplateSpec =
    API_PB_MSG("JobTemplateSpec", f_batch_JobTemplateSpec);

/* batch/v1 CronJobStatus */
static const api_pb_field_t f_batch_CronJobStatus[] = {
    {1, "active", API_PB_MESSAGE, API_PB_REP, &api_pb__core_ObjectReference},
    {4, "lastScheduleTime", API_PB_TIME, 0, NULL},
    {5, "lastSuccessfulTime", API_PB_TIME, 0, NULL},
};
const api_pb_msg_t api_pb__batch_CronJobStatus =
    API_PB_MSG("CronJobStatus", f_batch_CronJobStatus);

/* core/v1 Binding */
static const api_pb_field_t f_core_Binding[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {2, "target", API_PB_MESSAGE, 0, &api_pb__core_ObjectReference},
};
const api_pb_msg_t api_pb__core_Binding = API_PB_MSG("Binding", f_core_Binding);

/* policy/v1 Eviction */
static const api_pb_field_t f_policy_Eviction[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {2, "deleteOptions", API_PB_MESSAGE, 0, &api_pb__meta_DeleteOptions},
};
const api_pb_msg_t api_pb__policy_Eviction = API_PB_MSG("Eviction", f_policy_Eviction);

/* meta/v1 DeleteOptions */
static const api_pb_field_t f_meta_DeleteOptions[] = {
    {1, "gracePeriodSeconds", API_PB_INT64, API_PB_KEEP, NULL},
    {2, "preconditions", API_PB_MESSAGE, 0, &api_pb__meta_Preconditions},
    {3, "orphanDependents", API_PB_BOOL, API_PB_KEEP, NULL},
    {4, "propagationPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {5, "dryRun", API_PB_STRING, API_PB_REP, NULL},
    {6, "ignoreStoreReadErrorWithClusterBreakingPotential", API_PB_BOOL, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__meta_DeleteOptions = API_PB_MSG("DeleteOptions", f_meta_DeleteOptions);

/* meta/v1 Preconditions */
static const api_pb_field_t f_meta_Preconditions[] = {
    {1, "uid", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "resourceVersion", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__meta_Preconditions = API_PB_MSG("Preconditions", f_meta_Preconditions);

/* ---- top-level kinds ---- */

static const api_pb_root_t roots[] = {
    {"v1", "Binding", &api_pb__core_Binding},
    {"v1", "ConfigMap", &api_pb__core_ConfigMap},
    {"v1", "Namespace", &api_pb__core_Namespace},
    {"v1", "ResourceQuota", &api_pb__core_ResourceQuota},
    {"v1", "Secret", &api_pb__core_Secret},
    {"v1", "Service", &api_pb__core_Service},
    {"v1", "ServiceAccount", &api_pb__core_ServiceAccount},
    {"apps/v1", "Deployment", &api_pb__apps_Deployment},
    {"batch/v1", "CronJob", &api_pb__batch_CronJob},
    {"batch/v1", "Job", &api_pb__batch_Job},
    {"policy/v1", "Eviction", &api_pb__policy_Eviction},
    /* policy/v1beta1 Eviction has the same fields; kubectl drain falls back
     * to it on servers without policy/v1 */
    {"policy/v1beta1", "Eviction", &api_pb__policy_Eviction},
};

const api_pb_root_t *api__pb_root_find(const char *api_version, const char *kind)
{
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
        if (!strcmp(roots[i].api_version, api_version) && !strcmp(roots[i].kind, kind))
            return &roots[i];
    return NULL;
}

const api_pb_root_t *api__pb_root_at(size_t i)
{
    return i < sizeof roots / sizeof roots[0] ? &roots[i] : NULL;
}
