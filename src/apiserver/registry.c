/*
 * registry.c -- the table of served resources: one line per kind.
 *
 * Storage-only kinds are a line and nothing more; kinds with rules of their
 * own (validation, defaulting, status, tables) add a strategy in a file of
 * their own. CustomResourceDefinitions add resources at run time: the views
 * at the end of this file publish them to requests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver_int.h"
#include "lib/err.h"
#include "store/store.h"
#include "strategy.h"
#include "watchcache.h"

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
     * category all, subresources, field selectors, strategy, CRD schema and
     * printer columns, scale paths */
    {"", "v1", "namespaces", "namespace", "Namespace", "NamespaceList", CLUSTER, {"ns"}, 0,
     API_SUB_STATUS | API_SUB_FINALIZE, namespace_fields, NULL, NULL, NULL, NULL},
    {"", "v1", "pods", "pod", "Pod", "PodList", NS, {"po"}, 1,
     API_SUB_STATUS | API_SUB_BINDING | API_SUB_LOG | API_SUB_EVICTION, pod_fields,
     &api_strategy_pod, NULL, NULL, NULL},
    {"", "v1", "nodes", "node", "Node", "NodeList", CLUSTER, {"no"}, 0, API_SUB_STATUS,
     node_fields, NULL, NULL, NULL, NULL},
    {"", "v1", "events", "event", "Event", "EventList", NS, {"ev"}, 0, 0, event_fields, NULL, NULL, NULL, NULL},
    {"", "v1", "configmaps", "configmap", "ConfigMap", "ConfigMapList", NS, {"cm"}, 0, 0, NULL,
     &api_strategy_configmap, NULL, NULL, NULL},
    {"", "v1", "secrets", "secret", "Secret", "SecretList", NS, {NULL}, 0, 0, secret_fields,
     &api_strategy_secret, NULL, NULL, NULL},
    {"", "v1", "services", "service", "Service", "ServiceList", NS, {"svc"}, 1, API_SUB_STATUS,
     NULL, &api_strategy_service, NULL, NULL, NULL},
    {"", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", "ServiceAccountList", NS,
     {"sa"}, 0, 0, NULL, NULL, NULL, NULL, NULL},
    {"", "v1", "endpoints", "endpoints", "Endpoints", "EndpointsList", NS, {"ep"}, 0, 0, NULL, NULL, NULL, NULL, NULL},
    {"apps", "v1", "deployments", "deployment", "Deployment", "DeploymentList", NS, {"deploy"},
     1, API_SUB_STATUS | API_SUB_SCALE, NULL, &api_strategy_deployment, NULL, NULL, NULL},
    {"apps", "v1", "replicasets", "replicaset", "ReplicaSet", "ReplicaSetList", NS, {"rs"}, 1,
     API_SUB_STATUS | API_SUB_SCALE, NULL, &api_strategy_replicaset, NULL, NULL, NULL},
    {"apps", "v1", "statefulsets", "statefulset", "StatefulSet", "StatefulSetList", NS, {"sts"},
     1, API_SUB_STATUS | API_SUB_SCALE, NULL, &api_strategy_statefulset, NULL, NULL, NULL},
    {"apps", "v1", "daemonsets", "daemonset", "DaemonSet", "DaemonSetList", NS, {"ds"}, 1,
     API_SUB_STATUS, NULL, &api_strategy_daemonset, NULL, NULL, NULL},
    {"apps", "v1", "controllerrevisions", "controllerrevision", "ControllerRevision",
     "ControllerRevisionList", NS, {NULL}, 0, 0, NULL, NULL, NULL, NULL, NULL},
    {"batch", "v1", "jobs", "job", "Job", "JobList", NS, {NULL}, 1, API_SUB_STATUS, job_fields,
     &api_strategy_job, NULL, NULL, NULL},
    {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
     "CustomResourceDefinition", "CustomResourceDefinitionList", CLUSTER, {"crd", "crds"}, 0,
     API_SUB_STATUS, NULL, &api_strategy_crd, NULL, NULL, NULL},
    {"coordination.k8s.io", "v1", "leases", "lease", "Lease", "LeaseList", NS, {NULL}, 0, 0,
     NULL, NULL, NULL, NULL, NULL},
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

/* ---- views: what is served at one moment (apiserver_int.h) ---- */

struct api_dyn {
    int refs; /* atomic */
    api_resource_t res;
    json_t *owner; /* what res's strings point into */
    wc_t *cache;
};

int api_dyn_new(apiserver_t *s, const api_resource_t *res, json_t *owner, api_dyn_t **out)
{
    *out = NULL;
    api_dyn_t *d = calloc(1, sizeof *d);
    if (!d) return KP_ENOMEM;
    d->refs = 1;
    d->res = *res;
    d->owner = json_incref(owner);
    char prefix[STORE_KEY_MAX + 1];
    int rc = api_key_prefix(&d->res, prefix, sizeof prefix);
    wc_config_t wcc = {.history_bytes = s->cfg.watch_cache_bytes};
    if (!rc) rc = wc_open(s->cfg.store, prefix, &wcc, &d->cache);
    if (rc) {
        json_decref(d->owner);
        free(d);
        return rc;
    }
    *out = d;
    return 0;
}

api_dyn_t *api_dyn_ref(api_dyn_t *d)
{
    if (d) __atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
    return d;
}

void api_dyn_shutdown(api_dyn_t *d)
{
    wc_close(d->cache);
    d->cache = NULL;
}

void api_dyn_end(api_dyn_t *d)
{
    if (d && d->cache) wc_end(d->cache);
}

void api_dyn_unref(api_dyn_t *d)
{
    if (!d || __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL)) return;
    if (d->cache) wc_close(d->cache);
    json_decref(d->owner);
    free(d);
}

const api_resource_t *api_dyn_resource(const api_dyn_t *d) { return &d->res; }

api_view_t *api_view_get(apiserver_t *s)
{
    pthread_mutex_lock(&s->mu);
    api_view_t *v = s->view;
    if (v) __atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&s->mu);
    return v;
}

void api_view_put(api_view_t *v)
{
    if (!v || __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL)) return;
    for (size_t i = 0; i < v->dyn_count; i++) api_dyn_unref(v->dyn[i]);
    free(v->dyn);
    free(v->res);
    free(v->caches);
    free(v);
}

const api_resource_t *api_view_find(const api_view_t *v, const char *group, const char *version,
                                    const char *resource, size_t *index)
{
    for (size_t i = 0; v && i < v->count; i++) {
        const api_resource_t *r = v->res[i];
        if (!strcmp(r->group, group) && !strcmp(r->version, version) &&
            !strcmp(r->resource, resource)) {
            if (index) *index = i;
            return r;
        }
    }
    return NULL;
}

int api_view_publish(apiserver_t *s, api_dyn_t *const *dyn, size_t n)
{
    size_t nb = api_registry_count();
    api_view_t *v = calloc(1, sizeof *v);
    if (!v) return KP_ENOMEM;
    v->refs = 1; /* the server's */
    v->count = nb + n;
    v->res = calloc(v->count, sizeof *v->res);
    v->caches = calloc(v->count, sizeof *v->caches);
    v->dyn = calloc(n ? n : 1, sizeof *v->dyn);
    if (!v->res || !v->caches || !v->dyn) {
        api_view_put(v);
        return KP_ENOMEM;
    }
    for (size_t i = 0; i < nb; i++) {
        v->res[i] = api_registry_at(i);
        v->caches[i] = s->caches[i];
    }
    for (size_t i = 0; i < n; i++) {
        v->dyn[i] = api_dyn_ref(dyn[i]);
        v->dyn_count++;
        v->res[nb + i] = &dyn[i]->res;
        v->caches[nb + i] = dyn[i]->cache;
    }
    pthread_mutex_lock(&s->mu);
    api_view_t *old = s->view;
    s->view = v;
    pthread_mutex_unlock(&s->mu);
    api_view_put(old);
    return 0;
}
