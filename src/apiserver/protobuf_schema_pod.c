/*
 * protobuf_schema_pod.c -- the pod spec tree of the protobuf schema
 * (core/v1 PodTemplateSpec, PodSpec, Container, Volume and all they reach):
 * facts only, as described at the top of protobuf_schema.c.
 */
#include <stddef.h>

#include "apiserver/protobuf_schema.h"
#include "apiserver/protobuf_schema_int.h"

/* core/v1 PodTemplateSpec */
static const api_pb_field_t f_core_PodTemplateSpec[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &api_pb__core_PodSpec},
};
const api_pb_msg_t api_pb__core_PodTemplateSpec =
    API_PB_MSG("PodTemplateSpec", f_core_PodTemplateSpec);

/* core/v1 PodSpec */
static const api_pb_field_t f_core_PodSpec[] = {
    {1, "volumes", API_PB_MESSAGE, API_PB_REP, &api_pb__core_Volume},
    {20, "initContainers", API_PB_MESSAGE, API_PB_REP, &api_pb__core_Container},
    {2, "containers", API_PB_MESSAGE, API_PB_REP, &api_pb__core_Container},
    {34, "ephemeralContainers", API_PB_MESSAGE, API_PB_REP, &api_pb__core_EphemeralContainer},
    {3, "restartPolicy", API_PB_STRING, 0, NULL},
    {4, "terminationGracePeriodSeconds", API_PB_INT64, API_PB_KEEP, NULL},
    {5, "activeDeadlineSeconds", API_PB_INT64, API_PB_KEEP, NULL},
    {6, "dnsPolicy", API_PB_STRING, 0, NULL},
    {7, "nodeSelector", API_PB_MAP, 0, &api_pb__map_string},
    {8, "serviceAccountName", API_PB_STRING, 0, NULL},
    {9, "serviceAccount", API_PB_STRING, 0, NULL},
    {21, "automountServiceAccountToken", API_PB_BOOL, API_PB_KEEP, NULL},
    {10, "nodeName", API_PB_STRING, 0, NULL},
    {11, "hostNetwork", API_PB_BOOL, 0, NULL},
    {12, "hostPID", API_PB_BOOL, 0, NULL},
    {13, "hostIPC", API_PB_BOOL, 0, NULL},
    {27, "shareProcessNamespace", API_PB_BOOL, API_PB_KEEP, NULL},
    {14, "securityContext", API_PB_MESSAGE, 0, &api_pb__core_PodSecurityContext},
    {15, "imagePullSecrets", API_PB_MESSAGE, API_PB_REP, &api_pb__core_LocalObjectReference},
    {16, "hostname", API_PB_STRING, 0, NULL},
    {17, "subdomain", API_PB_STRING, 0, NULL},
    {18, "affinity", API_PB_MESSAGE, 0, &api_pb__core_Affinity},
    {19, "schedulerName", API_PB_STRING, 0, NULL},
    {22, "tolerations", API_PB_MESSAGE, API_PB_REP, &api_pb__core_Toleration},
    {23, "hostAliases", API_PB_MESSAGE, API_PB_REP, &api_pb__core_HostAlias},
    {24, "priorityClassName", API_PB_STRING, 0, NULL},
    {25, "priority", API_PB_INT32, API_PB_KEEP, NULL},
    {26, "dnsConfig", API_PB_MESSAGE, 0, &api_pb__core_PodDNSConfig},
    {28, "readinessGates", API_PB_MESSAGE, API_PB_REP, &api_pb__core_PodReadinessGate},
    {29, "runtimeClassName", API_PB_STRING, API_PB_KEEP, NULL},
    {30, "enableServiceLinks", API_PB_BOOL, API_PB_KEEP, NULL},
    {31, "preemptionPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {32, "overhead", API_PB_MAP, 0, &api_pb__map_quantity},
    {33, "topologySpreadConstraints", API_PB_MESSAGE, API_PB_REP, &api_pb__core_TopologySpreadConstraint},
    {35, "setHostnameAsFQDN", API_PB_BOOL, API_PB_KEEP, NULL},
    {36, "os", API_PB_MESSAGE, 0, &api_pb__core_PodOS},
    {37, "hostUsers", API_PB_BOOL, API_PB_KEEP, NULL},
    {38, "schedulingGates", API_PB_MESSAGE, API_PB_REP, &api_pb__core_PodSchedulingGate},
    {39, "resourceClaims", API_PB_MESSAGE, API_PB_REP, &api_pb__core_PodResourceClaim},
    {40, "resources", API_PB_MESSAGE, 0, &api_pb__core_ResourceRequirements},
};
const api_pb_msg_t api_pb__core_PodSpec = API_PB_MSG("PodSpec", f_core_PodSpec);

/* core/v1 Volume */
static const api_pb_field_t f_core_Volume[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "volumeSource", API_PB_MESSAGE, API_PB_INLINE, &api_pb__core_VolumeSource},
};
const api_pb_msg_t api_pb__core_Volume = API_PB_MSG("Volume", f_core_Volume);

/* core/v1 VolumeSource */
static const api_pb_field_t f_core_VolumeSource[] = {
    {1, "hostPath", API_PB_MESSAGE, 0, &api_pb__core_HostPathVolumeSource},
    {2, "emptyDir", API_PB_MESSAGE, 0, &api_pb__core_EmptyDirVolumeSource},
    {6, "secret", API_PB_MESSAGE, 0, &api_pb__core_SecretVolumeSource},
    {7, "nfs", API_PB_MESSAGE, 0, &api_pb__core_NFSVolumeSource},
    {10, "persistentVolumeClaim", API_PB_MESSAGE, 0, &api_pb__core_PersistentVolumeClaimVolumeSource},
    {16, "downwardAPI", API_PB_MESSAGE, 0, &api_pb__core_DownwardAPIVolumeSource},
    {19, "configMap", API_PB_MESSAGE, 0, &api_pb__core_ConfigMapVolumeSource},
    {26, "projected", API_PB_MESSAGE, 0, &api_pb__core_ProjectedVolumeSource},
    {28, "csi", API_PB_MESSAGE, 0, &api_pb__core_CSIVolumeSource},
    {29, "ephemeral", API_PB_MESSAGE, 0, &api_pb__core_EphemeralVolumeSource},
    {30, "image", API_PB_MESSAGE, 0, &api_pb__core_ImageVolumeSource},
};
const api_pb_msg_t api_pb__core_VolumeSource = API_PB_MSG("VolumeSource", f_core_VolumeSource);

/* core/v1 HostPathVolumeSource */
static const api_pb_field_t f_core_HostPathVolumeSource[] = {
    {1, "path", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "type", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_HostPathVolumeSource =
    API_PB_MSG("HostPathVolumeSource", f_core_HostPathVolumeSource);

/* core/v1 EmptyDirVolumeSource */
static const api_pb_field_t f_core_EmptyDirVolumeSource[] = {
    {1, "medium", API_PB_STRING, 0, NULL},
    {2, "sizeLimit", API_PB_QUANTITY, 0, NULL},
};
const api_pb_msg_t api_pb__core_EmptyDirVolumeSource =
    API_PB_MSG("EmptyDirVolumeSource", f_core_EmptyDirVolumeSource);

/* core/v1 SecretVolumeSource */
static const api_pb_field_t f_core_SecretVolumeSource[] = {
    {1, "secretName", API_PB_STRING, 0, NULL},
    {2, "items", API_PB_MESSAGE, API_PB_REP, &api_pb__core_KeyToPath},
    {3, "defaultMode", API_PB_INT32, API_PB_KEEP, NULL},
    {4, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_SecretVolumeSource =
    API_PB_MSG("SecretVolumeSource", f_core_SecretVolumeSource);

/* core/v1 KeyToPath */
static const api_pb_field_t f_core_KeyToPath[] = {
    {1, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "path", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "mode", API_PB_INT32, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_KeyToPath = API_PB_MSG("KeyToPath", f_core_KeyToPath);

/* core/v1 NFSVolumeSource */
static const api_pb_field_t f_core_NFSVolumeSource[] = {
    {1, "server", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "path", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "readOnly", API_PB_BOOL, 0, NULL},
};
const api_pb_msg_t api_pb__core_NFSVolumeSource =
    API_PB_MSG("NFSVolumeSource", f_core_NFSVolumeSource);

/* core/v1 PersistentVolumeClaimVolumeSource */
static const api_pb_field_t f_core_PersistentVolumeClaimVolumeSource[] = {
    {1, "claimName", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "readOnly", API_PB_BOOL, 0, NULL},
};
const api_pb_msg_t api_pb__core_PersistentVolumeClaimVolumeSource =
    API_PB_MSG("PersistentVolumeClaimVolumeSource", f_core_PersistentVolumeClaimVolumeSource);

/* core/v1 DownwardAPIVolumeSource */
static const api_pb_field_t f_core_DownwardAPIVolumeSource[] = {
    {1, "items", API_PB_MESSAGE, API_PB_REP, &api_pb__core_DownwardAPIVolumeFile},
    {2, "defaultMode", API_PB_INT32, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_DownwardAPIVolumeSource =
    API_PB_MSG("DownwardAPIVolumeSource", f_core_DownwardAPIVolumeSource);

/* core/v1 DownwardAPIVolumeFile */
static const api_pb_field_t f_core_DownwardAPIVolumeFile[] = {
    {1, "path", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "fieldRef", API_PB_MESSAGE, 0, &api_pb__core_ObjectFieldSelector},
    {3, "resourceFieldRef", API_PB_MESSAGE, 0, &api_pb__core_ResourceFieldSelector},
    {4, "mode", API_PB_INT32, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_DownwardAPIVolumeFile =
    API_PB_MSG("DownwardAPIVolumeFile", f_core_DownwardAPIVolumeFile);

/* core/v1 ObjectFieldSelector */
static const api_pb_field_t f_core_ObjectFieldSelector[] = {
    {1, "apiVersion", API_PB_STRING, 0, NULL},
    {2, "fieldPath", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_ObjectFieldSelector =
    API_PB_MSG("ObjectFieldSelector", f_core_ObjectFieldSelector);

/* core/v1 ResourceFieldSelector */
static const api_pb_field_t f_core_ResourceFieldSelector[] = {
    {1, "containerName", API_PB_STRING, 0, NULL},
    {2, "resource", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "divisor", API_PB_QUANTITY, 0, NULL},
};
const api_pb_msg_t api_pb__core_ResourceFieldSelector =
    API_PB_MSG("ResourceFieldSelector", f_core_ResourceFieldSelector);

/* core/v1 ConfigMapVolumeSource */
static const api_pb_field_t f_core_ConfigMapVolumeSource[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &api_pb__core_LocalObjectReference},
    {2, "items", API_PB_MESSAGE, API_PB_REP, &api_pb__core_KeyToPath},
    {3, "defaultMode", API_PB_INT32, API_PB_KEEP, NULL},
    {4, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_ConfigMapVolumeSource =
    API_PB_MSG("ConfigMapVolumeSource", f_core_ConfigMapVolumeSource);

/* core/v1 ProjectedVolumeSource */
static const api_pb_field_t f_core_ProjectedVolumeSource[] = {
    {1, "sources", API_PB_MESSAGE, API_PB_REP, &api_pb__core_VolumeProjection},
    {2, "defaultMode", API_PB_INT32, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_ProjectedVolumeSource =
    API_PB_MSG("ProjectedVolumeSource", f_core_ProjectedVolumeSource);

/* core/v1 VolumeProjection */
static const api_pb_field_t f_core_VolumeProjection[] = {
    {1, "secret", API_PB_MESSAGE, 0, &api_pb__core_SecretProjection},
    {2, "downwardAPI", API_PB_MESSAGE, 0, &api_pb__core_DownwardAPIProjection},
    {3, "configMap", API_PB_MESSAGE, 0, &api_pb__core_ConfigMapProjection},
    {4, "serviceAccountToken", API_PB_MESSAGE, 0, &api_pb__core_ServiceAccountTokenProjection},
    {5, "clusterTrustBundle", API_PB_MESSAGE, 0, &api_pb__core_ClusterTrustBundleProjection},
};
const api_pb_msg_t api_pb__core_VolumeProjection =
    API_PB_MSG("VolumeProjection", f_core_VolumeProjection);

/* core/v1 SecretProjection */
static const api_pb_field_t f_core_SecretProjection[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &api_pb__core_LocalObjectReference},
    {2, "items", API_PB_MESSAGE, API_PB_REP, &api_pb__core_KeyToPath},
    {4, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_SecretProjection =
    API_PB_MSG("SecretProjection", f_core_SecretProjection);

/* core/v1 DownwardAPIProjection */
static const api_pb_field_t f_core_DownwardAPIProjection[] = {
    {1, "items", API_PB_MESSAGE, API_PB_REP, &api_pb__core_DownwardAPIVolumeFile},
};
const api_pb_msg_t api_pb__core_DownwardAPIProjection =
    API_PB_MSG("DownwardAPIProjection", f_core_DownwardAPIProjection);

/* core/v1 ConfigMapProjection */
static const api_pb_field_t f_core_ConfigMapProjection[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &api_pb__core_LocalObjectReference},
    {2, "items", API_PB_MESSAGE, API_PB_REP, &api_pb__core_KeyToPath},
    {4, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_ConfigMapProjection =
    API_PB_MSG("ConfigMapProjection", f_core_ConfigMapProjection);

/* core/v1 ServiceAccountTokenProjection */
static const api_pb_field_t f_core_ServiceAccountTokenProjection[] = {
    {1, "audience", API_PB_STRING, 0, NULL},
    {2, "expirationSeconds", API_PB_INT64, API_PB_KEEP, NULL},
    {3, "path", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_ServiceAccountTokenProjection =
    API_PB_MSG("ServiceAccountTokenProjection", f_core_ServiceAccountTokenProjection);

/* core/v1 ClusterTrustBundleProjection */
static const api_pb_field_t f_core_ClusterTrustBundleProjection[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "signerName", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "labelSelector", API_PB_MESSAGE, 0, &api_pb__meta_LabelSelector},
    {5, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
    {4, "path", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_ClusterTrustBundleProjection =
    API_PB_MSG("ClusterTrustBundleProjection", f_core_ClusterTrustBundleProjection);

/* core/v1 CSIVolumeSource */
static const api_pb_field_t f_core_CSIVolumeSource[] = {
    {1, "driver", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "readOnly", API_PB_BOOL, API_PB_KEEP, NULL},
    {3, "fsType", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "volumeAttributes", API_PB_MAP, 0, &api_pb__map_string},
    {5, "nodePublishSecretRef", API_PB_MESSAGE, 0, &api_pb__core_LocalObjectReference},
};
const api_pb_msg_t api_pb__core_CSIVolumeSource =
    API_PB_MSG("CSIVolumeSource", f_core_CSIVolumeSource);

/* core/v1 EphemeralVolumeSource */
static const api_pb_field_t f_core_EphemeralVolumeSource[] = {
    {1, "volumeClaimTemplate", API_PB_MESSAGE, 0, &api_pb__core_PersistentVolumeClaimTemplate},
};
const api_pb_msg_t api_pb__core_EphemeralVolumeSource =
    API_PB_MSG("EphemeralVolumeSource", f_core_EphemeralVolumeSource);

/* core/v1 PersistentVolumeClaimTemplate */
static const api_pb_field_t f_core_PersistentVolumeClaimTemplate[] = {
    {1, "metadata", API_PB_MESSAGE, 0, &api_pb__meta_ObjectMeta},
    {2, "spec", API_PB_MESSAGE, 0, &api_pb__core_PersistentVolumeClaimSpec},
};
const api_pb_msg_t api_pb__core_PersistentVolumeClaimTemplate =
    API_PB_MSG("PersistentVolumeClaimTemplate", f_core_PersistentVolumeClaimTemplate);

/* core/v1 PersistentVolumeClaimSpec */
static const api_pb_field_t f_core_PersistentVolumeClaimSpec[] = {
    {1, "accessModes", API_PB_STRING, API_PB_REP, NULL},
    {4, "selector", API_PB_MESSAGE, 0, &api_pb__meta_LabelSelector},
    {2, "resources", API_PB_MESSAGE, 0, &api_pb__core_VolumeResourceRequirements},
    {3, "volumeName", API_PB_STRING, 0, NULL},
    {5, "storageClassName", API_PB_STRING, API_PB_KEEP, NULL},
    {6, "volumeMode", API_PB_STRING, API_PB_KEEP, NULL},
    {7, "dataSource", API_PB_MESSAGE, 0, &api_pb__core_TypedLocalObjectReference},
    {8, "dataSourceRef", API_PB_MESSAGE, 0, &api_pb__core_TypedObjectReference},
    {9, "volumeAttributesClassName", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_PersistentVolumeClaimSpec =
    API_PB_MSG("PersistentVolumeClaimSpec", f_core_PersistentVolumeClaimSpec);

/* core/v1 VolumeResourceRequirements */
static const api_pb_field_t f_core_VolumeResourceRequirements[] = {
    {1, "limits", API_PB_MAP, 0, &api_pb__map_quantity},
    {2, "requests", API_PB_MAP, 0, &api_pb__map_quantity},
};
const api_pb_msg_t api_pb__core_VolumeResourceRequirements =
    API_PB_MSG("VolumeResourceRequirements", f_core_VolumeResourceRequirements);

/* core/v1 TypedLocalObjectReference */
static const api_pb_field_t f_core_TypedLocalObjectReference[] = {
    {1, "apiGroup", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "kind", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "name", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_TypedLocalObjectReference =
    API_PB_MSG("TypedLocalObjectReference", f_core_TypedLocalObjectReference);

/* core/v1 TypedObjectReference */
static const api_pb_field_t f_core_TypedObjectReference[] = {
    {1, "apiGroup", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "kind", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "namespace", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_TypedObjectReference =
    API_PB_MSG("TypedObjectReference", f_core_TypedObjectReference);

/* core/v1 ImageVolumeSource */
static const api_pb_field_t f_core_ImageVolumeSource[] = {
    {1, "reference", API_PB_STRING, 0, NULL},
    {2, "pullPolicy", API_PB_STRING, 0, NULL},
};
const api_pb_msg_t api_pb__core_ImageVolumeSource =
    API_PB_MSG("ImageVolumeSource", f_core_ImageVolumeSource);

/* core/v1 Container */
static const api_pb_field_t f_core_Container[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "image", API_PB_STRING, 0, NULL},
    {3, "command", API_PB_STRING, API_PB_REP, NULL},
    {4, "args", API_PB_STRING, API_PB_REP, NULL},
    {5, "workingDir", API_PB_STRING, 0, NULL},
    {6, "ports", API_PB_MESSAGE, API_PB_REP, &api_pb__core_ContainerPort},
    {19, "envFrom", API_PB_MESSAGE, API_PB_REP, &api_pb__core_EnvFromSource},
    {7, "env", API_PB_MESSAGE, API_PB_REP, &api_pb__core_EnvVar},
    {8, "resources", API_PB_MESSAGE, 0, &api_pb__core_ResourceRequirements},
    {23, "resizePolicy", API_PB_MESSAGE, API_PB_REP, &api_pb__core_ContainerResizePolicy},
    {24, "restartPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {9, "volumeMounts", API_PB_MESSAGE, API_PB_REP, &api_pb__core_VolumeMount},
    {21, "volumeDevices", API_PB_MESSAGE, API_PB_REP, &api_pb__core_VolumeDevice},
    {10, "livenessProbe", API_PB_MESSAGE, 0, &api_pb__core_Probe},
    {11, "readinessProbe", API_PB_MESSAGE, 0, &api_pb__core_Probe},
    {22, "startupProbe", API_PB_MESSAGE, 0, &api_pb__core_Probe},
    {12, "lifecycle", API_PB_MESSAGE, 0, &api_pb__core_Lifecycle},
    {13, "terminationMessagePath", API_PB_STRING, 0, NULL},
    {20, "terminationMessagePolicy", API_PB_STRING, 0, NULL},
    {14, "imagePullPolicy", API_PB_STRING, 0, NULL},
    {15, "securityContext", API_PB_MESSAGE, 0, &api_pb__core_SecurityContext},
    {16, "stdin", API_PB_BOOL, 0, NULL},
    {17, "stdinOnce", API_PB_BOOL, 0, NULL},
    {18, "tty", API_PB_BOOL, 0, NULL},
};
const api_pb_msg_t api_pb__core_Container = API_PB_MSG("Container", f_core_Container);

/* core/v1 ContainerPort */
static const api_pb_field_t f_core_ContainerPort[] = {
    {1, "name", API_PB_STRING, 0, NULL},
    {2, "hostPort", API_PB_INT32, 0, NULL},
    {3, "containerPort", API_PB_INT32, API_PB_KEEP, NULL},
    {4, "protocol", API_PB_STRING, 0, NULL},
    {5, "hostIP", API_PB_STRING, 0, NULL},
};
const api_pb_msg_t api_pb__core_ContainerPort = API_PB_MSG("ContainerPort", f_core_ContainerPort);

/* core/v1 EnvFromSource */
static const api_pb_field_t f_core_EnvFromSource[] = {
    {1, "prefix", API_PB_STRING, 0, NULL},
    {2, "configMapRef", API_PB_MESSAGE, 0, &api_pb__core_ConfigMapEnvSource},
    {3, "secretRef", API_PB_MESSAGE, 0, &api_pb__core_SecretEnvSource},
};
const api_pb_msg_t api_pb__core_EnvFromSource = API_PB_MSG("EnvFromSource", f_core_EnvFromSource);

/* core/v1 ConfigMapEnvSource */
static const api_pb_field_t f_core_ConfigMapEnvSource[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &api_pb__core_LocalObjectReference},
    {2, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_ConfigMapEnvSource =
    API_PB_MSG("ConfigMapEnvSource", f_core_ConfigMapEnvSource);

/* core/v1 SecretEnvSource */
static const api_pb_field_t f_core_SecretEnvSource[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &api_pb__core_LocalObjectReference},
    {2, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_SecretEnvSource =
    API_PB_MSG("SecretEnvSource", f_core_SecretEnvSource);

/* core/v1 EnvVar */
static const api_pb_field_t f_core_EnvVar[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "value", API_PB_STRING, 0, NULL},
    {3, "valueFrom", API_PB_MESSAGE, 0, &api_pb__core_EnvVarSource},
};
const api_pb_msg_t api_pb__core_EnvVar = API_PB_MSG("EnvVar", f_core_EnvVar);

/* core/v1 EnvVarSource */
static const api_pb_field_t f_core_EnvVarSource[] = {
    {1, "fieldRef", API_PB_MESSAGE, 0, &api_pb__core_ObjectFieldSelector},
    {2, "resourceFieldRef", API_PB_MESSAGE, 0, &api_pb__core_ResourceFieldSelector},
    {3, "configMapKeyRef", API_PB_MESSAGE, 0, &api_pb__core_ConfigMapKeySelector},
    {4, "secretKeyRef", API_PB_MESSAGE, 0, &api_pb__core_SecretKeySelector},
};
const api_pb_msg_t api_pb__core_EnvVarSource = API_PB_MSG("EnvVarSource", f_core_EnvVarSource);

/* core/v1 ConfigMapKeySelector */
static const api_pb_field_t f_core_ConfigMapKeySelector[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &api_pb__core_LocalObjectReference},
    {2, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_ConfigMapKeySelector =
    API_PB_MSG("ConfigMapKeySelector", f_core_ConfigMapKeySelector);

/* core/v1 SecretKeySelector */
static const api_pb_field_t f_core_SecretKeySelector[] = {
    {1, "localObjectReference", API_PB_MESSAGE, API_PB_INLINE, &api_pb__core_LocalObjectReference},
    {2, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "optional", API_PB_BOOL, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_SecretKeySelector =
    API_PB_MSG("SecretKeySelector", f_core_SecretKeySelector);

/* core/v1 ResourceRequirements */
static const api_pb_field_t f_core_ResourceRequirements[] = {
    {1, "limits", API_PB_MAP, 0, &api_pb__map_quantity},
    {2, "requests", API_PB_MAP, 0, &api_pb__map_quantity},
    {3, "claims", API_PB_MESSAGE, API_PB_REP, &api_pb__core_ResourceClaim},
};
const api_pb_msg_t api_pb__core_ResourceRequirements =
    API_PB_MSG("ResourceRequirements", f_core_ResourceRequirements);

/* core/v1 ResourceClaim */
static const api_pb_field_t f_core_ResourceClaim[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "request", API_PB_STRING, 0, NULL},
};
const api_pb_msg_t api_pb__core_ResourceClaim = API_PB_MSG("ResourceClaim", f_core_ResourceClaim);

/* core/v1 ContainerResizePolicy */
static const api_pb_field_t f_core_ContainerResizePolicy[] = {
    {1, "resourceName", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "restartPolicy", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_ContainerResizePolicy =
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
const api_pb_msg_t api_pb__core_VolumeMount = API_PB_MSG("VolumeMount", f_core_VolumeMount);

/* core/v1 VolumeDevice */
static const api_pb_field_t f_core_VolumeDevice[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "devicePath", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_VolumeDevice = API_PB_MSG("VolumeDevice", f_core_VolumeDevice);

/* core/v1 Probe */
static const api_pb_field_t f_core_Probe[] = {
    {1, "handler", API_PB_MESSAGE, API_PB_INLINE, &api_pb__core_ProbeHandler},
    {2, "initialDelaySeconds", API_PB_INT32, 0, NULL},
    {3, "timeoutSeconds", API_PB_INT32, 0, NULL},
    {4, "periodSeconds", API_PB_INT32, 0, NULL},
    {5, "successThreshold", API_PB_INT32, 0, NULL},
    {6, "failureThreshold", API_PB_INT32, 0, NULL},
    {7, "terminationGracePeriodSeconds", API_PB_INT64, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_Probe = API_PB_MSG("Probe", f_core_Probe);

/* core/v1 ProbeHandler */
static const api_pb_field_t f_core_ProbeHandler[] = {
    {1, "exec", API_PB_MESSAGE, 0, &api_pb__core_ExecAction},
    {2, "httpGet", API_PB_MESSAGE, 0, &api_pb__core_HTTPGetAction},
    {3, "tcpSocket", API_PB_MESSAGE, 0, &api_pb__core_TCPSocketAction},
    {4, "grpc", API_PB_MESSAGE, 0, &api_pb__core_GRPCAction},
};
const api_pb_msg_t api_pb__core_ProbeHandler = API_PB_MSG("ProbeHandler", f_core_ProbeHandler);

/* core/v1 ExecAction */
static const api_pb_field_t f_core_ExecAction[] = {
    {1, "command", API_PB_STRING, API_PB_REP, NULL},
};
const api_pb_msg_t api_pb__core_ExecAction = API_PB_MSG("ExecAction", f_core_ExecAction);

/* core/v1 HTTPGetAction */
static const api_pb_field_t f_core_HTTPGetAction[] = {
    {1, "path", API_PB_STRING, 0, NULL},
    {2, "port", API_PB_INTORSTR, 0, NULL},
    {3, "host", API_PB_STRING, 0, NULL},
    {4, "scheme", API_PB_STRING, 0, NULL},
    {5, "httpHeaders", API_PB_MESSAGE, API_PB_REP, &api_pb__core_HTTPHeader},
};
const api_pb_msg_t api_pb__core_HTTPGetAction = API_PB_MSG("HTTPGetAction", f_core_HTTPGetAction);

/* core/v1 HTTPHeader */
static const api_pb_field_t f_core_HTTPHeader[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "value", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_HTTPHeader = API_PB_MSG("HTTPHeader", f_core_HTTPHeader);

/* core/v1 TCPSocketAction */
static const api_pb_field_t f_core_TCPSocketAction[] = {
    {1, "port", API_PB_INTORSTR, 0, NULL},
    {2, "host", API_PB_STRING, 0, NULL},
};
const api_pb_msg_t api_pb__core_TCPSocketAction =
    API_PB_MSG("TCPSocketAction", f_core_TCPSocketAction);

/* core/v1 GRPCAction */
static const api_pb_field_t f_core_GRPCAction[] = {
    {1, "port", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "service", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_GRPCAction = API_PB_MSG("GRPCAction", f_core_GRPCAction);

/* core/v1 Lifecycle */
static const api_pb_field_t f_core_Lifecycle[] = {
    {1, "postStart", API_PB_MESSAGE, 0, &api_pb__core_LifecycleHandler},
    {2, "preStop", API_PB_MESSAGE, 0, &api_pb__core_LifecycleHandler},
    {3, "stopSignal", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_Lifecycle = API_PB_MSG("Lifecycle", f_core_Lifecycle);

/* core/v1 LifecycleHandler */
static const api_pb_field_t f_core_LifecycleHandler[] = {
    {1, "exec", API_PB_MESSAGE, 0, &api_pb__core_ExecAction},
    {2, "httpGet", API_PB_MESSAGE, 0, &api_pb__core_HTTPGetAction},
    {3, "tcpSocket", API_PB_MESSAGE, 0, &api_pb__core_TCPSocketAction},
    {4, "sleep", API_PB_MESSAGE, 0, &api_pb__core_SleepAction},
};
const api_pb_msg_t api_pb__core_LifecycleHandler =
    API_PB_MSG("LifecycleHandler", f_core_LifecycleHandler);

/* core/v1 SleepAction */
static const api_pb_field_t f_core_SleepAction[] = {
    {1, "seconds", API_PB_INT64, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_SleepAction = API_PB_MSG("SleepAction", f_core_SleepAction);

/* core/v1 SecurityContext */
static const api_pb_field_t f_core_SecurityContext[] = {
    {1, "capabilities", API_PB_MESSAGE, 0, &api_pb__core_Capabilities},
    {2, "privileged", API_PB_BOOL, API_PB_KEEP, NULL},
    {3, "seLinuxOptions", API_PB_MESSAGE, 0, &api_pb__core_SELinuxOptions},
    {10, "windowsOptions", API_PB_MESSAGE, 0, &api_pb__core_WindowsSecurityContextOptions},
    {4, "runAsUser", API_PB_INT64, API_PB_KEEP, NULL},
    {8, "runAsGroup", API_PB_INT64, API_PB_KEEP, NULL},
    {5, "runAsNonRoot", API_PB_BOOL, API_PB_KEEP, NULL},
    {6, "readOnlyRootFilesystem", API_PB_BOOL, API_PB_KEEP, NULL},
    {7, "allowPrivilegeEscalation", API_PB_BOOL, API_PB_KEEP, NULL},
    {9, "procMount", API_PB_STRING, API_PB_KEEP, NULL},
    {11, "seccompProfile", API_PB_MESSAGE, 0, &api_pb__core_SeccompProfile},
    {12, "appArmorProfile", API_PB_MESSAGE, 0, &api_pb__core_AppArmorProfile},
};
const api_pb_msg_t api_pb__core_SecurityContext =
    API_PB_MSG("SecurityContext", f_core_SecurityContext);

/* core/v1 Capabilities */
static const api_pb_field_t f_core_Capabilities[] = {
    {1, "add", API_PB_STRING, API_PB_REP, NULL},
    {2, "drop", API_PB_STRING, API_PB_REP, NULL},
};
const api_pb_msg_t api_pb__core_Capabilities = API_PB_MSG("Capabilities", f_core_Capabilities);

/* core/v1 SELinuxOptions */
static const api_pb_field_t f_core_SELinuxOptions[] = {
    {1, "user", API_PB_STRING, 0, NULL},
    {2, "role", API_PB_STRING, 0, NULL},
    {3, "type", API_PB_STRING, 0, NULL},
    {4, "level", API_PB_STRING, 0, NULL},
};
const api_pb_msg_t api_pb__core_SELinuxOptions =
    API_PB_MSG("SELinuxOptions", f_core_SELinuxOptions);

/* core/v1 WindowsSecurityContextOptions */
static const api_pb_field_t f_core_WindowsSecurityContextOptions[] = {
    {1, "gmsaCredentialSpecName", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "gmsaCredentialSpec", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "runAsUserName", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "hostProcess", API_PB_BOOL, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_WindowsSecurityContextOptions =
    API_PB_MSG("WindowsSecurityContextOptions", f_core_WindowsSecurityContextOptions);

/* core/v1 SeccompProfile */
static const api_pb_field_t f_core_SeccompProfile[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "localhostProfile", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_SeccompProfile =
    API_PB_MSG("SeccompProfile", f_core_SeccompProfile);

/* core/v1 AppArmorProfile */
static const api_pb_field_t f_core_AppArmorProfile[] = {
    {1, "type", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "localhostProfile", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_AppArmorProfile =
    API_PB_MSG("AppArmorProfile", f_core_AppArmorProfile);

/* core/v1 EphemeralContainer */
static const api_pb_field_t f_core_EphemeralContainer[] = {
    {1, "ephemeralContainerCommon", API_PB_MESSAGE, API_PB_INLINE,
     &api_pb__core_EphemeralContainerCommon},
    {2, "targetContainerName", API_PB_STRING, 0, NULL},
};
const api_pb_msg_t api_pb__core_EphemeralContainer =
    API_PB_MSG("EphemeralContainer", f_core_EphemeralContainer);

/* core/v1 EphemeralContainerCommon */
static const api_pb_field_t f_core_EphemeralContainerCommon[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "image", API_PB_STRING, 0, NULL},
    {3, "command", API_PB_STRING, API_PB_REP, NULL},
    {4, "args", API_PB_STRING, API_PB_REP, NULL},
    {5, "workingDir", API_PB_STRING, 0, NULL},
    {6, "ports", API_PB_MESSAGE, API_PB_REP, &api_pb__core_ContainerPort},
    {19, "envFrom", API_PB_MESSAGE, API_PB_REP, &api_pb__core_EnvFromSource},
    {7, "env", API_PB_MESSAGE, API_PB_REP, &api_pb__core_EnvVar},
    {8, "resources", API_PB_MESSAGE, 0, &api_pb__core_ResourceRequirements},
    {23, "resizePolicy", API_PB_MESSAGE, API_PB_REP, &api_pb__core_ContainerResizePolicy},
    {24, "restartPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {9, "volumeMounts", API_PB_MESSAGE, API_PB_REP, &api_pb__core_VolumeMount},
    {21, "volumeDevices", API_PB_MESSAGE, API_PB_REP, &api_pb__core_VolumeDevice},
    {10, "livenessProbe", API_PB_MESSAGE, 0, &api_pb__core_Probe},
    {11, "readinessProbe", API_PB_MESSAGE, 0, &api_pb__core_Probe},
    {22, "startupProbe", API_PB_MESSAGE, 0, &api_pb__core_Probe},
    {12, "lifecycle", API_PB_MESSAGE, 0, &api_pb__core_Lifecycle},
    {13, "terminationMessagePath", API_PB_STRING, 0, NULL},
    {20, "terminationMessagePolicy", API_PB_STRING, 0, NULL},
    {14, "imagePullPolicy", API_PB_STRING, 0, NULL},
    {15, "securityContext", API_PB_MESSAGE, 0, &api_pb__core_SecurityContext},
    {16, "stdin", API_PB_BOOL, 0, NULL},
    {17, "stdinOnce", API_PB_BOOL, 0, NULL},
    {18, "tty", API_PB_BOOL, 0, NULL},
};
const api_pb_msg_t api_pb__core_EphemeralContainerCommon =
    API_PB_MSG("EphemeralContainerCommon", f_core_EphemeralContainerCommon);

/* core/v1 PodSecurityContext */
static const api_pb_field_t f_core_PodSecurityContext[] = {
    {1, "seLinuxOptions", API_PB_MESSAGE, 0, &api_pb__core_SELinuxOptions},
    {8, "windowsOptions", API_PB_MESSAGE, 0, &api_pb__core_WindowsSecurityContextOptions},
    {2, "runAsUser", API_PB_INT64, API_PB_KEEP, NULL},
    {6, "runAsGroup", API_PB_INT64, API_PB_KEEP, NULL},
    {3, "runAsNonRoot", API_PB_BOOL, API_PB_KEEP, NULL},
    {4, "supplementalGroups", API_PB_INT64, API_PB_REP, NULL},
    {12, "supplementalGroupsPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {5, "fsGroup", API_PB_INT64, API_PB_KEEP, NULL},
    {7, "sysctls", API_PB_MESSAGE, API_PB_REP, &api_pb__core_Sysctl},
    {9, "fsGroupChangePolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {10, "seccompProfile", API_PB_MESSAGE, 0, &api_pb__core_SeccompProfile},
    {11, "appArmorProfile", API_PB_MESSAGE, 0, &api_pb__core_AppArmorProfile},
    {13, "seLinuxChangePolicy", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_PodSecurityContext =
    API_PB_MSG("PodSecurityContext", f_core_PodSecurityContext);

/* core/v1 Sysctl */
static const api_pb_field_t f_core_Sysctl[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "value", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_Sysctl = API_PB_MSG("Sysctl", f_core_Sysctl);

/* core/v1 Affinity */
static const api_pb_field_t f_core_Affinity[] = {
    {1, "nodeAffinity", API_PB_MESSAGE, 0, &api_pb__core_NodeAffinity},
    {2, "podAffinity", API_PB_MESSAGE, 0, &api_pb__core_PodAffinity},
    {3, "podAntiAffinity", API_PB_MESSAGE, 0, &api_pb__core_PodAntiAffinity},
};
const api_pb_msg_t api_pb__core_Affinity = API_PB_MSG("Affinity", f_core_Affinity);

/* core/v1 NodeAffinity */
static const api_pb_field_t f_core_NodeAffinity[] = {
    {1, "requiredDuringSchedulingIgnoredDuringExecution", API_PB_MESSAGE, 0, &api_pb__core_NodeSelector},
    {2, "preferredDuringSchedulingIgnoredDuringExecution", API_PB_MESSAGE, API_PB_REP,
     &api_pb__core_PreferredSchedulingTerm},
};
const api_pb_msg_t api_pb__core_NodeAffinity = API_PB_MSG("NodeAffinity", f_core_NodeAffinity);

/* core/v1 NodeSelector */
static const api_pb_field_t f_core_NodeSelector[] = {
    {1, "nodeSelectorTerms", API_PB_MESSAGE, API_PB_REP, &api_pb__core_NodeSelectorTerm},
};
const api_pb_msg_t api_pb__core_NodeSelector = API_PB_MSG("NodeSelector", f_core_NodeSelector);

/* core/v1 NodeSelectorTerm */
static const api_pb_field_t f_core_NodeSelectorTerm[] = {
    {1, "matchExpressions", API_PB_MESSAGE, API_PB_REP, &api_pb__core_NodeSelectorRequirement},
    {2, "matchFields", API_PB_MESSAGE, API_PB_REP, &api_pb__core_NodeSelectorRequirement},
};
const api_pb_msg_t api_pb__core_NodeSelectorTerm =
    API_PB_MSG("NodeSelectorTerm", f_core_NodeSelectorTerm);

/* core/v1 NodeSelectorRequirement */
static const api_pb_field_t f_core_NodeSelectorRequirement[] = {
    {1, "key", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "operator", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "values", API_PB_STRING, API_PB_REP, NULL},
};
const api_pb_msg_t api_pb__core_NodeSelectorRequirement =
    API_PB_MSG("NodeSelectorRequirement", f_core_NodeSelectorRequirement);

/* core/v1 PreferredSchedulingTerm */
static const api_pb_field_t f_core_PreferredSchedulingTerm[] = {
    {1, "weight", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "preference", API_PB_MESSAGE, 0, &api_pb__core_NodeSelectorTerm},
};
const api_pb_msg_t api_pb__core_PreferredSchedulingTerm =
    API_PB_MSG("PreferredSchedulingTerm", f_core_PreferredSchedulingTerm);

/* core/v1 PodAffinity */
static const api_pb_field_t f_core_PodAffinity[] = {
    {1, "requiredDuringSchedulingIgnoredDuringExecution", API_PB_MESSAGE, API_PB_REP,
     &api_pb__core_PodAffinityTerm},
    {2, "preferredDuringSchedulingIgnoredDuringExecution", API_PB_MESSAGE, API_PB_REP,
     &api_pb__core_WeightedPodAffinityTerm},
};
const api_pb_msg_t api_pb__core_PodAffinity = API_PB_MSG("PodAffinity", f_core_PodAffinity);

/* core/v1 PodAffinityTerm */
static const api_pb_field_t f_core_PodAffinityTerm[] = {
    {1, "labelSelector", API_PB_MESSAGE, 0, &api_pb__meta_LabelSelector},
    {2, "namespaces", API_PB_STRING, API_PB_REP, NULL},
    {3, "topologyKey", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "namespaceSelector", API_PB_MESSAGE, 0, &api_pb__meta_LabelSelector},
    {5, "matchLabelKeys", API_PB_STRING, API_PB_REP, NULL},
    {6, "mismatchLabelKeys", API_PB_STRING, API_PB_REP, NULL},
};
const api_pb_msg_t api_pb__core_PodAffinityTerm =
    API_PB_MSG("PodAffinityTerm", f_core_PodAffinityTerm);

/* core/v1 WeightedPodAffinityTerm */
static const api_pb_field_t f_core_WeightedPodAffinityTerm[] = {
    {1, "weight", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "podAffinityTerm", API_PB_MESSAGE, 0, &api_pb__core_PodAffinityTerm},
};
const api_pb_msg_t api_pb__core_WeightedPodAffinityTerm =
    API_PB_MSG("WeightedPodAffinityTerm", f_core_WeightedPodAffinityTerm);

/* core/v1 PodAntiAffinity */
static const api_pb_field_t f_core_PodAntiAffinity[] = {
    {1, "requiredDuringSchedulingIgnoredDuringExecution", API_PB_MESSAGE, API_PB_REP,
     &api_pb__core_PodAffinityTerm},
    {2, "preferredDuringSchedulingIgnoredDuringExecution", API_PB_MESSAGE, API_PB_REP,
     &api_pb__core_WeightedPodAffinityTerm},
};
const api_pb_msg_t api_pb__core_PodAntiAffinity =
    API_PB_MSG("PodAntiAffinity", f_core_PodAntiAffinity);

/* core/v1 Toleration */
static const api_pb_field_t f_core_Toleration[] = {
    {1, "key", API_PB_STRING, 0, NULL},
    {2, "operator", API_PB_STRING, 0, NULL},
    {3, "value", API_PB_STRING, 0, NULL},
    {4, "effect", API_PB_STRING, 0, NULL},
    {5, "tolerationSeconds", API_PB_INT64, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_Toleration = API_PB_MSG("Toleration", f_core_Toleration);

/* core/v1 HostAlias */
static const api_pb_field_t f_core_HostAlias[] = {
    {1, "ip", API_PB_STRING, API_PB_KEEP, NULL},
    {2, "hostnames", API_PB_STRING, API_PB_REP, NULL},
};
const api_pb_msg_t api_pb__core_HostAlias = API_PB_MSG("HostAlias", f_core_HostAlias);

/* core/v1 PodDNSConfig */
static const api_pb_field_t f_core_PodDNSConfig[] = {
    {1, "nameservers", API_PB_STRING, API_PB_REP, NULL},
    {2, "searches", API_PB_STRING, API_PB_REP, NULL},
    {3, "options", API_PB_MESSAGE, API_PB_REP, &api_pb__core_PodDNSConfigOption},
};
const api_pb_msg_t api_pb__core_PodDNSConfig = API_PB_MSG("PodDNSConfig", f_core_PodDNSConfig);

/* core/v1 PodDNSConfigOption */
static const api_pb_field_t f_core_PodDNSConfigOption[] = {
    {1, "name", API_PB_STRING, 0, NULL},
    {2, "value", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_PodDNSConfigOption =
    API_PB_MSG("PodDNSConfigOption", f_core_PodDNSConfigOption);

/* core/v1 PodReadinessGate */
static const api_pb_field_t f_core_PodReadinessGate[] = {
    {1, "conditionType", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_PodReadinessGate =
    API_PB_MSG("PodReadinessGate", f_core_PodReadinessGate);

/* core/v1 TopologySpreadConstraint */
static const api_pb_field_t f_core_TopologySpreadConstraint[] = {
    {1, "maxSkew", API_PB_INT32, API_PB_KEEP, NULL},
    {2, "topologyKey", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "whenUnsatisfiable", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "labelSelector", API_PB_MESSAGE, 0, &api_pb__meta_LabelSelector},
    {5, "minDomains", API_PB_INT32, API_PB_KEEP, NULL},
    {6, "nodeAffinityPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {7, "nodeTaintsPolicy", API_PB_STRING, API_PB_KEEP, NULL},
    {8, "matchLabelKeys", API_PB_STRING, API_PB_REP, NULL},
};
const api_pb_msg_t api_pb__core_TopologySpreadConstraint =
    API_PB_MSG("TopologySpreadConstraint", f_core_TopologySpreadConstraint);

/* core/v1 PodOS */
static const api_pb_field_t f_core_PodOS[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_PodOS = API_PB_MSG("PodOS", f_core_PodOS);

/* core/v1 PodSchedulingGate */
static const api_pb_field_t f_core_PodSchedulingGate[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_PodSchedulingGate =
    API_PB_MSG("PodSchedulingGate", f_core_PodSchedulingGate);

/* core/v1 PodResourceClaim */
static const api_pb_field_t f_core_PodResourceClaim[] = {
    {1, "name", API_PB_STRING, API_PB_KEEP, NULL},
    {3, "resourceClaimName", API_PB_STRING, API_PB_KEEP, NULL},
    {4, "resourceClaimTemplateName", API_PB_STRING, API_PB_KEEP, NULL},
};
const api_pb_msg_t api_pb__core_PodResourceClaim =
    API_PB_MSG("PodResourceClaim", f_core_PodResourceClaim);
