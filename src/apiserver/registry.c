/*
 * registry.c -- the table of served resources: one line per kind.
 *
 * Storage-only kinds are a line and nothing more; kinds with rules of their
 * own (validation, defaulting, status, tables) add a strategy in a file of
 * their own. CustomResourceDefinitions will add lines at run time.
 */
#include <stdio.h>
#include <string.h>

#include "apiserver_int.h"
#include "lib/err.h"
#include "strategy.h"

static const char *const pod_fields[] = {
    "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
    "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName", NULL};
static const char *const event_fields[] = {
    "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
    "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
    "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type", NULL};
static const char *const node_fields[] = {"spec.unschedulable", NULL};
static const char *const namespace_fields[] = {"status.phase", NULL};
static const char *const secret_fields[] = {"type", NULL};
static const char *const job_fields[] = {"status.successful", NULL};

#define NS 1
#define CLUSTER 0
static const api_resource_t registry[] = {
    /* group, version, resource, singular, kind, list kind, scope, short names,
     * category all, subresources, field selectors */
    {"", "v1", "namespaces", "namespace", "Namespace", "NamespaceList", CLUSTER, {"ns"}, 0,
     API_SUB_STATUS | API_SUB_FINALIZE, namespace_fields, NULL},
    {"", "v1", "pods", "pod", "Pod", "PodList", NS, {"po"}, 1,
     API_SUB_STATUS | API_SUB_BINDING | API_SUB_LOG | API_SUB_EVICTION, pod_fields,
     &api_strategy_pod},
    {"", "v1", "nodes", "node", "Node", "NodeList", CLUSTER, {"no"}, 0, API_SUB_STATUS,
     node_fields, NULL},
    {"", "v1", "events", "event", "Event", "EventList", NS, {"ev"}, 0, 0, event_fields, NULL},
    {"", "v1", "configmaps", "configmap", "ConfigMap", "ConfigMapList", NS, {"cm"}, 0, 0, NULL, NULL},
    {"", "v1", "secrets", "secret", "Secret", "SecretList", NS, {NULL}, 0, 0, secret_fields, NULL},
    {"", "v1", "services", "service", "Service", "ServiceList", NS, {"svc"}, 1, API_SUB_STATUS,
     NULL, &api_strategy_service},
    {"", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", "ServiceAccountList", NS,
     {"sa"}, 0, 0, NULL, NULL},
    {"", "v1", "endpoints", "endpoints", "Endpoints", "EndpointsList", NS, {"ep"}, 0, 0, NULL, NULL},
    {"apps", "v1", "deployments", "deployment", "Deployment", "DeploymentList", NS, {"deploy"},
     1, API_SUB_STATUS | API_SUB_SCALE, NULL, &api_strategy_deployment},
    {"apps", "v1", "replicasets", "replicaset", "ReplicaSet", "ReplicaSetList", NS, {"rs"}, 1,
     API_SUB_STATUS | API_SUB_SCALE, NULL, &api_strategy_replicaset},
    {"apps", "v1", "statefulsets", "statefulset", "StatefulSet", "StatefulSetList", NS, {"sts"},
     1, API_SUB_STATUS | API_SUB_SCALE, NULL, &api_strategy_statefulset},
    {"apps", "v1", "daemonsets", "daemonset", "DaemonSet", "DaemonSetList", NS, {"ds"}, 1,
     API_SUB_STATUS, NULL, &api_strategy_daemonset},
    {"apps", "v1", "controllerrevisions", "controllerrevision", "ControllerRevision",
     "ControllerRevisionList", NS, {NULL}, 0, 0, NULL, NULL},
    {"batch", "v1", "jobs", "job", "Job", "JobList", NS, {NULL}, 1, API_SUB_STATUS, job_fields,
     &api_strategy_job},
    {"coordination.k8s.io", "v1", "leases", "lease", "Lease", "LeaseList", NS, {NULL}, 0, 0,
     NULL, NULL},
};

size_t api_registry_count(void) { return sizeof registry / sizeof registry[0]; }

const api_resource_t *api_registry_at(size_t i)
{
    return i < api_registry_count() ? &registry[i] : NULL;
}

const api_resource_t *api_registry_find(const char *group, const char *version,
                                        const char *resource)
{
    for (size_t i = 0; i < api_registry_count(); i++) {
        const api_resource_t *r = &registry[i];
        if (!strcmp(r->group, group) && !strcmp(r->version, version) &&
            !strcmp(r->resource, resource))
            return r;
    }
    return NULL;
}

const char *api_group_version(const api_resource_t *r, char *buf, size_t n)
{
    if (!*r->group) snprintf(buf, n, "%s", r->version);
    else snprintf(buf, n, "%s/%s", r->group, r->version);
    return buf;
}

int api_key_prefix(const api_resource_t *r, char *buf, size_t n)
{
    return api_ns_prefix(r, "", buf, n);
}

int api_ns_prefix(const api_resource_t *r, const char *ns, char *buf, size_t n)
{
    const char *g = *r->group ? r->group : "core";
    int w = r->namespaced && ns && *ns ? snprintf(buf, n, "/registry/%s/%s/%s/", g, r->resource, ns)
                                       : snprintf(buf, n, "/registry/%s/%s/", g, r->resource);
    return w < 0 || (size_t)w >= n ? KP_EINVAL : 0;
}

int api_object_key(const api_resource_t *r, const char *ns, const char *name, char *buf,
                   size_t n)
{
    int w = r->namespaced ? snprintf(buf, n, "/registry/%s/%s/%s/%s",
                                     *r->group ? r->group : "core", r->resource, ns, name)
                          : snprintf(buf, n, "/registry/%s/%s/%s",
                                     *r->group ? r->group : "core", r->resource, name);
    return w < 0 || (size_t)w >= n ? KP_EINVAL : 0;
}
