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
 *      map<string, string|bytes|Quantity> is API_PB_MAP with m_map_string,
 *      m_map_bytes or m_map_quantity; meta/v1 Time, intstr IntOrString,
 *      resource Quantity and meta/v1 FieldsV1 have kinds of their own.
 *   2. Flags, from the Go struct in types.go: API_PB_REP for `repeated` (not
 *      for maps); API_PB_KEEP when the Go field is a pointer (*int32, *bool,
 *      *string, *SomeStringType) or its json tag has no omitempty
 *      (`json:"name"`); API_PB_INLINE for an embedded struct tagged
 *      `json:",inline"`.
 *   3. Declare every new message in the list below: messages refer to each
 *      other by address, in any order.
 *   4. A new top-level kind also gets a line in roots[] at the end.
 *   tests/apiserver/test_protobuf.c checks the table's shape (unique numbers
 *   and names, map entries, flags that fit the kind).
 */
#include <stddef.h>
#include <string.h>

#include "apiserver/protobuf_schema.h"

static const api_pb_msg_t m_map_string;
static const api_pb_msg_t m_map_bytes;
static const api_pb_msg_t m_map_quantity;
static const api_pb_msg_t m_core_Namespace;
static const api_pb_msg_t m_meta_ObjectMeta;
static const api_pb_msg_t m_meta_OwnerReference;
static const api_pb_msg_t m_meta_ManagedFieldsEntry;
static const api_pb_msg_t m_core_NamespaceSpec;
static const api_pb_msg_t m_core_NamespaceStatus;
static const api_pb_msg_t m_core_NamespaceCondition;
static const api_pb_msg_t m_core_ConfigMap;
static const api_pb_msg_t m_core_Secret;
static const api_pb_msg_t m_core_ServiceAccount;
static const api_pb_msg_t m_core_ObjectReference;
static const api_pb_msg_t m_core_LocalObjectReference;
static const api_pb_msg_t m_core_Service;
static const api_pb_msg_t m_core_ServiceSpec;
static const api_pb_msg_t m_core_ServicePort;
static const api_pb_msg_t m_core_SessionAffinityConfig;
static const api_pb_msg_t m_core_ClientIPConfig;
static const api_pb_msg_t m_core_ServiceStatus;
static const api_pb_msg_t m_core_LoadBalancerStatus;
static const api_pb_msg_t m_core_LoadBalancerIngress;
static const api_pb_msg_t m_core_PortStatus;
static const api_pb_msg_t m_meta_Condition;
static const api_pb_msg_t m_core_ResourceQuota;
static const api_pb_msg_t m_core_ResourceQuotaSpec;
static const api_pb_msg_t m_core_ScopeSelector;
static const api_pb_msg_t m_core_ScopedResourceSelectorRequirement;
static const api_pb_msg_t m_core_ResourceQuotaStatus;
static const api_pb_msg_t m_apps_Deployment;
static const api_pb_msg_t m_apps_DeploymentSpec;
static const api_pb_msg_t m_meta_LabelSelector;
static const api_pb_msg_t m_meta_LabelSelectorRequirement;
static const api_pb_msg_t m_core_PodTemplateSpec;
static const api_pb_msg_t m_core_PodSpec;
static const api_pb_msg_t m_core_Volume;
static const api_pb_msg_t m_core_VolumeSource;
static const api_pb_msg_t m_core_HostPathVolumeSource;
static const api_pb_msg_t m_core_EmptyDirVolumeSource;
static const api_pb_msg_t m_core_SecretVolumeSource;
static const api_pb_msg_t m_core_KeyToPath;
static const api_pb_msg_t m_core_NFSVolumeSource;
static const api_pb_msg_t m_core_PersistentVolumeClaimVolumeSource;
static const api_pb_msg_t m_core_DownwardAPIVolumeSource;
static const api_pb_msg_t m_core_DownwardAPIVolumeFile;
static const api_pb_msg_t m_core_ObjectFieldSelector;
static const api_pb_msg_t m_core_ResourceFieldSelector;
static const api_pb_msg_t m_core_ConfigMapVolumeSource;
static const api_pb_msg_t m_core_ProjectedVolumeSource;
static const api_pb_msg_t m_core_VolumeProjection;
static const api_pb_msg_t m_core_SecretProjection;
static const api_pb_msg_t m_core_DownwardAPIProjection;
static const api_pb_msg_t m_core_ConfigMapProjection;
static const api_pb_msg_t m_core_ServiceAccountTokenProjection;
static const api_pb_msg_t m_core_ClusterTrustBundleProjection;
static const api_pb_msg_t m_core_CSIVolumeSource;
static const api_pb_msg_t m_core_EphemeralVolumeSource;
static const api_pb_msg_t m_core_PersistentVolumeClaimTemplate;
static const api_pb_msg_t m_core_PersistentVolumeClaimSpec;
static const api_pb_msg_t m_core_VolumeResourceRequirements;
static const api_pb_msg_t m_core_TypedLocalObjectReference;
static const api_pb_msg_t m_core_TypedObjectReference;
static const api_pb_msg_t m_core_ImageVolumeSource;
static const api_pb_msg_t m_core_Container;
static const api_pb_msg_t m_core_ContainerPort;
static const api_pb_msg_t m_core_EnvFromSource;
static const api_pb_msg_t m_core_ConfigMapEnvSource;
static const api_pb_msg_t m_core_SecretEnvSource;
static const api_pb_msg_t m_core_EnvVar;
static const api_pb_msg_t m_core_EnvVarSource;
static const api_pb_msg_t m_core_ConfigMapKeySelector;
static const api_pb_msg_t m_core_SecretKeySelector;
static const api_pb_msg_t m_core_ResourceRequirements;
static const api_pb_msg_t m_core_ResourceClaim;
static const api_pb_msg_t m_core_ContainerResizePolicy;
static const api_pb_msg_t m_core_VolumeMount;
static const api_pb_msg_t m_core_VolumeDevice;
static const api_pb_msg_t m_core_Probe;
static const api_pb_msg_t m_core_ProbeHandler;
static const api_pb_msg_t m_core_ExecAction;
static const api_pb_msg_t m_core_HTTPGetAction;
static const api_pb_msg_t m_core_HTTPHeader;
static const api_pb_msg_t m_core_TCPSocketAction;
static const api_pb_msg_t m_core_GRPCAction;
static const api_pb_msg_t m_core_Lifecycle;
static const api_pb_msg_t m_core_LifecycleHandler;
static const api_pb_msg_t m_core_SleepAction;
static const api_pb_msg_t m_core_SecurityContext;
static const api_pb_msg_t m_core_Capabilities;
static const api_pb_msg_t m_core_SELinuxOptions;
static const api_pb_msg_t m_core_WindowsSecurityContextOptions;
static const api_pb_msg_t m_core_SeccompProfile;
static const api_pb_msg_t m_core_AppArmorProfile;
static const api_pb_msg_t m_core_EphemeralContainer;
static const api_pb_msg_t m_core_EphemeralContainerCommon;
static const api_pb_msg_t m_core_PodSecurityContext;
static const api_pb_msg_t m_core_Sysctl;
static const api_pb_msg_t m_core_Affinity;
static const api_pb_msg_t m_core_NodeAffinity;
static const api_pb_msg_t m_core_NodeSelector;
static const api_pb_msg_t m_core_NodeSelectorTerm;
static const api_pb_msg_t m_core_NodeSelectorRequirement;
static const api_pb_msg_t m_core_PreferredSchedulingTerm;
static const api_pb_msg_t m_core_PodAffinity;
static const api_pb_msg_t m_core_PodAffinityTerm;
static const api_pb_msg_t m_core_WeightedPodAffinityTerm;
static const api_pb_msg_t m_core_PodAntiAffinity;
static const api_pb_msg_t m_core_Toleration;
static const api_pb_msg_t m_core_HostAlias;
static const api_pb_msg_t m_core_PodDNSConfig;
static const api_pb_msg_t m_core_PodDNSConfigOption;
static const api_pb_msg_t m_core_PodReadinessGate;
static const api_pb_msg_t m_core_TopologySpreadConstraint;
static const api_pb_msg_t m_core_PodOS;
static const api_pb_msg_t m_core_PodSchedulingGate;
static const api_pb_msg_t m_core_PodResourceClaim;
static const api_pb_msg_t m_apps_DeploymentStrategy;
static const api_pb_msg_t m_apps_RollingUpdateDeployment;
static const api_pb_msg_t m_apps_DeploymentStatus;
static const api_pb_msg_t m_apps_DeploymentCondition;
static const api_pb_msg_t m_batch_Job;
static const api_pb_msg_t m_batch_JobSpec;
static const api_pb_msg_t m_batch_PodFailurePolicy;
static const api_pb_msg_t m_batch_PodFailurePolicyRule;
static const api_pb_msg_t m_batch_PodFailurePolicyOnExitCodesRequirement;
static const api_pb_msg_t m_batch_PodFailurePolicyOnPodConditionsPattern;
static const api_pb_msg_t m_batch_SuccessPolicy;
static const api_pb_msg_t m_batch_SuccessPolicyRule;
static const api_pb_msg_t m_batch_JobStatus;
static const api_pb_msg_t m_batch_JobCondition;
static const api_pb_msg_t m_batch_UncountedTerminatedPods;
static const api_pb_msg_t m_batch_CronJob;
static const api_pb_msg_t m_batch_CronJobSpec;
static const api_pb_msg_t m_batch_JobTemplateSpec;
static const api_pb_msg_t m_batch_CronJobStatus;
static const api_pb_msg_t m_core_Binding;
static const api_pb_msg_t m_policy_Eviction;
static const api_pb_msg_t m_meta_DeleteOptions;
static const api_pb_msg_t m_meta_Preconditions;

/* map<string, V> entries {1: key, 2: value}: keys and values are kept even
 * when empty. */
static const api_pb_field_t f_map_string[] = {
    {1, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "value", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_map_string = API_PB_MSG("map<string, string> entry", f_map_string);

static const api_pb_field_t f_map_bytes[] = {
    {1, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "value", API_PB_BYTES, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_map_bytes = API_PB_MSG("map<string, bytes> entry", f_map_bytes);

static const api_pb_field_t f_map_quantity[] = {
    {1, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "value", API_PB_QUANTITY, 0, NULL},
};
static const api_pb_msg_t m_map_quantity =
    API_PB_MSG("map<string, Quantity> entry", f_map_quantity);

/* core/v1 Namespace */
static const api_pb_field_t f_core_Namespace[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &m_core_NamespaceSpec},
    {3, "status", API_PB_MESSAGE, 0, &m_core_NamespaceStatus},
};
static const api_pb_msg_t m_core_Namespace = API_PB_MSG("Namespace", f_core_Namespace);

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
    {11, "labels", API_PB_MAP, 0, &m_map_string},
    {12, "annotations", API_PB_MAP, 0, &m_map_string},
    {13, "ownerReferences", API_PB_MESSAGE, API_PB_REP, &m_meta_OwnerReference},
    {14, "finalizers", API_PB_STRING, API_PB_REP, NULL},
    {17, "managedFields", API_PB_MESSAGE, API_PB_REP, &m_meta_ManagedFieldsEntry},
};
static const api_pb_msg_t m_meta_ObjectMeta = API_PB_MSG("ObjectMeta", f_meta_ObjectMeta);

/* meta/v1 OwnerReference */
static const api_pb_field_t f_meta_OwnerReference[] = {
    {5, "apiVersion", API_PB_STRING, API_PB_KEEP, NULL},
    {1, "kind", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "uid", API_PB_STRING, API_PB_KEEP, NULL},
    {6, "controller", API_PB_BOOL, API_PB_KEEP, NULL},
    {7, "blockOwnerDeletion", API_PB_BOOL, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_meta_OwnerReference =
    API_PB_MSG("OwnerReference", f_meta_OwnerReference);

/* meta/v1 ManagedFieldsEntry */
static const api_pb_field_t f_meta_ManagedFieldsEntry[] = {
    {1, "manager", API_PB_STRING, 0, NULL},     {2, "operation", API_PB_STRING, 0, NULL},
    {3, "apiVersion", API_PB_STRING, 0, NULL},  {4, "time", API_PB_TIME, 0, NULL},
    {6, "fieldsType", API_PB_STRING, 0, NULL},  {7, "fieldsV1", API_PB_FIELDSV1, 0, NULL},
    {8, "subresource", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_meta_ManagedFieldsEntry =
    API_PB_MSG("ManagedFieldsEntry", f_meta_ManagedFieldsEntry);

/* core/v1 NamespaceSpec */
static const api_pb_field_t f_core_NamespaceSpec[] = {
    {1, "finalizers", API_PB_STRING, API_PB_REP, NULL},
};
static const api_pb_msg_t m_core_NamespaceSpec = API_PB_MSG("NamespaceSpec", f_core_NamespaceSpec);

/* core/v1 NamespaceStatus */
static const api_pb_field_t f_core_NamespaceStatus[] = {
    {1, "phase", API_PB_STRING, 0, NULL},
    {2, "conditions", API_PB_MESSAGE, API_PB_REP, &m_core_NamespaceCondition},
};
static const api_pb_msg_t m_core_NamespaceStatus =
    API_PB_MSG("NamespaceStatus", f_core_NamespaceStatus);

/* core/v1 NamespaceCondition */
static const api_pb_field_t f_core_NamespaceCondition[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "status", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "lastTransitionTime", API_PB_TIME, 0, NULL},
    {5, "reason", API_PB_STRING, 0, NULL},
    {6, "message", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_core_NamespaceCondition =
    API_PB_MSG("NamespaceCondition", f_core_NamespaceCondition);

/* core/v1 ConfigMap */
static const api_pb_field_t f_core_ConfigMap[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {4, "immutable", API_PB_BOOL, API_PB_KEEP, NULL},
    {2, "data", API_PB_MAP, 0, &m_map_string},
    {3, "binaryData", API_PB_MAP, 0, &m_map_bytes},
};
static const api_pb_msg_t m_core_ConfigMap = API_PB_MSG("ConfigMap", f_core_ConfigMap);

/* core/v1 Secret */
static const api_pb_field_t f_core_Secret[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {5, "immutable", API_PB_BOOL, API_PB_KEEP, NULL},
    {2, "data", API_PB_MAP, 0, &m_map_bytes},
    {4, "stringData", API_PB_MAP, 0, &m_map_string},
    {3, "type", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_core_Secret = API_PB_MSG("Secret", f_core_Secret);

/* core/v1 ServiceAccount */
static const api_pb_field_t f_core_ServiceAccount[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {2, "secrets", API_PB_MESSAGE, API_PB_REP, &m_core_ObjectReference},
    {3, "imagePullSecrets", API_PB_MESSAGE, API_PB_REP, &m_core_LocalObjectReference},
    {4, "automountServiceAccountToken", API_PB_BOOL, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_ServiceAccount =
    API_PB_MSG("ServiceAccount", f_core_ServiceAccount);

/* core/v1 ObjectReference */
static const api_pb_field_t f_core_ObjectReference[] = {
    {1, "kind", API_PB_STRING, 0, NULL},       {2, "namespace", API_PB_STRING, 0, NULL},
    {3, "name", API_PB_STRING, 0, NULL},       {4, "uid", API_PB_STRING, 0, NULL},
    {5, "apiVersion", API_PB_STRING, 0, NULL}, {6, "resourceVersion", API_PB_STRING, 0, NULL},
    {7, "fieldPath", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_core_ObjectReference =
    API_PB_MSG("ObjectReference", f_core_ObjectReference);

/* core/v1 LocalObjectReference */
static const api_pb_field_t f_core_LocalObjectReference[] = {
    {1, "name", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_core_LocalObjectReference =
    API_PB_MSG("LocalObjectReference", f_core_LocalObjectReference);

/* core/v1 Service */
static const api_pb_field_t f_core_Service[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &m_core_ServiceSpec},
    {3, "status", API_PB_MESSAGE, 0, &m_core_ServiceStatus},
};
static const api_pb_msg_t m_core_Service = API_PB_MSG("Service", f_core_Service);

/* core/v1 ServiceSpec */
static const api_pb_field_t f_core_ServiceSpec[] = {
    {1, "ports", API_PB_MESSAGE, API_PB_REP, &m_core_ServicePort},
    {2, "selector", API_PB_MAP, 0, &m_map_string},
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
    {14, "sessionAffinityConfig", API_PB_MESSAGE, 0, &m_core_SessionAffinityConfig},
    {19, "ipFamilies", API_PB_STRING, API_PB_REP, NULL},
    {17, "ipFamilyPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {20, "allocateLoadBalancerNodePorts", API_PB_BOOL, API_PB_KEEP, NULL},
    {21, "loadBalancerClass", API_PB_STRING, API_PB_KEEP, NULL},
    {22, "internalTrafficPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {23, "trafficDistribution", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_ServiceSpec = API_PB_MSG("ServiceSpec", f_core_ServiceSpec);

/* core/v1 ServicePort */
static const api_pb_field_t f_core_ServicePort[] = {
    {1, "name", API_PB_STRING, 0, NULL},
    {2, "protocol", API_PB_STRING, 0, NULL},
    {6, "appProtocol", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "port", API_PB_INT32, API_PB_KEEP, NULL},
    {4, "targetPort", API_PB_INTORSTR, 0, NULL},
    {5, "nodePort", API_PB_INT32, 0, NULL},
};
static const api_pb_msg_t m_core_ServicePort = API_PB_MSG("ServicePort", f_core_ServicePort);

/* core/v1 SessionAffinityConfig */
static const api_pb_field_t f_core_SessionAffinityConfig[] = {
    {1, "clientIP", API_PB_MESSAGE, 0, &m_core_ClientIPConfig},
};
static const api_pb_msg_t m_core_SessionAffinityConfig =
    API_PB_MSG("SessionAffinityConfig", f_core_SessionAffinityConfig);

/* core/v1 ClientIPConfig */
static const api_pb_field_t f_core_ClientIPConfig[] = {
    {1, "timeoutSeconds", API_PB_INT32, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_ClientIPConfig =
    API_PB_MSG("ClientIPConfig", f_core_ClientIPConfig);

/* core/v1 ServiceStatus */
static const api_pb_field_t f_core_ServiceStatus[] = {
    {1, "loadBalancer", API_PB_MESSAGE, 0, &m_core_LoadBalancerStatus},
    {2, "conditions", API_PB_MESSAGE, API_PB_REP, &m_meta_Condition},
};
static const api_pb_msg_t m_core_ServiceStatus = API_PB_MSG("ServiceStatus", f_core_ServiceStatus);

/* core/v1 LoadBalancerStatus */
static const api_pb_field_t f_core_LoadBalancerStatus[] = {
    {1, "ingress", API_PB_MESSAGE, API_PB_REP, &m_core_LoadBalancerIngress},
};
static const api_pb_msg_t m_core_LoadBalancerStatus =
    API_PB_MSG("LoadBalancerStatus", f_core_LoadBalancerStatus);

/* core/v1 LoadBalancerIngress */
static const api_pb_field_t f_core_LoadBalancerIngress[] = {
    {1, "ip", API_PB_STRING, 0, NULL},
    {2, "hostname", API_PB_STRING, 0, NULL},
    {3, "ipMode", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "ports", API_PB_MESSAGE, API_PB_REP, &m_core_PortStatus},
};
static const api_pb_msg_t m_core_LoadBalancerIngress =
    API_PB_MSG("LoadBalancerIngress", f_core_LoadBalancerIngress);

/* core/v1 PortStatus */
static const api_pb_field_t f_core_PortStatus[] = {
    {1, "port", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "protocol", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "error", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_PortStatus = API_PB_MSG("PortStatus", f_core_PortStatus);

/* meta/v1 Condition */
static const api_pb_field_t f_meta_Condition[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "status", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "observedGeneration", API_PB_INT64, 0, NULL},
    {4, "lastTransitionTime", API_PB_TIME, 0, NULL},
    {5, "reason", API_PB_STRING, API_PB_KEEP, NULL},
    {6, "message", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_meta_Condition = API_PB_MSG("Condition", f_meta_Condition);

/* core/v1 ResourceQuota */
static const api_pb_field_t f_core_ResourceQuota[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &m_core_ResourceQuotaSpec},
    {3, "status", API_PB_MESSAGE, 0, &m_core_ResourceQuotaStatus},
};
static const api_pb_msg_t m_core_ResourceQuota = API_PB_MSG("ResourceQuota", f_core_ResourceQuota);

/* core/v1 ResourceQuotaSpec */
static const api_pb_field_t f_core_ResourceQuotaSpec[] = {
    {1, "hard", API_PB_MAP, 0, &m_map_quantity},
    {2, "scopes", API_PB_STRING, API_PB_REP, NULL},
    {3, "scopeSelector", API_PB_MESSAGE, 0, &m_core_ScopeSelector},
};
static const api_pb_msg_t m_core_ResourceQuotaSpec =
    API_PB_MSG("ResourceQuotaSpec", f_core_ResourceQuotaSpec);

/* core/v1 ScopeSelector */
static const api_pb_field_t f_core_ScopeSelector[] = {
    {1, "matchExpressions", API_PB_MESSAGE, API_PB_REP, &m_core_ScopedResourceSelectorRequirement},
};
static const api_pb_msg_t m_core_ScopeSelector = API_PB_MSG("ScopeSelector", f_core_ScopeSelector);

/* core/v1 ScopedResourceSelectorRequirement */
static const api_pb_field_t f_core_ScopedResourceSelectorRequirement[] = {
    {1, "scopeName", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "operator", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "values", API_PB_STRING, API_PB_REP, NULL},
};
static const api_pb_msg_t m_core_ScopedResourceSelectorRequirement =
    API_PB_MSG("ScopedResourceSelectorRequirement", f_core_ScopedResourceSelectorRequirement);

/* core/v1 ResourceQuotaStatus */
static const api_pb_field_t f_core_ResourceQuotaStatus[] = {
    {1, "hard", API_PB_MAP, 0, &m_map_quantity},
    {2, "used", API_PB_MAP, 0, &m_map_quantity},
};
static const api_pb_msg_t m_core_ResourceQuotaStatus =
    API_PB_MSG("ResourceQuotaStatus", f_core_ResourceQuotaStatus);

/* apps/v1 Deployment */
static const api_pb_field_t f_apps_Deployment[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &m_apps_DeploymentSpec},
    {3, "status", API_PB_MESSAGE, 0, &m_apps_DeploymentStatus},
};
static const api_pb_msg_t m_apps_Deployment = API_PB_MSG("Deployment", f_apps_Deployment);

/* apps/v1 DeploymentSpec */
static const api_pb_field_t f_apps_DeploymentSpec[] = {
    {1, "replicas", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "selector", API_PB_MESSAGE, 0, &m_meta_LabelSelector},
    {3, "template", API_PB_MESSAGE, 0, &m_core_PodTemplateSpec},
    {4, "strategy", API_PB_MESSAGE, 0, &m_apps_DeploymentStrategy},
    {5, "minReadySeconds", API_PB_INT32, 0, NULL},
    {6, "revisionHistoryLimit", API_PB_INT32, API_PB_KEEP, NULL},
    {7, "paused", API_PB_BOOL, 0, NULL},
    {9, "progressDeadlineSeconds", API_PB_INT32, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_apps_DeploymentSpec =
    API_PB_MSG("DeploymentSpec", f_apps_DeploymentSpec);

/* meta/v1 LabelSelector */
static const api_pb_field_t f_meta_LabelSelector[] = {
    {1, "matchLabels", API_PB_MAP, 0, &m_map_string},
    {2, "matchExpressions", API_PB_MESSAGE, API_PB_REP, &m_meta_LabelSelectorRequirement},
};
static const api_pb_msg_t m_meta_LabelSelector = API_PB_MSG("LabelSelector", f_meta_LabelSelector);

/* meta/v1 LabelSelectorRequirement */
static const api_pb_field_t f_meta_LabelSelectorRequirement[] = {
    {1, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "operator", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "values", API_PB_STRING, API_PB_REP, NULL},
};
static const api_pb_msg_t m_meta_LabelSelectorRequirement =
    API_PB_MSG("LabelSelectorRequirement", f_meta_LabelSelectorRequirement);

/* core/v1 PodTemplateSpec */
static const api_pb_field_t f_core_PodTemplateSpec[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &m_core_PodSpec},
};
static const api_pb_msg_t m_core_PodTemplateSpec =
    API_PB_MSG("PodTemplateSpec", f_core_PodTemplateSpec);

/* core/v1 PodSpec */
static const api_pb_field_t f_core_PodSpec[] = {
    {1, "volumes", API_PB_MESSAGE, API_PB_REP, &m_core_Volume},
    {20, "initContainers", API_PB_MESSAGE, API_PB_REP, &m_core_Container},
    {2, "containers", API_PB_MESSAGE, API_PB_REP, &m_core_Container},
    {34, "ephemeralContainers", API_PB_MESSAGE, API_PB_REP, &m_core_EphemeralContainer},
    {3, "restartPolicy", API_PB_STRING, 0, NULL},
    {4, "terminationGracePeriodSeconds", API_PB_INT64, API_PB_KEEP, NULL},
    {5, "activeDeadlineSeconds", API_PB_INT64, API_PB_KEEP, NULL},
    {6, "dnsPolicy", API_PB_STRING, 0, NULL},
    {7, "nodeSelector", API_PB_MAP, 0, &m_map_string},
    {8, "serviceAccountName", API_PB_STRING, 0, NULL},
    {9, "serviceAccount", API_PB_STRING, 0, NULL},
    {21, "automountServiceAccountToken", API_PB_BOOL, API_PB_KEEP, NULL},
    {10, "nodeName", API_PB_STRING, 0, NULL},
    {11, "hostNetwork", API_PB_BOOL, 0, NULL},
    {12, "hostPID", API_PB_BOOL, 0, NULL},
    {13, "hostIPC", API_PB_BOOL, 0, NULL},
    {27, "shareProcessNamespace", API_PB_BOOL, API_PB_KEEP, NULL},
    {14, "securityContext", API_PB_MESSAGE, 0, &m_core_PodSecurityContext},
    {15, "imagePullSecrets", API_PB_MESSAGE, API_PB_REP, &m_core_LocalObjectReference},
    {16, "hostname", API_PB_STRING, 0, NULL},
    {17, "subdomain", API_PB_STRING, 0, NULL},
    {18, "affinity", API_PB_MESSAGE, 0, &m_core_Affinity},
    {19, "schedulerName", API_PB_STRING, 0, NULL},
    {22, "tolerations", API_PB_MESSAGE, API_PB_REP, &m_core_Toleration},
    {23, "hostAliases", API_PB_MESSAGE, API_PB_REP, &m_core_HostAlias},
    {24, "priorityClassName", API_PB_STRING, 0, NULL},
    {25, "priority", API_PB_INT32, API_PB_KEEP, NULL},
    {26, "dnsConfig", API_PB_MESSAGE, 0, &m_core_PodDNSConfig},
    {28, "readinessGates", API_PB_MESSAGE, API_PB_REP, &m_core_PodReadinessGate},
    {29, "runtimeClassName", API_PB_STRING, API_PB_KEEP, NULL},
    {30, "enableServiceLinks", API_PB_BOOL, API_PB_KEEP, NULL},
    {31, "preemptionPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {32, "overhead", API_PB_MAP, 0, &m_map_quantity},
    {33, "topologySpreadConstraints", API_PB_MESSAGE, API_PB_REP, &m_core_TopologySpreadConstraint},
    {35, "setHostnameAsFQDN", API_PB_BOOL, API_PB_KEEP, NULL},
    {36, "os", API_PB_MESSAGE, 0, &m_core_PodOS},
    {37, "hostUsers", API_PB_BOOL, API_PB_KEEP, NULL},
    {38, "schedulingGates", API_PB_MESSAGE, API_PB_REP, &m_core_PodSchedulingGate},
    {39, "resourceClaims", API_PB_MESSAGE, API_PB_REP, &m_core_PodResourceClaim},
    {40, "resources", API_PB_MESSAGE, 0, &m_core_ResourceRequirements},
};
static const api_pb_msg_t m_core_PodSpec = API_PB_MSG("PodSpec", f_core_PodSpec);

/* core/v1 Volume */
static const api_pb_field_t f_core_Volume[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "volumeSource", API_PB_MESSAGE, API_PB_INLINE, &m_core_VolumeSource},
};
static const api_pb_msg_t m_core_Volume = API_PB_MSG("Volume", f_core_Volume);

/* core/v1 VolumeSource */
static const api_pb_field_t f_core_VolumeSource[] = {
    {1, "hostPath", API_PB_MESSAGE, 0, &m_core_HostPathVolumeSource},
    {2, "emptyDir", API_PB_MESSAGE, 0, &m_core_EmptyDirVolumeSource},
    {6, "secret", API_PB_MESSAGE, 0, &m_core_SecretVolumeSource},
    {7, "nfs", API_PB_MESSAGE, 0, &m_core_NFSVolumeSource},
    {10, "persistentVolumeClaim", API_PB_MESSAGE, 0, &m_core_PersistentVolumeClaimVolumeSource},
    {16, "downwardAPI", API_PB_MESSAGE, 0, &m_core_DownwardAPIVolumeSource},
    {19, "configMap", API_PB_MESSAGE, 0, &m_core_ConfigMapVolumeSource},
    {26, "projected", API_PB_MESSAGE, 0, &m_core_ProjectedVolumeSource},
    {28, "csi", API_PB_MESSAGE, 0, &m_core_CSIVolumeSource},
    {29, "ephemeral", API_PB_MESSAGE, 0, &m_core_EphemeralVolumeSource},
    {30, "image", API_PB_MESSAGE, 0, &m_core_ImageVolumeSource},
};
static const api_pb_msg_t m_core_VolumeSource = API_PB_MSG("VolumeSource", f_core_VolumeSource);

/* core/v1 HostPathVolumeSource */
static const api_pb_field_t f_core_HostPathVolumeSource[] = {
    {1, "path", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "type", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_HostPathVolumeSource =
    API_PB_MSG("HostPathVolumeSource", f_core_HostPathVolumeSource);

/* core/v1 EmptyDirVolumeSource */
static const api_pb_field_t f_core_EmptyDirVolumeSource[] = {
    {1, "medium", API_PB_STRING, 0, NULL},
    {2, "sizeLimit", API_PB_QUANTITY, 0, NULL},
};
static const api_pb_msg_t m_core_EmptyDirVolumeSource =
    API_PB_MSG("EmptyDirVolumeSource", f_core_EmptyDirVolumeSource);

/* core/v1 SecretVolumeSource */
static const api_pb_field_t f_core_SecretVolumeSource[] = {
    {1, "secretName", API_PB_STRING, 0, NULL},
    {2, "items", API_PB_MESSAGE, API_PB_REP, &m_core_KeyToPath},
    {3, "defaultMode", API_PB_INT32, API_PB_KEEP, NULL},
    {4, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_SecretVolumeSource =
    API_PB_MSG("SecretVolumeSource", f_core_SecretVolumeSource);

/* core/v1 KeyToPath */
static const api_pb_field_t f_core_KeyToPath[] = {
    {1, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "path", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "mode", API_PB_INT32, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_KeyToPath = API_PB_MSG("KeyToPath", f_core_KeyToPath);

/* core/v1 NFSVolumeSource */
static const api_pb_field_t f_core_NFSVolumeSource[] = {
    {1, "server", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "path", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "readOnly", API_PB_BOOL, 0, NULL},
};
static const api_pb_msg_t m_core_NFSVolumeSource =
    API_PB_MSG("NFSVolumeSource", f_core_NFSVolumeSource);

/* core/v1 PersistentVolumeClaimVolumeSource */
static const api_pb_field_t f_core_PersistentVolumeClaimVolumeSource[] = {
    {1, "claimName", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "readOnly", API_PB_BOOL, 0, NULL},
};
static const api_pb_msg_t m_core_PersistentVolumeClaimVolumeSource =
    API_PB_MSG("PersistentVolumeClaimVolumeSource", f_core_PersistentVolumeClaimVolumeSource);

/* core/v1 DownwardAPIVolumeSource */
static const api_pb_field_t f_core_DownwardAPIVolumeSource[] = {
    {1, "items", API_PB_MESSAGE, API_PB_REP, &m_core_DownwardAPIVolumeFile},
    {2, "defaultMode", API_PB_INT32, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_DownwardAPIVolumeSource =
    API_PB_MSG("DownwardAPIVolumeSource", f_core_DownwardAPIVolumeSource);

/* core/v1 DownwardAPIVolumeFile */
static const api_pb_field_t f_core_DownwardAPIVolumeFile[] = {
    {1, "path", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "fieldRef", API_PB_MESSAGE, 0, &m_core_ObjectFieldSelector},
    {3, "resourceFieldRef", API_PB_MESSAGE, 0, &m_core_ResourceFieldSelector},
    {4, "mode", API_PB_INT32, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_DownwardAPIVolumeFile =
    API_PB_MSG("DownwardAPIVolumeFile", f_core_DownwardAPIVolumeFile);

/* core/v1 ObjectFieldSelector */
static const api_pb_field_t f_core_ObjectFieldSelector[] = {
    {1, "apiVersion", API_PB_STRING, 0, NULL},
    {2, "fieldPath", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_ObjectFieldSelector =
    API_PB_MSG("ObjectFieldSelector", f_core_ObjectFieldSelector);

/* core/v1 ResourceFieldSelector */
static const api_pb_field_t f_core_ResourceFieldSelector[] = {
    {1, "containerName", API_PB_STRING, 0, NULL},
    {2, "resource", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "divisor", API_PB_QUANTITY, 0, NULL},
};
static const api_pb_msg_t m_core_ResourceFieldSelector =
    API_PB_MSG("ResourceFieldSelector", f_core_ResourceFieldSelector);

/* core/v1 ConfigMapVolumeSource */
static const api_pb_field_t f_core_ConfigMapVolumeSource[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &m_core_LocalObjectReference},
    {2, "items", API_PB_MESSAGE, API_PB_REP, &m_core_KeyToPath},
    {3, "defaultMode", API_PB_INT32, API_PB_KEEP, NULL},
    {4, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_ConfigMapVolumeSource =
    API_PB_MSG("ConfigMapVolumeSource", f_core_ConfigMapVolumeSource);

/* core/v1 ProjectedVolumeSource */
static const api_pb_field_t f_core_ProjectedVolumeSource[] = {
    {1, "sources", API_PB_MESSAGE, API_PB_REP, &m_core_VolumeProjection},
    {2, "defaultMode", API_PB_INT32, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_ProjectedVolumeSource =
    API_PB_MSG("ProjectedVolumeSource", f_core_ProjectedVolumeSource);

/* core/v1 VolumeProjection */
static const api_pb_field_t f_core_VolumeProjection[] = {
    {1, "secret", API_PB_MESSAGE, 0, &m_core_SecretProjection},
    {2, "downwardAPI", API_PB_MESSAGE, 0, &m_core_DownwardAPIProjection},
    {3, "configMap", API_PB_MESSAGE, 0, &m_core_ConfigMapProjection},
    {4, "serviceAccountToken", API_PB_MESSAGE, 0, &m_core_ServiceAccountTokenProjection},
    {5, "clusterTrustBundle", API_PB_MESSAGE, 0, &m_core_ClusterTrustBundleProjection},
};
static const api_pb_msg_t m_core_VolumeProjection =
    API_PB_MSG("VolumeProjection", f_core_VolumeProjection);

/* core/v1 SecretProjection */
static const api_pb_field_t f_core_SecretProjection[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &m_core_LocalObjectReference},
    {2, "items", API_PB_MESSAGE, API_PB_REP, &m_core_KeyToPath},
    {4, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_SecretProjection =
    API_PB_MSG("SecretProjection", f_core_SecretProjection);

/* core/v1 DownwardAPIProjection */
static const api_pb_field_t f_core_DownwardAPIProjection[] = {
    {1, "items", API_PB_MESSAGE, API_PB_REP, &m_core_DownwardAPIVolumeFile},
};
static const api_pb_msg_t m_core_DownwardAPIProjection =
    API_PB_MSG("DownwardAPIProjection", f_core_DownwardAPIProjection);

/* core/v1 ConfigMapProjection */
static const api_pb_field_t f_core_ConfigMapProjection[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &m_core_LocalObjectReference},
    {2, "items", API_PB_MESSAGE, API_PB_REP, &m_core_KeyToPath},
    {4, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_ConfigMapProjection =
    API_PB_MSG("ConfigMapProjection", f_core_ConfigMapProjection);

/* core/v1 ServiceAccountTokenProjection */
static const api_pb_field_t f_core_ServiceAccountTokenProjection[] = {
    {1, "audience", API_PB_STRING, 0, NULL},
    {2, "expirationSeconds", API_PB_INT64, API_PB_KEEP, NULL},
    {3, "path", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_ServiceAccountTokenProjection =
    API_PB_MSG("ServiceAccountTokenProjection", f_core_ServiceAccountTokenProjection);

/* core/v1 ClusterTrustBundleProjection */
static const api_pb_field_t f_core_ClusterTrustBundleProjection[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "signerName", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "labelSelector", API_PB_MESSAGE, 0, &m_meta_LabelSelector},
    {5, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
    {4, "path", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_ClusterTrustBundleProjection =
    API_PB_MSG("ClusterTrustBundleProjection", f_core_ClusterTrustBundleProjection);

/* core/v1 CSIVolumeSource */
static const api_pb_field_t f_core_CSIVolumeSource[] = {
    {1, "driver", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "readOnly", API_PB_BOOL, API_PB_KEEP, NULL},
    {3, "fsType", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "volumeAttributes", API_PB_MAP, 0, &m_map_string},
    {5, "nodePublishSecretRef", API_PB_MESSAGE, 0, &m_core_LocalObjectReference},
};
static const api_pb_msg_t m_core_CSIVolumeSource =
    API_PB_MSG("CSIVolumeSource", f_core_CSIVolumeSource);

/* core/v1 EphemeralVolumeSource */
static const api_pb_field_t f_core_EphemeralVolumeSource[] = {
    {1, "volumeClaimTemplate", API_PB_MESSAGE, 0, &m_core_PersistentVolumeClaimTemplate},
};
static const api_pb_msg_t m_core_EphemeralVolumeSource =
    API_PB_MSG("EphemeralVolumeSource", f_core_EphemeralVolumeSource);

/* core/v1 PersistentVolumeClaimTemplate */
static const api_pb_field_t f_core_PersistentVolumeClaimTemplate[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &m_core_PersistentVolumeClaimSpec},
};
static const api_pb_msg_t m_core_PersistentVolumeClaimTemplate =
    API_PB_MSG("PersistentVolumeClaimTemplate", f_core_PersistentVolumeClaimTemplate);

/* core/v1 PersistentVolumeClaimSpec */
static const api_pb_field_t f_core_PersistentVolumeClaimSpec[] = {
    {1, "accessModes", API_PB_STRING, API_PB_REP, NULL},
    {4, "selector", API_PB_MESSAGE, 0, &m_meta_LabelSelector},
    {2, "resources", API_PB_MESSAGE, 0, &m_core_VolumeResourceRequirements},
    {3, "volumeName", API_PB_STRING, 0, NULL},
    {5, "storageClassName", API_PB_STRING, API_PB_KEEP, NULL},
    {6, "volumeMode", API_PB_STRING, API_PB_KEEP, NULL},
    {7, "dataSource", API_PB_MESSAGE, 0, &m_core_TypedLocalObjectReference},
    {8, "dataSourceRef", API_PB_MESSAGE, 0, &m_core_TypedObjectReference},
    {9, "volumeAttributesClassName", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_PersistentVolumeClaimSpec =
    API_PB_MSG("PersistentVolumeClaimSpec", f_core_PersistentVolumeClaimSpec);

/* core/v1 VolumeResourceRequirements */
static const api_pb_field_t f_core_VolumeResourceRequirements[] = {
    {1, "limits", API_PB_MAP, 0, &m_map_quantity},
    {2, "requests", API_PB_MAP, 0, &m_map_quantity},
};
static const api_pb_msg_t m_core_VolumeResourceRequirements =
    API_PB_MSG("VolumeResourceRequirements", f_core_VolumeResourceRequirements);

/* core/v1 TypedLocalObjectReference */
static const api_pb_field_t f_core_TypedLocalObjectReference[] = {
    {1, "apiGroup", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "kind", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "name", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_TypedLocalObjectReference =
    API_PB_MSG("TypedLocalObjectReference", f_core_TypedLocalObjectReference);

/* core/v1 TypedObjectReference */
static const api_pb_field_t f_core_TypedObjectReference[] = {
    {1, "apiGroup", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "kind", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "namespace", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_TypedObjectReference =
    API_PB_MSG("TypedObjectReference", f_core_TypedObjectReference);

/* core/v1 ImageVolumeSource */
static const api_pb_field_t f_core_ImageVolumeSource[] = {
    {1, "reference", API_PB_STRING, 0, NULL},
    {2, "pullPolicy", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_core_ImageVolumeSource =
    API_PB_MSG("ImageVolumeSource", f_core_ImageVolumeSource);

/* core/v1 Container */
static const api_pb_field_t f_core_Container[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "image", API_PB_STRING, 0, NULL},
    {3, "command", API_PB_STRING, API_PB_REP, NULL},
    {4, "args", API_PB_STRING, API_PB_REP, NULL},
    {5, "workingDir", API_PB_STRING, 0, NULL},
    {6, "ports", API_PB_MESSAGE, API_PB_REP, &m_core_ContainerPort},
    {19, "envFrom", API_PB_MESSAGE, API_PB_REP, &m_core_EnvFromSource},
    {7, "env", API_PB_MESSAGE, API_PB_REP, &m_core_EnvVar},
    {8, "resources", API_PB_MESSAGE, 0, &m_core_ResourceRequirements},
    {23, "resizePolicy", API_PB_MESSAGE, API_PB_REP, &m_core_ContainerResizePolicy},
    {24, "restartPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {9, "volumeMounts", API_PB_MESSAGE, API_PB_REP, &m_core_VolumeMount},
    {21, "volumeDevices", API_PB_MESSAGE, API_PB_REP, &m_core_VolumeDevice},
    {10, "livenessProbe", API_PB_MESSAGE, 0, &m_core_Probe},
    {11, "readinessProbe", API_PB_MESSAGE, 0, &m_core_Probe},
    {22, "startupProbe", API_PB_MESSAGE, 0, &m_core_Probe},
    {12, "lifecycle", API_PB_MESSAGE, 0, &m_core_Lifecycle},
    {13, "terminationMessagePath", API_PB_STRING, 0, NULL},
    {20, "terminationMessagePolicy", API_PB_STRING, 0, NULL},
    {14, "imagePullPolicy", API_PB_STRING, 0, NULL},
    {15, "securityContext", API_PB_MESSAGE, 0, &m_core_SecurityContext},
    {16, "stdin", API_PB_BOOL, 0, NULL},
    {17, "stdinOnce", API_PB_BOOL, 0, NULL},
    {18, "tty", API_PB_BOOL, 0, NULL},
};
static const api_pb_msg_t m_core_Container = API_PB_MSG("Container", f_core_Container);

/* core/v1 ContainerPort */
static const api_pb_field_t f_core_ContainerPort[] = {
    {1, "name", API_PB_STRING, 0, NULL},
    {2, "hostPort", API_PB_INT32, 0, NULL},
    {3, "containerPort", API_PB_INT32, API_PB_KEEP, NULL},
    {4, "protocol", API_PB_STRING, 0, NULL},
    {5, "hostIP", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_core_ContainerPort = API_PB_MSG("ContainerPort", f_core_ContainerPort);

/* core/v1 EnvFromSource */
static const api_pb_field_t f_core_EnvFromSource[] = {
    {1, "prefix", API_PB_STRING, 0, NULL},
    {2, "configMapRef", API_PB_MESSAGE, 0, &m_core_ConfigMapEnvSource},
    {3, "secretRef", API_PB_MESSAGE, 0, &m_core_SecretEnvSource},
};
static const api_pb_msg_t m_core_EnvFromSource = API_PB_MSG("EnvFromSource", f_core_EnvFromSource);

/* core/v1 ConfigMapEnvSource */
static const api_pb_field_t f_core_ConfigMapEnvSource[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &m_core_LocalObjectReference},
    {2, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_ConfigMapEnvSource =
    API_PB_MSG("ConfigMapEnvSource", f_core_ConfigMapEnvSource);

/* core/v1 SecretEnvSource */
static const api_pb_field_t f_core_SecretEnvSource[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &m_core_LocalObjectReference},
    {2, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_SecretEnvSource =
    API_PB_MSG("SecretEnvSource", f_core_SecretEnvSource);

/* core/v1 EnvVar */
static const api_pb_field_t f_core_EnvVar[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "value", API_PB_STRING, 0, NULL},
    {3, "valueFrom", API_PB_MESSAGE, 0, &m_core_EnvVarSource},
};
static const api_pb_msg_t m_core_EnvVar = API_PB_MSG("EnvVar", f_core_EnvVar);

/* core/v1 EnvVarSource */
static const api_pb_field_t f_core_EnvVarSource[] = {
    {1, "fieldRef", API_PB_MESSAGE, 0, &m_core_ObjectFieldSelector},
    {2, "resourceFieldRef", API_PB_MESSAGE, 0, &m_core_ResourceFieldSelector},
    {3, "configMapKeyRef", API_PB_MESSAGE, 0, &m_core_ConfigMapKeySelector},
    {4, "secretKeyRef", API_PB_MESSAGE, 0, &m_core_SecretKeySelector},
};
static const api_pb_msg_t m_core_EnvVarSource = API_PB_MSG("EnvVarSource", f_core_EnvVarSource);

/* core/v1 ConfigMapKeySelector */
static const api_pb_field_t f_core_ConfigMapKeySelector[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &m_core_LocalObjectReference},
    {2, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_ConfigMapKeySelector =
    API_PB_MSG("ConfigMapKeySelector", f_core_ConfigMapKeySelector);

/* core/v1 SecretKeySelector */
static const api_pb_field_t f_core_SecretKeySelector[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &m_core_LocalObjectReference},
    {2, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_SecretKeySelector =
    API_PB_MSG("SecretKeySelector", f_core_SecretKeySelector);

/* core/v1 ResourceRequirements */
static const api_pb_field_t f_core_ResourceRequirements[] = {
    {1, "limits", API_PB_MAP, 0, &m_map_quantity},
    {2, "requests", API_PB_MAP, 0, &m_map_quantity},
    {3, "claims", API_PB_MESSAGE, API_PB_REP, &m_core_ResourceClaim},
};
static const api_pb_msg_t m_core_ResourceRequirements =
    API_PB_MSG("ResourceRequirements", f_core_ResourceRequirements);

/* core/v1 ResourceClaim */
static const api_pb_field_t f_core_ResourceClaim[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "request", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_core_ResourceClaim = API_PB_MSG("ResourceClaim", f_core_ResourceClaim);

/* core/v1 ContainerResizePolicy */
static const api_pb_field_t f_core_ContainerResizePolicy[] = {
    {1, "resourceName", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "restartPolicy", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_ContainerResizePolicy =
    API_PB_MSG("ContainerResizePolicy", f_core_ContainerResizePolicy);

/* core/v1 VolumeMount */
static const api_pb_field_t f_core_VolumeMount[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "readOnly", API_PB_BOOL, 0, NULL},
    {7, "recursiveReadOnly", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "mountPath", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "subPath", API_PB_STRING, 0, NULL},
    {5, "mountPropagation", API_PB_STRING, API_PB_KEEP, NULL},
    {6, "subPathExpr", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_core_VolumeMount = API_PB_MSG("VolumeMount", f_core_VolumeMount);

/* core/v1 VolumeDevice */
static const api_pb_field_t f_core_VolumeDevice[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "devicePath", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_VolumeDevice = API_PB_MSG("VolumeDevice", f_core_VolumeDevice);

/* core/v1 Probe */
static const api_pb_field_t f_core_Probe[] = {
    {1, "handler", API_PB_MESSAGE, API_PB_INLINE, &m_core_ProbeHandler},
    {2, "initialDelaySeconds", API_PB_INT32, 0, NULL},
    {3, "timeoutSeconds", API_PB_INT32, 0, NULL},
    {4, "periodSeconds", API_PB_INT32, 0, NULL},
    {5, "successThreshold", API_PB_INT32, 0, NULL},
    {6, "failureThreshold", API_PB_INT32, 0, NULL},
    {7, "terminationGracePeriodSeconds", API_PB_INT64, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_Probe = API_PB_MSG("Probe", f_core_Probe);

/* core/v1 ProbeHandler */
static const api_pb_field_t f_core_ProbeHandler[] = {
    {1, "exec", API_PB_MESSAGE, 0, &m_core_ExecAction},
    {2, "httpGet", API_PB_MESSAGE, 0, &m_core_HTTPGetAction},
    {3, "tcpSocket", API_PB_MESSAGE, 0, &m_core_TCPSocketAction},
    {4, "grpc", API_PB_MESSAGE, 0, &m_core_GRPCAction},
};
static const api_pb_msg_t m_core_ProbeHandler = API_PB_MSG("ProbeHandler", f_core_ProbeHandler);

/* core/v1 ExecAction */
static const api_pb_field_t f_core_ExecAction[] = {
    {1, "command", API_PB_STRING, API_PB_REP, NULL},
};
static const api_pb_msg_t m_core_ExecAction = API_PB_MSG("ExecAction", f_core_ExecAction);

/* core/v1 HTTPGetAction */
static const api_pb_field_t f_core_HTTPGetAction[] = {
    {1, "path", API_PB_STRING, 0, NULL},
    {2, "port", API_PB_INTORSTR, 0, NULL},
    {3, "host", API_PB_STRING, 0, NULL},
    {4, "scheme", API_PB_STRING, 0, NULL},
    {5, "httpHeaders", API_PB_MESSAGE, API_PB_REP, &m_core_HTTPHeader},
};
static const api_pb_msg_t m_core_HTTPGetAction = API_PB_MSG("HTTPGetAction", f_core_HTTPGetAction);

/* core/v1 HTTPHeader */
static const api_pb_field_t f_core_HTTPHeader[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "value", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_HTTPHeader = API_PB_MSG("HTTPHeader", f_core_HTTPHeader);

/* core/v1 TCPSocketAction */
static const api_pb_field_t f_core_TCPSocketAction[] = {
    {1, "port", API_PB_INTORSTR, 0, NULL},
    {2, "host", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_core_TCPSocketAction =
    API_PB_MSG("TCPSocketAction", f_core_TCPSocketAction);

/* core/v1 GRPCAction */
static const api_pb_field_t f_core_GRPCAction[] = {
    {1, "port", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "service", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_GRPCAction = API_PB_MSG("GRPCAction", f_core_GRPCAction);

/* core/v1 Lifecycle */
static const api_pb_field_t f_core_Lifecycle[] = {
    {1, "postStart", API_PB_MESSAGE, 0, &m_core_LifecycleHandler},
    {2, "preStop", API_PB_MESSAGE, 0, &m_core_LifecycleHandler},
    {3, "stopSignal", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_Lifecycle = API_PB_MSG("Lifecycle", f_core_Lifecycle);

/* core/v1 LifecycleHandler */
static const api_pb_field_t f_core_LifecycleHandler[] = {
    {1, "exec", API_PB_MESSAGE, 0, &m_core_ExecAction},
    {2, "httpGet", API_PB_MESSAGE, 0, &m_core_HTTPGetAction},
    {3, "tcpSocket", API_PB_MESSAGE, 0, &m_core_TCPSocketAction},
    {4, "sleep", API_PB_MESSAGE, 0, &m_core_SleepAction},
};
static const api_pb_msg_t m_core_LifecycleHandler =
    API_PB_MSG("LifecycleHandler", f_core_LifecycleHandler);

/* core/v1 SleepAction */
static const api_pb_field_t f_core_SleepAction[] = {
    {1, "seconds", API_PB_INT64, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_SleepAction = API_PB_MSG("SleepAction", f_core_SleepAction);

/* core/v1 SecurityContext */
static const api_pb_field_t f_core_SecurityContext[] = {
    {1, "capabilities", API_PB_MESSAGE, 0, &m_core_Capabilities},
    {2, "privileged", API_PB_BOOL, API_PB_KEEP, NULL},
    {3, "seLinuxOptions", API_PB_MESSAGE, 0, &m_core_SELinuxOptions},
    {10, "windowsOptions", API_PB_MESSAGE, 0, &m_core_WindowsSecurityContextOptions},
    {4, "runAsUser", API_PB_INT64, API_PB_KEEP, NULL},
    {8, "runAsGroup", API_PB_INT64, API_PB_KEEP, NULL},
    {5, "runAsNonRoot", API_PB_BOOL, API_PB_KEEP, NULL},
    {6, "readOnlyRootFilesystem", API_PB_BOOL, API_PB_KEEP, NULL},
    {7, "allowPrivilegeEscalation", API_PB_BOOL, API_PB_KEEP, NULL},
    {9, "procMount", API_PB_STRING, API_PB_KEEP, NULL},
    {11, "seccompProfile", API_PB_MESSAGE, 0, &m_core_SeccompProfile},
    {12, "appArmorProfile", API_PB_MESSAGE, 0, &m_core_AppArmorProfile},
};
static const api_pb_msg_t m_core_SecurityContext =
    API_PB_MSG("SecurityContext", f_core_SecurityContext);

/* core/v1 Capabilities */
static const api_pb_field_t f_core_Capabilities[] = {
    {1, "add", API_PB_STRING, API_PB_REP, NULL},
    {2, "drop", API_PB_STRING, API_PB_REP, NULL},
};
static const api_pb_msg_t m_core_Capabilities = API_PB_MSG("Capabilities", f_core_Capabilities);

/* core/v1 SELinuxOptions */
static const api_pb_field_t f_core_SELinuxOptions[] = {
    {1, "user", API_PB_STRING, 0, NULL},
    {2, "role", API_PB_STRING, 0, NULL},
    {3, "type", API_PB_STRING, 0, NULL},
    {4, "level", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_core_SELinuxOptions =
    API_PB_MSG("SELinuxOptions", f_core_SELinuxOptions);

/* core/v1 WindowsSecurityContextOptions */
static const api_pb_field_t f_core_WindowsSecurityContextOptions[] = {
    {1, "gmsaCredentialSpecName", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "gmsaCredentialSpec", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "runAsUserName", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "hostProcess", API_PB_BOOL, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_WindowsSecurityContextOptions =
    API_PB_MSG("WindowsSecurityContextOptions", f_core_WindowsSecurityContextOptions);

/* core/v1 SeccompProfile */
static const api_pb_field_t f_core_SeccompProfile[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "localhostProfile", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_SeccompProfile =
    API_PB_MSG("SeccompProfile", f_core_SeccompProfile);

/* core/v1 AppArmorProfile */
static const api_pb_field_t f_core_AppArmorProfile[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "localhostProfile", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_AppArmorProfile =
    API_PB_MSG("AppArmorProfile", f_core_AppArmorProfile);

/* core/v1 EphemeralContainer */
static const api_pb_field_t f_core_EphemeralContainer[] = {
    {1, "ephemeralContainerCommon", API_PB_MESSAGE, API_PB_INLINE,
     &m_core_EphemeralContainerCommon},
    {2, "targetContainerName", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_core_EphemeralContainer =
    API_PB_MSG("EphemeralContainer", f_core_EphemeralContainer);

/* core/v1 EphemeralContainerCommon */
static const api_pb_field_t f_core_EphemeralContainerCommon[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "image", API_PB_STRING, 0, NULL},
    {3, "command", API_PB_STRING, API_PB_REP, NULL},
    {4, "args", API_PB_STRING, API_PB_REP, NULL},
    {5, "workingDir", API_PB_STRING, 0, NULL},
    {6, "ports", API_PB_MESSAGE, API_PB_REP, &m_core_ContainerPort},
    {19, "envFrom", API_PB_MESSAGE, API_PB_REP, &m_core_EnvFromSource},
    {7, "env", API_PB_MESSAGE, API_PB_REP, &m_core_EnvVar},
    {8, "resources", API_PB_MESSAGE, 0, &m_core_ResourceRequirements},
    {23, "resizePolicy", API_PB_MESSAGE, API_PB_REP, &m_core_ContainerResizePolicy},
    {24, "restartPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {9, "volumeMounts", API_PB_MESSAGE, API_PB_REP, &m_core_VolumeMount},
    {21, "volumeDevices", API_PB_MESSAGE, API_PB_REP, &m_core_VolumeDevice},
    {10, "livenessProbe", API_PB_MESSAGE, 0, &m_core_Probe},
    {11, "readinessProbe", API_PB_MESSAGE, 0, &m_core_Probe},
    {22, "startupProbe", API_PB_MESSAGE, 0, &m_core_Probe},
    {12, "lifecycle", API_PB_MESSAGE, 0, &m_core_Lifecycle},
    {13, "terminationMessagePath", API_PB_STRING, 0, NULL},
    {20, "terminationMessagePolicy", API_PB_STRING, 0, NULL},
    {14, "imagePullPolicy", API_PB_STRING, 0, NULL},
    {15, "securityContext", API_PB_MESSAGE, 0, &m_core_SecurityContext},
    {16, "stdin", API_PB_BOOL, 0, NULL},
    {17, "stdinOnce", API_PB_BOOL, 0, NULL},
    {18, "tty", API_PB_BOOL, 0, NULL},
};
static const api_pb_msg_t m_core_EphemeralContainerCommon =
    API_PB_MSG("EphemeralContainerCommon", f_core_EphemeralContainerCommon);

/* core/v1 PodSecurityContext */
static const api_pb_field_t f_core_PodSecurityContext[] = {
    {1, "seLinuxOptions", API_PB_MESSAGE, 0, &m_core_SELinuxOptions},
    {8, "windowsOptions", API_PB_MESSAGE, 0, &m_core_WindowsSecurityContextOptions},
    {2, "runAsUser", API_PB_INT64, API_PB_KEEP, NULL},
    {6, "runAsGroup", API_PB_INT64, API_PB_KEEP, NULL},
    {3, "runAsNonRoot", API_PB_BOOL, API_PB_KEEP, NULL},
    {4, "supplementalGroups", API_PB_INT64, API_PB_REP, NULL},
    {12, "supplementalGroupsPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {5, "fsGroup", API_PB_INT64, API_PB_KEEP, NULL},
    {7, "sysctls", API_PB_MESSAGE, API_PB_REP, &m_core_Sysctl},
    {9, "fsGroupChangePolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {10, "seccompProfile", API_PB_MESSAGE, 0, &m_core_SeccompProfile},
    {11, "appArmorProfile", API_PB_MESSAGE, 0, &m_core_AppArmorProfile},
    {13, "seLinuxChangePolicy", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_PodSecurityContext =
    API_PB_MSG("PodSecurityContext", f_core_PodSecurityContext);

/* core/v1 Sysctl */
static const api_pb_field_t f_core_Sysctl[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "value", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_Sysctl = API_PB_MSG("Sysctl", f_core_Sysctl);

/* core/v1 Affinity */
static const api_pb_field_t f_core_Affinity[] = {
    {1, "nodeAffinity", API_PB_MESSAGE, 0, &m_core_NodeAffinity},
    {2, "podAffinity", API_PB_MESSAGE, 0, &m_core_PodAffinity},
    {3, "podAntiAffinity", API_PB_MESSAGE, 0, &m_core_PodAntiAffinity},
};
static const api_pb_msg_t m_core_Affinity = API_PB_MSG("Affinity", f_core_Affinity);

/* core/v1 NodeAffinity */
static const api_pb_field_t f_core_NodeAffinity[] = {
    {1, "requiredDuringSchedulingIgnoredDuringExecution", API_PB_MESSAGE, 0, &m_core_NodeSelector},
    {2, "preferredDuringSchedulingIgnoredDuringExecution", API_PB_MESSAGE, API_PB_REP,
     &m_core_PreferredSchedulingTerm},
};
static const api_pb_msg_t m_core_NodeAffinity = API_PB_MSG("NodeAffinity", f_core_NodeAffinity);

/* core/v1 NodeSelector */
static const api_pb_field_t f_core_NodeSelector[] = {
    {1, "nodeSelectorTerms", API_PB_MESSAGE, API_PB_REP, &m_core_NodeSelectorTerm},
};
static const api_pb_msg_t m_core_NodeSelector = API_PB_MSG("NodeSelector", f_core_NodeSelector);

/* core/v1 NodeSelectorTerm */
static const api_pb_field_t f_core_NodeSelectorTerm[] = {
    {1, "matchExpressions", API_PB_MESSAGE, API_PB_REP, &m_core_NodeSelectorRequirement},
    {2, "matchFields", API_PB_MESSAGE, API_PB_REP, &m_core_NodeSelectorRequirement},
};
static const api_pb_msg_t m_core_NodeSelectorTerm =
    API_PB_MSG("NodeSelectorTerm", f_core_NodeSelectorTerm);

/* core/v1 NodeSelectorRequirement */
static const api_pb_field_t f_core_NodeSelectorRequirement[] = {
    {1, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "operator", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "values", API_PB_STRING, API_PB_REP, NULL},
};
static const api_pb_msg_t m_core_NodeSelectorRequirement =
    API_PB_MSG("NodeSelectorRequirement", f_core_NodeSelectorRequirement);

/* core/v1 PreferredSchedulingTerm */
static const api_pb_field_t f_core_PreferredSchedulingTerm[] = {
    {1, "weight", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "preference", API_PB_MESSAGE, 0, &m_core_NodeSelectorTerm},
};
static const api_pb_msg_t m_core_PreferredSchedulingTerm =
    API_PB_MSG("PreferredSchedulingTerm", f_core_PreferredSchedulingTerm);

/* core/v1 PodAffinity */
static const api_pb_field_t f_core_PodAffinity[] = {
    {1, "requiredDuringSchedulingIgnoredDuringExecution", API_PB_MESSAGE, API_PB_REP,
     &m_core_PodAffinityTerm},
    {2, "preferredDuringSchedulingIgnoredDuringExecution", API_PB_MESSAGE, API_PB_REP,
     &m_core_WeightedPodAffinityTerm},
};
static const api_pb_msg_t m_core_PodAffinity = API_PB_MSG("PodAffinity", f_core_PodAffinity);

/* core/v1 PodAffinityTerm */
static const api_pb_field_t f_core_PodAffinityTerm[] = {
    {1, "labelSelector", API_PB_MESSAGE, 0, &m_meta_LabelSelector},
    {2, "namespaces", API_PB_STRING, API_PB_REP, NULL},
    {3, "topologyKey", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "namespaceSelector", API_PB_MESSAGE, 0, &m_meta_LabelSelector},
    {5, "matchLabelKeys", API_PB_STRING, API_PB_REP, NULL},
    {6, "mismatchLabelKeys", API_PB_STRING, API_PB_REP, NULL},
};
static const api_pb_msg_t m_core_PodAffinityTerm =
    API_PB_MSG("PodAffinityTerm", f_core_PodAffinityTerm);

/* core/v1 WeightedPodAffinityTerm */
static const api_pb_field_t f_core_WeightedPodAffinityTerm[] = {
    {1, "weight", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "podAffinityTerm", API_PB_MESSAGE, 0, &m_core_PodAffinityTerm},
};
static const api_pb_msg_t m_core_WeightedPodAffinityTerm =
    API_PB_MSG("WeightedPodAffinityTerm", f_core_WeightedPodAffinityTerm);

/* core/v1 PodAntiAffinity */
static const api_pb_field_t f_core_PodAntiAffinity[] = {
    {1, "requiredDuringSchedulingIgnoredDuringExecution", API_PB_MESSAGE, API_PB_REP,
     &m_core_PodAffinityTerm},
    {2, "preferredDuringSchedulingIgnoredDuringExecution", API_PB_MESSAGE, API_PB_REP,
     &m_core_WeightedPodAffinityTerm},
};
static const api_pb_msg_t m_core_PodAntiAffinity =
    API_PB_MSG("PodAntiAffinity", f_core_PodAntiAffinity);

/* core/v1 Toleration */
static const api_pb_field_t f_core_Toleration[] = {
    {1, "key", API_PB_STRING, 0, NULL},
    {2, "operator", API_PB_STRING, 0, NULL},
    {3, "value", API_PB_STRING, 0, NULL},
    {4, "effect", API_PB_STRING, 0, NULL},
    {5, "tolerationSeconds", API_PB_INT64, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_Toleration = API_PB_MSG("Toleration", f_core_Toleration);

/* core/v1 HostAlias */
static const api_pb_field_t f_core_HostAlias[] = {
    {1, "ip", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "hostnames", API_PB_STRING, API_PB_REP, NULL},
};
static const api_pb_msg_t m_core_HostAlias = API_PB_MSG("HostAlias", f_core_HostAlias);

/* core/v1 PodDNSConfig */
static const api_pb_field_t f_core_PodDNSConfig[] = {
    {1, "nameservers", API_PB_STRING, API_PB_REP, NULL},
    {2, "searches", API_PB_STRING, API_PB_REP, NULL},
    {3, "options", API_PB_MESSAGE, API_PB_REP, &m_core_PodDNSConfigOption},
};
static const api_pb_msg_t m_core_PodDNSConfig = API_PB_MSG("PodDNSConfig", f_core_PodDNSConfig);

/* core/v1 PodDNSConfigOption */
static const api_pb_field_t f_core_PodDNSConfigOption[] = {
    {1, "name", API_PB_STRING, 0, NULL},
    {2, "value", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_PodDNSConfigOption =
    API_PB_MSG("PodDNSConfigOption", f_core_PodDNSConfigOption);

/* core/v1 PodReadinessGate */
static const api_pb_field_t f_core_PodReadinessGate[] = {
    {1, "conditionType", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_PodReadinessGate =
    API_PB_MSG("PodReadinessGate", f_core_PodReadinessGate);

/* core/v1 TopologySpreadConstraint */
static const api_pb_field_t f_core_TopologySpreadConstraint[] = {
    {1, "maxSkew", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "topologyKey", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "whenUnsatisfiable", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "labelSelector", API_PB_MESSAGE, 0, &m_meta_LabelSelector},
    {5, "minDomains", API_PB_INT32, API_PB_KEEP, NULL},
    {6, "nodeAffinityPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {7, "nodeTaintsPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {8, "matchLabelKeys", API_PB_STRING, API_PB_REP, NULL},
};
static const api_pb_msg_t m_core_TopologySpreadConstraint =
    API_PB_MSG("TopologySpreadConstraint", f_core_TopologySpreadConstraint);

/* core/v1 PodOS */
static const api_pb_field_t f_core_PodOS[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_PodOS = API_PB_MSG("PodOS", f_core_PodOS);

/* core/v1 PodSchedulingGate */
static const api_pb_field_t f_core_PodSchedulingGate[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_PodSchedulingGate =
    API_PB_MSG("PodSchedulingGate", f_core_PodSchedulingGate);

/* core/v1 PodResourceClaim */
static const api_pb_field_t f_core_PodResourceClaim[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "resourceClaimName", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "resourceClaimTemplateName", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_core_PodResourceClaim =
    API_PB_MSG("PodResourceClaim", f_core_PodResourceClaim);

/* apps/v1 DeploymentStrategy */
static const api_pb_field_t f_apps_DeploymentStrategy[] = {
    {1, "type", API_PB_STRING, 0, NULL},
    {2, "rollingUpdate", API_PB_MESSAGE, 0, &m_apps_RollingUpdateDeployment},
};
static const api_pb_msg_t m_apps_DeploymentStrategy =
    API_PB_MSG("DeploymentStrategy", f_apps_DeploymentStrategy);

/* apps/v1 RollingUpdateDeployment */
static const api_pb_field_t f_apps_RollingUpdateDeployment[] = {
    {1, "maxUnavailable", API_PB_INTORSTR, 0, NULL},
    {2, "maxSurge", API_PB_INTORSTR, 0, NULL},
};
static const api_pb_msg_t m_apps_RollingUpdateDeployment =
    API_PB_MSG("RollingUpdateDeployment", f_apps_RollingUpdateDeployment);

/* apps/v1 DeploymentStatus */
static const api_pb_field_t f_apps_DeploymentStatus[] = {
    {1, "observedGeneration", API_PB_INT64, 0, NULL},
    {2, "replicas", API_PB_INT32, 0, NULL},
    {3, "updatedReplicas", API_PB_INT32, 0, NULL},
    {7, "readyReplicas", API_PB_INT32, 0, NULL},
    {4, "availableReplicas", API_PB_INT32, 0, NULL},
    {5, "unavailableReplicas", API_PB_INT32, 0, NULL},
    {6, "conditions", API_PB_MESSAGE, API_PB_REP, &m_apps_DeploymentCondition},
    {8, "collisionCount", API_PB_INT32, API_PB_KEEP, NULL},
    {9, "terminatingReplicas", API_PB_INT32, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_apps_DeploymentStatus =
    API_PB_MSG("DeploymentStatus", f_apps_DeploymentStatus);

/* apps/v1 DeploymentCondition */
static const api_pb_field_t f_apps_DeploymentCondition[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL}, {2, "status", API_PB_STRING, API_PB_KEEP, NULL},
    {6, "lastUpdateTime", API_PB_TIME, 0, NULL},   {7, "lastTransitionTime", API_PB_TIME, 0, NULL},
    {4, "reason", API_PB_STRING, 0, NULL},         {5, "message", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_apps_DeploymentCondition =
    API_PB_MSG("DeploymentCondition", f_apps_DeploymentCondition);

/* batch/v1 Job */
static const api_pb_field_t f_batch_Job[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &m_batch_JobSpec},
    {3, "status", API_PB_MESSAGE, 0, &m_batch_JobStatus},
};
static const api_pb_msg_t m_batch_Job = API_PB_MSG("Job", f_batch_Job);

/* batch/v1 JobSpec */
static const api_pb_field_t f_batch_JobSpec[] = {
    {1, "parallelism", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "completions", API_PB_INT32, API_PB_KEEP, NULL},
    {3, "activeDeadlineSeconds", API_PB_INT64, API_PB_KEEP, NULL},
    {11, "podFailurePolicy", API_PB_MESSAGE, 0, &m_batch_PodFailurePolicy},
    {16, "successPolicy", API_PB_MESSAGE, 0, &m_batch_SuccessPolicy},
    {7, "backoffLimit", API_PB_INT32, API_PB_KEEP, NULL},
    {12, "backoffLimitPerIndex", API_PB_INT32, API_PB_KEEP, NULL},
    {13, "maxFailedIndexes", API_PB_INT32, API_PB_KEEP, NULL},
    {4, "selector", API_PB_MESSAGE, 0, &m_meta_LabelSelector},
    {5, "manualSelector", API_PB_BOOL, API_PB_KEEP, NULL},
    {6, "template", API_PB_MESSAGE, 0, &m_core_PodTemplateSpec},
    {8, "ttlSecondsAfterFinished", API_PB_INT32, API_PB_KEEP, NULL},
    {9, "completionMode", API_PB_STRING, API_PB_KEEP, NULL},
    {10, "suspend", API_PB_BOOL, API_PB_KEEP, NULL},
    {14, "podReplacementPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {15, "managedBy", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_batch_JobSpec = API_PB_MSG("JobSpec", f_batch_JobSpec);

/* batch/v1 PodFailurePolicy */
static const api_pb_field_t f_batch_PodFailurePolicy[] = {
    {1, "rules", API_PB_MESSAGE, API_PB_REP, &m_batch_PodFailurePolicyRule},
};
static const api_pb_msg_t m_batch_PodFailurePolicy =
    API_PB_MSG("PodFailurePolicy", f_batch_PodFailurePolicy);

/* batch/v1 PodFailurePolicyRule */
static const api_pb_field_t f_batch_PodFailurePolicyRule[] = {
    {1, "action", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "onExitCodes", API_PB_MESSAGE, 0, &m_batch_PodFailurePolicyOnExitCodesRequirement},
    {3, "onPodConditions", API_PB_MESSAGE, API_PB_REP,
     &m_batch_PodFailurePolicyOnPodConditionsPattern},
};
static const api_pb_msg_t m_batch_PodFailurePolicyRule =
    API_PB_MSG("PodFailurePolicyRule", f_batch_PodFailurePolicyRule);

/* batch/v1 PodFailurePolicyOnExitCodesRequirement */
static const api_pb_field_t f_batch_PodFailurePolicyOnExitCodesRequirement[] = {
    {1, "containerName", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "operator", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "values", API_PB_INT32, API_PB_REP, NULL},
};
static const api_pb_msg_t m_batch_PodFailurePolicyOnExitCodesRequirement = API_PB_MSG(
    "PodFailurePolicyOnExitCodesRequirement", f_batch_PodFailurePolicyOnExitCodesRequirement);

/* batch/v1 PodFailurePolicyOnPodConditionsPattern */
static const api_pb_field_t f_batch_PodFailurePolicyOnPodConditionsPattern[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "status", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_batch_PodFailurePolicyOnPodConditionsPattern = API_PB_MSG(
    "PodFailurePolicyOnPodConditionsPattern", f_batch_PodFailurePolicyOnPodConditionsPattern);

/* batch/v1 SuccessPolicy */
static const api_pb_field_t f_batch_SuccessPolicy[] = {
    {1, "rules", API_PB_MESSAGE, API_PB_REP, &m_batch_SuccessPolicyRule},
};
static const api_pb_msg_t m_batch_SuccessPolicy =
    API_PB_MSG("SuccessPolicy", f_batch_SuccessPolicy);

/* batch/v1 SuccessPolicyRule */
static const api_pb_field_t f_batch_SuccessPolicyRule[] = {
    {1, "succeededIndexes", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "succeededCount", API_PB_INT32, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_batch_SuccessPolicyRule =
    API_PB_MSG("SuccessPolicyRule", f_batch_SuccessPolicyRule);

/* batch/v1 JobStatus */
static const api_pb_field_t f_batch_JobStatus[] = {
    {1, "conditions", API_PB_MESSAGE, API_PB_REP, &m_batch_JobCondition},
    {2, "startTime", API_PB_TIME, 0, NULL},
    {3, "completionTime", API_PB_TIME, 0, NULL},
    {4, "active", API_PB_INT32, 0, NULL},
    {5, "succeeded", API_PB_INT32, 0, NULL},
    {6, "failed", API_PB_INT32, 0, NULL},
    {11, "terminating", API_PB_INT32, API_PB_KEEP, NULL},
    {7, "completedIndexes", API_PB_STRING, 0, NULL},
    {10, "failedIndexes", API_PB_STRING, API_PB_KEEP, NULL},
    {8, "uncountedTerminatedPods", API_PB_MESSAGE, 0, &m_batch_UncountedTerminatedPods},
    {9, "ready", API_PB_INT32, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_batch_JobStatus = API_PB_MSG("JobStatus", f_batch_JobStatus);

/* batch/v1 JobCondition */
static const api_pb_field_t f_batch_JobCondition[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL}, {2, "status", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "lastProbeTime", API_PB_TIME, 0, NULL},    {4, "lastTransitionTime", API_PB_TIME, 0, NULL},
    {5, "reason", API_PB_STRING, 0, NULL},         {6, "message", API_PB_STRING, 0, NULL},
};
static const api_pb_msg_t m_batch_JobCondition = API_PB_MSG("JobCondition", f_batch_JobCondition);

/* batch/v1 UncountedTerminatedPods */
static const api_pb_field_t f_batch_UncountedTerminatedPods[] = {
    {1, "succeeded", API_PB_STRING, API_PB_REP, NULL},
    {2, "failed", API_PB_STRING, API_PB_REP, NULL},
};
static const api_pb_msg_t m_batch_UncountedTerminatedPods =
    API_PB_MSG("UncountedTerminatedPods", f_batch_UncountedTerminatedPods);

/* batch/v1 CronJob */
static const api_pb_field_t f_batch_CronJob[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &m_batch_CronJobSpec},
    {3, "status", API_PB_MESSAGE, 0, &m_batch_CronJobStatus},
};
static const api_pb_msg_t m_batch_CronJob = API_PB_MSG("CronJob", f_batch_CronJob);

/* batch/v1 CronJobSpec */
static const api_pb_field_t f_batch_CronJobSpec[] = {
    {1, "schedule", API_PB_STRING, API_PB_KEEP, NULL},
    {8, "timeZone", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "startingDeadlineSeconds", API_PB_INT64, API_PB_KEEP, NULL},
    {3, "concurrencyPolicy", API_PB_STRING, 0, NULL},
    {4, "suspend", API_PB_BOOL, API_PB_KEEP, NULL},
    {5, "jobTemplate", API_PB_MESSAGE, 0, &m_batch_JobTemplateSpec},
    {6, "successfulJobsHistoryLimit", API_PB_INT32, API_PB_KEEP, NULL},
    {7, "failedJobsHistoryLimit", API_PB_INT32, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_batch_CronJobSpec = API_PB_MSG("CronJobSpec", f_batch_CronJobSpec);

/* batch/v1 JobTemplateSpec */
static const api_pb_field_t f_batch_JobTemplateSpec[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &m_batch_JobSpec},
};
static const api_pb_msg_t m_batch_JobTemplateSpec =
    API_PB_MSG("JobTemplateSpec", f_batch_JobTemplateSpec);

/* batch/v1 CronJobStatus */
static const api_pb_field_t f_batch_CronJobStatus[] = {
    {1, "active", API_PB_MESSAGE, API_PB_REP, &m_core_ObjectReference},
    {4, "lastScheduleTime", API_PB_TIME, 0, NULL},
    {5, "lastSuccessfulTime", API_PB_TIME, 0, NULL},
};
static const api_pb_msg_t m_batch_CronJobStatus =
    API_PB_MSG("CronJobStatus", f_batch_CronJobStatus);

/* core/v1 Binding */
static const api_pb_field_t f_core_Binding[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {2, "target", API_PB_MESSAGE, 0, &m_core_ObjectReference},
};
static const api_pb_msg_t m_core_Binding = API_PB_MSG("Binding", f_core_Binding);

/* policy/v1 Eviction */
static const api_pb_field_t f_policy_Eviction[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &m_meta_ObjectMeta},
    {2, "deleteOptions", API_PB_MESSAGE, 0, &m_meta_DeleteOptions},
};
static const api_pb_msg_t m_policy_Eviction = API_PB_MSG("Eviction", f_policy_Eviction);

/* meta/v1 DeleteOptions */
static const api_pb_field_t f_meta_DeleteOptions[] = {
    {1, "gracePeriodSeconds", API_PB_INT64, API_PB_KEEP, NULL},
    {2, "preconditions", API_PB_MESSAGE, 0, &m_meta_Preconditions},
    {3, "orphanDependents", API_PB_BOOL, API_PB_KEEP, NULL},
    {4, "propagationPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {5, "dryRun", API_PB_STRING, API_PB_REP, NULL},
    {6, "ignoreStoreReadErrorWithClusterBreakingPotential", API_PB_BOOL, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_meta_DeleteOptions = API_PB_MSG("DeleteOptions", f_meta_DeleteOptions);

/* meta/v1 Preconditions */
static const api_pb_field_t f_meta_Preconditions[] = {
    {1, "uid", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "resourceVersion", API_PB_STRING, API_PB_KEEP, NULL},
};
static const api_pb_msg_t m_meta_Preconditions = API_PB_MSG("Preconditions", f_meta_Preconditions);

/* ---- top-level kinds ---- */

static const api_pb_root_t roots[] = {
    {"v1", "Binding", &m_core_Binding},
    {"v1", "ConfigMap", &m_core_ConfigMap},
    {"v1", "Namespace", &m_core_Namespace},
    {"v1", "ResourceQuota", &m_core_ResourceQuota},
    {"v1", "Secret", &m_core_Secret},
    {"v1", "Service", &m_core_Service},
    {"v1", "ServiceAccount", &m_core_ServiceAccount},
    {"apps/v1", "Deployment", &m_apps_Deployment},
    {"batch/v1", "CronJob", &m_batch_CronJob},
    {"batch/v1", "Job", &m_batch_Job},
    {"policy/v1", "Eviction", &m_policy_Eviction},
    /* policy/v1beta1 Eviction has the same fields; kubectl drain falls back
     * to it on servers without policy/v1 */
    {"policy/v1beta1", "Eviction", &m_policy_Eviction},
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
