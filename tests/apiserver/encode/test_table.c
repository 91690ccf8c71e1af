/*
 * test_table.c -- src/apiserver/table.c and table_kinds.c: the Table kubectl
 * prints, column by column and cell by cell, as kube-apiserver 1.32 renders
 * them (k/k pkg/printers/internalversion/printers.go, the apiextensions table
 * convertor, apimachinery duration.HumanDuration, client-go jsonpath).
 *
 * Fixtures and expectations are written as JSON with single quotes (jq()
 * turns them into double quotes), and compared with json_equal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/encode/table.h"
#include "lib/err.h"

#define NOW 1714564800 /* 2024-05-01T12:00:00Z */

static json_t *jq(const char *text)
{
    char *t = strdup(text);
    assert_non_null(t);
    for (char *p = t; *p; p++)
        if (*p == '\'') *p = '"';
    json_error_t e;
    json_t *j = json_loads(t, JSON_DECODE_ANY, &e);
    if (!j) fail_msg("bad test JSON %s: %s", t, e.text);
    free(t);
    return j;
}

static void assert_json(const json_t *got, const char *want_text)
{
    json_t *want = jq(want_text);
    if (!json_equal((json_t *)got, want)) {
        char *g = got ? json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        char *w = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
        print_error("got:  %s\nwant: %s\n", g ? g : "(nothing)", w);
        free(g);
        free(w);
        json_decref(want);
        fail();
    }
    json_decref(want);
}

static const api_resource_t *R(const char *group, const char *resource)
{
    const api_resource_t *r = api_registry_find(group, "v1", resource);
    if (!r) fail_msg("no registry entry for %s/%s", group, resource);
    return r;
}

/* The single row of `obj` printed by `res`, with includeObject=None. */
static json_t *row_of(const api_resource_t *res, const char *obj)
{
    json_t *t = api_table_new(res, 1), *o = jq(obj);
    assert_non_null(t);
    assert_int_equal(api_table_add_row(t, res, o, API_TABLE_NONE, NOW), 0);
    json_t *rows = json_object_get(t, "rows");
    assert_int_equal(json_array_size(rows), 1);
    json_t *row = json_incref(json_array_get(rows, 0));
    /* every row has one cell per column */
    assert_int_equal(json_array_size(json_object_get(row, "cells")),
                     json_array_size(json_object_get(t, "columnDefinitions")));
    json_decref(o);
    json_decref(t);
    return row;
}

static void check_cells(const api_resource_t *res, const char *obj, const char *cells)
{
    json_t *row = row_of(res, obj);
    assert_json(json_object_get(row, "cells"), cells);
    assert_null(json_object_get(row, "conditions"));
    json_decref(row);
}

/* The column definitions as "Name:type:format:priority|...", each checked
 * to have exactly the five keys and a description. */
static void check_columns(const api_resource_t *res, const char *want)
{
    json_t *t = api_table_new(res, 1);
    assert_non_null(t);
    char got[2048] = "";
    size_t i, len = 0;
    json_t *c;
    json_array_foreach(json_object_get(t, "columnDefinitions"), i, c) {
        assert_int_equal(json_object_size(c), 5);
        const char *d = json_string_value(json_object_get(c, "description"));
        assert_non_null(d);
        assert_true(strlen(d) > 5);
        assert_true(json_is_integer(json_object_get(c, "priority")));
        len += (size_t)snprintf(got + len, sizeof got - len, "%s%s:%s:%s:%d", i ? "|" : "",
                                json_string_value(json_object_get(c, "name")),
                                json_string_value(json_object_get(c, "type")),
                                json_string_value(json_object_get(c, "format")),
                                (int)json_integer_value(json_object_get(c, "priority")));
    }
    assert_string_equal(got, want);
    json_decref(t);
}

/* ---- HumanDuration ------------------------------------------------------------ */

static void check_age(int64_t s, const char *want)
{
    char out[32];
    api_table_age(s, out, sizeof out);
    if (strcmp(out, want)) fail_msg("age(%lld) = %s, want %s", (long long)s, out, want);
}

static void test_age(void **state)
{
    (void)state;
    check_age(-100, "<invalid>");
    check_age(-2, "<invalid>");
    check_age(-1, "0s");
    check_age(0, "0s");
    check_age(59, "59s");
    check_age(119, "119s");
    check_age(120, "2m");
    check_age(121, "2m1s");
    check_age(599, "9m59s");
    check_age(600, "10m");
    check_age(659, "10m");
    check_age(3 * 3600 - 1, "179m");
    check_age(3 * 3600, "3h");
    check_age(3 * 3600 + 60, "3h1m");
    check_age(3 * 3600 + 119, "3h1m");
    check_age(8 * 3600 - 1, "7h59m");
    check_age(8 * 3600, "8h");
    check_age(48 * 3600 - 1, "47h");
    check_age(48 * 3600, "2d");
    check_age(49 * 3600, "2d1h");
    check_age(8 * 86400 - 1, "7d23h");
    check_age(8 * 86400, "8d");
    check_age(730LL * 86400 - 1, "729d");
    check_age(730LL * 86400, "2y");
    check_age(731LL * 86400, "2y1d");
    check_age(8LL * 365 * 86400 - 1, "7y364d");
    check_age(8LL * 365 * 86400, "8y");
    check_age(100LL * 365 * 86400 + 5, "100y");
    char small[3];
    api_table_age(600, small, sizeof small); /* truncated, still terminated */
    assert_string_equal(small, "10");
}

static void test_include_parse(void **state)
{
    (void)state;
    assert_int_equal(api_table_include_parse(NULL), API_TABLE_METADATA);
    assert_int_equal(api_table_include_parse(""), API_TABLE_METADATA);
    assert_int_equal(api_table_include_parse("Metadata"), API_TABLE_METADATA);
    assert_int_equal(api_table_include_parse("Object"), API_TABLE_OBJECT);
    assert_int_equal(api_table_include_parse("None"), API_TABLE_NONE);
    assert_int_equal(api_table_include_parse("object"), -1);
    assert_int_equal(api_table_include_parse("All"), -1);
}

/* ---- the Table, its rows and row objects --------------------------------------- */

static void test_new_table(void **state)
{
    (void)state;
    const api_resource_t *ns = R("", "namespaces");
    json_t *t = api_table_new(ns, 1);
    json_t *cols = json_incref(json_object_get(t, "columnDefinitions"));
    assert_int_equal(json_array_size(cols), 3);
    json_object_set_new(t, "columnDefinitions", json_string("checked"));
    assert_json(t, "{'kind':'Table','apiVersion':'meta.k8s.io/v1','metadata':{},"
                   "'columnDefinitions':'checked','rows':[]}");
    json_t *c0 = json_array_get(cols, 0);
    assert_string_equal(json_string_value(json_object_get(c0, "name")), "Name");
    assert_string_equal(json_string_value(json_object_get(c0, "format")), "name");
    json_decref(cols);
    json_decref(t);

    /* watch events after the first: columnDefinitions null, as Go encodes nil */
    t = api_table_new(ns, 0);
    assert_json(t, "{'kind':'Table','apiVersion':'meta.k8s.io/v1','metadata':{},"
                   "'columnDefinitions':null,'rows':[]}");
    json_decref(t);
}

static void test_row_objects(void **state)
{
    (void)state;
    const api_resource_t *dep = R("apps", "deployments");
    json_t *o = jq("{'metadata':{'name':'web','namespace':'demo','labels':{'app':'web'},"
                   "'creationTimestamp':'2024-05-01T11:55:00Z'},'spec':{'replicas':1}}");
    json_t *t = api_table_new(dep, 0);
    assert_int_equal(api_table_add_row(t, dep, o, API_TABLE_METADATA, NOW), 0);
    assert_int_equal(api_table_add_row(t, dep, o, API_TABLE_OBJECT, NOW), 0);
    assert_int_equal(api_table_add_row(t, dep, o, API_TABLE_NONE, NOW), 0);
    json_t *rows = json_object_get(t, "rows");
    assert_json(json_object_get(json_array_get(rows, 0), "object"),
                "{'kind':'PartialObjectMetadata','apiVersion':'meta.k8s.io/v1','metadata':"
                "{'name':'web','namespace':'demo','labels':{'app':'web'},"
                "'creationTimestamp':'2024-05-01T11:55:00Z'}}");
    assert_json(json_object_get(json_array_get(rows, 1), "object"),
                "{'kind':'Deployment','apiVersion':'apps/v1','metadata':"
                "{'name':'web','namespace':'demo','labels':{'app':'web'},"
                "'creationTimestamp':'2024-05-01T11:55:00Z'},'spec':{'replicas':1}}");
    assert_json(json_array_get(rows, 2), "{'cells':['web','0/1',0,0,'5m','','',''],'object':null}");
    /* the object passed in is not modified */
    assert_null(json_object_get(o, "kind"));
    json_decref(t);

    /* a v1beta1 Table gets v1beta1 PartialObjectMetadata */
    t = api_table_new(dep, 1);
    json_object_set_new(t, "apiVersion", json_string("meta.k8s.io/v1beta1"));
    assert_int_equal(api_table_add_row(t, dep, o, API_TABLE_METADATA, NOW), 0);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(t, "rows"), 0), "object"),
            "apiVersion")),
        "meta.k8s.io/v1beta1");
    json_decref(t);
    json_decref(o);

    /* no metadata at all: an empty one */
    t = api_table_new(NULL, 1);
    o = jq("{}");
    assert_int_equal(api_table_add_row(t, NULL, o, API_TABLE_METADATA, NOW), 0);
    assert_json(json_array_get(json_object_get(t, "rows"), 0),
                "{'cells':['','<unknown>'],'object':{'kind':'PartialObjectMetadata',"
                "'apiVersion':'meta.k8s.io/v1','metadata':{}}}");
    json_decref(o);
    json_decref(t);
}

static void test_add_row_errors(void **state)
{
    (void)state;
    const api_resource_t *pods = R("", "pods");
    json_t *t = api_table_new(pods, 1), *o = jq("{'metadata':{'name':'a'}}");
    json_t *arr = jq("[1]"), *bare = jq("{'kind':'Table'}");
    assert_int_equal(api_table_add_row(t, pods, arr, API_TABLE_NONE, NOW), KP_EINVAL);
    assert_int_equal(api_table_add_row(t, pods, o, (api_table_include_t)7, NOW), KP_EINVAL);
    assert_int_equal(api_table_add_row(bare, pods, o, API_TABLE_NONE, NOW), KP_EINVAL);
    assert_int_equal(api_table_add_row(arr, pods, o, API_TABLE_NONE, NOW), KP_EINVAL);
    assert_int_equal(json_array_size(json_object_get(t, "rows")), 0);
    assert_json(bare, "{'kind':'Table'}");
    json_decref(arr);
    json_decref(bare);
    json_decref(o);
    json_decref(t);
}

/* ---- columns of every kind -------------------------------------------------------- */

static void test_columns(void **state)
{
    (void)state;
    check_columns(R("", "namespaces"), "Name:string:name:0|Status:string::0|Age:string::0");
    check_columns(R("", "pods"),
                  "Name:string:name:0|Ready:string::0|Status:string::0|Restarts:string::0|"
                  "Age:string::0|IP:string::1|Node:string::1|Nominated Node:string::1|"
                  "Readiness Gates:string::1");
    check_columns(R("", "nodes"),
                  "Name:string:name:0|Status:string::0|Roles:string::0|Age:string::0|"
                  "Version:string::0|Internal-IP:string::1|External-IP:string::1|"
                  "OS-Image:string::1|Kernel-Version:string::1|Container-Runtime:string::1");
    check_columns(R("", "events"),
                  "Last Seen:string::0|Type:string::0|Reason:string::0|Object:string::0|"
                  "Subobject:string::1|Source:string::1|Message:string::0|"
                  "First Seen:string::1|Count:string::1|Name:string:name:1");
    check_columns(R("", "configmaps"), "Name:string:name:0|Data:string::0|Age:string::0");
    check_columns(R("", "secrets"),
                  "Name:string:name:0|Type:string::0|Data:string::0|Age:string::0");
    check_columns(R("", "services"),
                  "Name:string:name:0|Type:string::0|Cluster-IP:string::0|"
                  "External-IP:string::0|Port(s):string::0|Age:string::0|Selector:string::1");
    check_columns(R("", "serviceaccounts"), "Name:string:name:0|Secrets:string::0|Age:string::0");
    check_columns(R("", "endpoints"), "Name:string:name:0|Endpoints:string::0|Age:string::0");
    check_columns(R("apps", "deployments"),
                  "Name:string:name:0|Ready:string::0|Up-to-date:string::0|"
                  "Available:string::0|Age:string::0|Containers:string::1|Images:string::1|"
                  "Selector:string::1");
    check_columns(R("apps", "replicasets"),
                  "Name:string:name:0|Desired:integer::0|Current:integer::0|Ready:integer::0|"
                  "Age:string::0|Containers:string::1|Images:string::1|Selector:string::1");
    check_columns(R("apps", "statefulsets"),
                  "Name:string:name:0|Ready:string::0|Age:string::0|Containers:string::1|"
                  "Images:string::1");
    check_columns(R("apps", "daemonsets"),
                  "Name:string:name:0|Desired:integer::0|Current:integer::0|Ready:integer::0|"
                  "Up-to-date:integer::0|Available:integer::0|Node Selector:string::0|"
                  "Age:string::0|Containers:string::1|Images:string::1|Selector:string::1");
    check_columns(R("apps", "controllerrevisions"),
                  "Name:string:name:0|Controller:string::0|Revision:string::0|Age:string::0");
    check_columns(R("batch", "jobs"),
                  "Name:string:name:0|Status:string::0|Completions:string::0|"
                  "Duration:string::0|Age:string::0|Containers:string::1|Images:string::1|"
                  "Selector:string::1");
    check_columns(R("coordination.k8s.io", "leases"),
                  "Name:string:name:0|Holder:string::0|Age:string::0");
    check_columns(NULL, "Name:string:name:0|Age:string::0");
    api_resource_t crd = {.group = "apiextensions.k8s.io",
                          .version = "v1",
                          .resource = "customresourcedefinitions",
                          .kind = "CustomResourceDefinition"};
    check_columns(&crd, "Name:string:name:0|Created At:date::0");
    /* kinds printers.go has no printer for: the DefaultTableConvertor */
    check_columns(R("", "limitranges"), "Name:string:name:0|Created At:date::0");
    check_columns(R("rbac.authorization.k8s.io", "roles"), "Name:string:name:0|Created At:date::0");
    check_columns(R("rbac.authorization.k8s.io", "clusterroles"),
                  "Name:string:name:0|Created At:date::0");
    api_resource_t other = {.group = "example.com", .version = "v1", .resource = "things"};
    check_columns(&other, "Name:string:name:0|Created At:date::0");
}

/* ---- pods ----------------------------------------------------------------------------- */

#define META(n)                                                                                    \
    "'metadata':{'name':'" n "','namespace':'default','creationTimestamp':"                        \
    "'2024-05-01T11:55:00Z'}"

static void test_pod_running(void **state)
{
    (void)state;
    const api_resource_t *pods = R("", "pods");
    check_cells(
        pods,
        "{" META(
            "web") ",'spec':{'nodeName':'n1','containers':[{'name':'c'}]},"
                   "'status':{'phase':'Running','podIP':'10.0.0.5','podIPs':[{'ip':'10.0.0.5'}],"
                   "'conditions':[{'type':'Ready','status':'True'}],'containerStatuses':[{'name':"
                   "'c','ready':true,'restartCount':0,'state':{'running':{}}}]}}",
        "['web','1/1','Running','0','5m','10.0.0.5','n1','<none>','<none>']");
    /* restarts summed, the latest finishedAt as "(3m ago)"; podIP without podIPs */
    check_cells(
        pods,
        "{" META(
            "web") ",'spec':{'nodeName':'n1','containers':[{'name':'a'},"
                   "{'name':'b'}]},'status':{'phase':'Running','podIP':'10.0.0.6',"
                   "'containerStatuses':[{'name':'a','ready':true,'restartCount':2,"
                   "'lastState':{'terminated':{'exitCode':1,'finishedAt':'2024-05-01T11:57:00Z'}},"
                   "'state':{'running':{}}},{'name':'b','ready':true,'restartCount':1,"
                   "'lastState':{'terminated':{'exitCode':1,'finishedAt':'2024-05-01T11:50:00Z'}},"
                   "'state':{'running':{}}}]}}",
        "['web','2/2','Running','3 (3m ago)','5m','10.0.0.6','n1','<none>','<none>']");
    /* restarts without a finishedAt: a plain count */
    check_cells(
        pods,
        "{" META("web") ",'spec':{'containers':[{'name':'a'}]},'status':{'phase':"
                        "'Running','containerStatuses':[{'name':'a','ready':false,'restartCount':4,"
                        "'state':{'running':{}}}]}}",
        "['web','0/1','Running','4','5m','<none>','<none>','<none>','<none>']");
}

static void test_pod_pending(void **state)
{
    (void)state;
    const api_resource_t *pods = R("", "pods");
    check_cells(pods,
                "{'metadata':{'name':'p','creationTimestamp':'2024-05-01T11:59:30Z'},"
                "'spec':{'nodeName':'n1','containers':[{'name':'c'}]},'status':{'phase':"
                "'Pending','containerStatuses':[{'name':'c','ready':false,'restartCount':0,"
                "'state':{'waiting':{'reason':'ContainerCreating'}}}]}}",
                "['p','0/1','ContainerCreating','0','30s','<none>','n1','<none>','<none>']");
    /* unscheduled, nominated, readiness gates 1/2 */
    check_cells(pods,
                "{" META("q") ",'spec':{'containers':[{'name':'c'},{'name':'d'}],"
                              "'readinessGates':[{'conditionType':'example.com/one'},"
                              "{'conditionType':'example.com/two'}]},'status':{'phase':'Pending',"
                              "'nominatedNodeName':'n2','conditions':[{'type':'example.com/one',"
                              "'status':'True'},{'type':'example.com/two','status':'False'}]}}",
                "['q','0/2','Pending','0','5m','<none>','<none>','n2','1/2']");
    /* scheduling gates win over the phase */
    check_cells(pods,
                "{" META("g") ",'spec':{'containers':[{'name':'c'}]},'status':{'phase':"
                              "'Pending','conditions':[{'type':'PodScheduled','status':'False',"
                              "'reason':'SchedulingGated'}]}}",
                "['g','0/1','SchedulingGated','0','5m','<none>','<none>','<none>','<none>']");
    /* no phase at all prints an empty status */
    check_cells(pods, "{'metadata':{'name':'x'}}",
                "['x','0/0','','0','<unknown>','<none>','<none>','<none>','<none>']");
}

static void test_pod_failing(void **state)
{
    (void)state;
    const api_resource_t *pods = R("", "pods");
    check_cells(
        pods,
        "{" META(
            "crash") ",'spec':{'nodeName':'n1','containers':[{'name':'c'}]},"
                     "'status':{'phase':'Running','containerStatuses':[{'name':'c','ready':false,"
                     "'restartCount':5,'lastState':{'terminated':{'exitCode':1,'reason':'Error',"
                     "'finishedAt':'2024-05-01T11:59:30Z'}},'state':{'waiting':{'reason':"
                     "'CrashLoopBackOff'}}}]}}",
        "['crash','0/1','CrashLoopBackOff','5 (30s ago)','5m','<none>','n1',"
        "'<none>','<none>']");
    /* terminated without a reason: ExitCode:N, or Signal:N */
    check_cells(pods,
                "{" META("e") ",'spec':{'containers':[{'name':'c'}]},'status':{'phase':"
                              "'Running','containerStatuses':[{'name':'c','state':{'terminated':"
                              "{'exitCode':2}}}]}}",
                "['e','0/1','ExitCode:2','0','5m','<none>','<none>','<none>','<none>']");
    check_cells(pods,
                "{" META("s") ",'spec':{'containers':[{'name':'c'}]},'status':{'phase':"
                              "'Running','containerStatuses':[{'name':'c','state':{'terminated':"
                              "{'exitCode':137,'signal':9}}}]}}",
                "['s','0/1','Signal:9','0','5m','<none>','<none>','<none>','<none>']");
}

static void test_pod_finished(void **state)
{
    (void)state;
    const api_resource_t *pods = R("", "pods");
    json_t *row = row_of(
        pods, "{" META("done") ",'spec':{'containers':[{'name':'c'}]},"
                               "'status':{'phase':'Succeeded','containerStatuses':[{'name':'c',"
                               "'ready':false,'state':{'terminated':{'exitCode':0,'reason':"
                               "'Completed'}}}]}}");
    assert_json(row, "{'cells':['done','0/1','Completed','0','5m','<none>','<none>','<none>',"
                     "'<none>'],'conditions':[{'type':'Completed','status':'True','reason':"
                     "'Succeeded','message':'The pod has completed successfully.'}],"
                     "'object':null}");
    json_decref(row);
    row =
        row_of(pods, "{" META("bad") ",'spec':{'containers':[{'name':'c'}]},"
                                     "'status':{'phase':'Failed','containerStatuses':[{'name':'c',"
                                     "'state':{'terminated':{'exitCode':1,'reason':'Error'}}}]}}");
    assert_json(row, "{'cells':['bad','0/1','Error','0','5m','<none>','<none>','<none>',"
                     "'<none>'],'conditions':[{'type':'Completed','status':'True','reason':"
                     "'Failed','message':'The pod failed.'}],'object':null}");
    json_decref(row);
    /* one container Completed while another still runs: Running if Ready, else NotReady */
    const char *both =
        "{" META("mix") ",'spec':{'containers':[{'name':'a'},{'name':'b'}]},"
                        "'status':{'phase':'Running','conditions':[{'type':'Ready','status':"
                        "'%s'}],'containerStatuses':[{'name':'a','ready':true,'state':"
                        "{'running':{}}},{'name':'b','state':{'terminated':{'exitCode':0,"
                        "'reason':'Completed'}}}]}}";
    char obj[1024];
    snprintf(obj, sizeof obj, both, "True");
    check_cells(pods, obj, "['mix','1/2','Running','0','5m','<none>','<none>','<none>','<none>']");
    snprintf(obj, sizeof obj, both, "False");
    check_cells(pods, obj, "['mix','1/2','NotReady','0','5m','<none>','<none>','<none>','<none>']");
}

static void test_pod_deleting(void **state)
{
    (void)state;
    const api_resource_t *pods = R("", "pods");
    check_cells(pods,
                "{'metadata':{'name':'t','creationTimestamp':'2024-05-01T11:55:00Z',"
                "'deletionTimestamp':'2024-05-01T11:59:00Z'},'spec':{'containers':"
                "[{'name':'c'}]},'status':{'phase':'Running','containerStatuses':[{'name':'c',"
                "'ready':true,'state':{'running':{}}}]}}",
                "['t','1/1','Terminating','0','5m','<none>','<none>','<none>','<none>']");
    check_cells(pods,
                "{'metadata':{'name':'u','creationTimestamp':'2024-05-01T11:55:00Z',"
                "'deletionTimestamp':'2024-05-01T11:59:00Z'},'spec':{'containers':"
                "[{'name':'c'}]},'status':{'phase':'Running','reason':'NodeLost',"
                "'containerStatuses':[{'name':'c','ready':true,'state':{'running':{}}}]}}",
                "['u','1/1','Unknown','0','5m','<none>','<none>','<none>','<none>']");
    /* a finished pod being deleted keeps its status */
    json_t *row =
        row_of(pods, "{'metadata':{'name':'v','creationTimestamp':"
                     "'2024-05-01T11:55:00Z','deletionTimestamp':"
                     "'2024-05-01T11:59:00Z'},'spec':{'containers':[{'name':'c'}]},"
                     "'status':{'phase':'Succeeded','containerStatuses':[{'name':"
                     "'c','state':{'terminated':{'exitCode':0,'reason':'Completed'}}}]}}");
    assert_json(json_object_get(row, "cells"),
                "['v','0/1','Completed','0','5m','<none>','<none>','<none>','<none>']");
    assert_non_null(json_object_get(row, "conditions"));
    json_decref(row);
}

static void test_pod_init(void **state)
{
    (void)state;
    const api_resource_t *pods = R("", "pods");
    const char *spec = "'spec':{'initContainers':[{'name':'i1'},{'name':'i2'}],"
                       "'containers':[{'name':'c'}]}";
    char obj[2048];
    snprintf(
        obj, sizeof obj,
        "{" META(
            "init") ",%s,'status':{'phase':'Pending','initContainerStatuses':["
                    "{'name':'i1','state':{'terminated':{'exitCode':0,'reason':'Completed'}}},"
                    "{'name':'i2','restartCount':0,'state':{'running':{}}}],'containerStatuses':["
                    "{'name':'c','state':{'waiting':{'reason':'PodInitializing'}}}]}}",
        spec);
    check_cells(pods, obj,
                "['init','0/1','Init:1/2','0','5m','<none>','<none>','<none>','<none>']");
    snprintf(
        obj, sizeof obj,
        "{" META("init") ",%s,'status':{'phase':'Pending','initContainerStatuses':["
                         "{'name':'i1','restartCount':3,'lastState':{'terminated':{'exitCode':1,"
                         "'finishedAt':'2024-05-01T11:55:00Z'}},'state':{'waiting':{'reason':"
                         "'CrashLoopBackOff'}}},{'name':'i2','state':{'waiting':{'reason':"
                         "'PodInitializing'}}}]}}",
        spec);
    check_cells(pods, obj,
                "['init','0/1','Init:CrashLoopBackOff','3 (5m ago)','5m','<none>','<none>',"
                "'<none>','<none>']");
    snprintf(
        obj, sizeof obj,
        "{" META("init") ",%s,'status':{'phase':'Pending','initContainerStatuses':["
                         "{'name':'i1','state':{'terminated':{'exitCode':1,'reason':'Error'}}}]}}",
        spec);
    check_cells(pods, obj,
                "['init','0/1','Init:Error','0','5m','<none>','<none>','<none>','<none>']");
    snprintf(obj, sizeof obj,
             "{" META("init") ",%s,'status':{'phase':'Pending','initContainerStatuses':["
                              "{'name':'i1','state':{'terminated':{'exitCode':3}}}]}}",
             spec);
    check_cells(pods, obj,
                "['init','0/1','Init:ExitCode:3','0','5m','<none>','<none>','<none>','<none>']");
    snprintf(
        obj, sizeof obj,
        "{" META("init") ",%s,'status':{'phase':'Pending','initContainerStatuses':["
                         "{'name':'i1','state':{'terminated':{'exitCode':0}}},{'name':'i2','state':"
                         "{'terminated':{'exitCode':143,'signal':15}}}]}}",
        spec);
    check_cells(pods, obj,
                "['init','0/1','Init:Signal:15','0','5m','<none>','<none>','<none>','<none>']");
    /* a waiting PodInitializing init container counts as Init:i/n */
    snprintf(obj, sizeof obj,
             "{" META("init") ",%s,'status':{'phase':'Pending','initContainerStatuses':["
                              "{'name':'i1','state':{'waiting':{'reason':'PodInitializing'}}}]}}",
             spec);
    check_cells(pods, obj,
                "['init','0/1','Init:0/2','0','5m','<none>','<none>','<none>','<none>']");
}

static void test_pod_sidecar(void **state)
{
    (void)state;
    const api_resource_t *pods = R("", "pods");
    /* a restartable init container (sidecar) counts in READY and RESTARTS */
    check_cells(
        pods,
        "{" META(
            "sc") ",'spec':{'initContainers':[{'name':'side','restartPolicy':"
                  "'Always'}],'containers':[{'name':'app'}]},'status':{'phase':'Running',"
                  "'initContainerStatuses':[{'name':'side','started':true,'ready':true,"
                  "'restartCount':1,'lastState':{'terminated':{'exitCode':1,'finishedAt':"
                  "'2024-05-01T11:57:00Z'}},'state':{'running':{}}}],'containerStatuses':[{'name':"
                  "'app','ready':true,'restartCount':0,'state':{'running':{}}}]}}",
        "['sc','2/2','Running','1 (3m ago)','5m','<none>','<none>','<none>','<none>']");
    /* initialized (condition True) even though an init container is not done */
    check_cells(
        pods,
        "{" META("ii") ",'spec':{'initContainers':[{'name':'i'}],'containers':"
                       "[{'name':'app'}]},'status':{'phase':'Running','conditions':[{'type':"
                       "'Initialized','status':'True'}],'initContainerStatuses':[{'name':'i',"
                       "'restartCount':7,'state':{'waiting':{'reason':'ImagePullBackOff'}}}],"
                       "'containerStatuses':[{'name':'app','ready':true,'state':{'running':{}}}]}}",
        "['ii','1/1','Init:ImagePullBackOff','0','5m','<none>','<none>','<none>',"
        "'<none>']");
}

/* ---- nodes ---------------------------------------------------------------------------- */

static void test_nodes(void **state)
{
    (void)state;
    const api_resource_t *nodes = R("", "nodes");
    check_cells(nodes,
                "{'metadata':{'name':'n1','creationTimestamp':'2024-04-29T12:00:00Z','labels':"
                "{'node-role.kubernetes.io/master':'','kubernetes.io/hostname':'n1',"
                "'node-role.kubernetes.io/control-plane':''}},'status':{'conditions':["
                "{'type':'MemoryPressure','status':'False'},{'type':'Ready','status':'True'}],"
                "'addresses':[{'type':'Hostname','address':'n1'},{'type':'InternalIP',"
                "'address':'192.168.1.10'}],'nodeInfo':{'kubeletVersion':'v1.32.0',"
                "'osImage':'Debian GNU/Linux 12 (bookworm)','kernelVersion':'6.1.0-18-amd64',"
                "'containerRuntimeVersion':'containerd://1.7.0'}}}",
                "['n1','Ready','control-plane,master','2d','v1.32.0','192.168.1.10','<none>',"
                "'Debian GNU/Linux 12 (bookworm)','6.1.0-18-amd64','containerd://1.7.0']");
    /* cordoned and NotReady; kubernetes.io/role and the prefix label name one role */
    check_cells(nodes,
                "{'metadata':{'name':'n2','creationTimestamp':'2024-05-01T11:55:00Z','labels':"
                "{'kubernetes.io/role':'worker','node-role.kubernetes.io/worker':'',"
                "'node-role.kubernetes.io/':'x'}},'spec':{'unschedulable':true},'status':"
                "{'conditions':[{'type':'Ready','status':'False'}],'addresses':[{'type':"
                "'ExternalIP','address':'1.2.3.4'}]}}",
                "['n2','NotReady,SchedulingDisabled','worker','5m','','<none>','1.2.3.4',"
                "'<unknown>','<unknown>','<unknown>']");
    check_cells(nodes,
                "{'metadata':{'name':'n3'},'status':{'conditions':[{'type':'Ready',"
                "'status':'Unknown'}]}}",
                "['n3','NotReady','<none>','<unknown>','','<none>','<none>','<unknown>',"
                "'<unknown>','<unknown>']");
    check_cells(nodes,
                "{'metadata':{'name':'n4','labels':{'kubernetes.io/role':''}},"
                "'spec':{'unschedulable':true}}",
                "['n4','Unknown,SchedulingDisabled','<none>','<unknown>','','<none>','<none>',"
                "'<unknown>','<unknown>','<unknown>']");
}

/* ---- services and endpoints ---------------------------------------------------------- */

static void test_services(void **state)
{
    (void)state;
    const api_resource_t *svc = R("", "services");
    check_cells(svc,
                "{" META("kube-dns") ",'spec':{'type':'ClusterIP','clusterIP':'10.96.0.10',"
                                     "'clusterIPs':['10.96.0.10'],'ports':[{'port':53,'protocol':'"
                                     "UDP'},{'port':53,"
                                     "'protocol':'TCP'}],'selector':{'k8s-app':'kube-dns'}}}",
                "['kube-dns','ClusterIP','10.96.0.10','<none>','53/UDP,53/TCP','5m',"
                "'k8s-app=kube-dns']");
    check_cells(
        svc,
        "{" META("np") ",'spec':{'type':'NodePort','clusterIP':'10.96.0.11',"
                       "'externalIPs':['1.1.1.1','2.2.2.2'],'ports':[{'port':80,'nodePort':30080,"
                       "'protocol':'TCP'}],'selector':{'b':'2','a':'1'}}}",
        "['np','NodePort','10.96.0.11','1.1.1.1,2.2.2.2','80:30080/TCP','5m','a=1,b=2']");
    check_cells(svc,
                "{" META("lb") ",'spec':{'type':'LoadBalancer','clusterIPs':['10.96.0.12'],"
                               "'ports':[{'port':443,'nodePort':31443}]}}",
                "['lb','LoadBalancer','10.96.0.12','<pending>','443:31443/TCP','5m','<none>']");
    check_cells(
        svc,
        "{" META(
            "lb2") ",'spec':{'type':'LoadBalancer','clusterIPs':['10.96.0.13'],"
                   "'externalIPs':['9.9.9.9'],'ports':[{'port':80,'protocol':'TCP'}]},'status':"
                   "{'loadBalancer':{'ingress':[{'ip':'5.5.5.5'},{'hostname':'lb.example.com'},"
                   "{'ip':'5.5.5.5'}]}}}",
        "['lb2','LoadBalancer','10.96.0.13','5.5.5.5,lb.example.com,9.9.9.9','80/TCP',"
        "'5m','<none>']");
    check_cells(svc,
                "{" META("db") ",'spec':{'type':'ExternalName','externalName':'db.example.com'}}",
                "['db','ExternalName','<none>','db.example.com','<none>','5m','<none>']");
    check_cells(svc, "{" META("hl") ",'spec':{'clusterIP':'None','selector':{'app':'db'}}}",
                "['hl','ClusterIP','None','<none>','<none>','5m','app=db']");
    check_cells(svc, "{" META("odd") ",'spec':{'type':'Weird'}}",
                "['odd','Weird','<none>','<unknown>','<none>','5m','<none>']");
}

static void test_endpoints(void **state)
{
    (void)state;
    const api_resource_t *ep = R("", "endpoints");
    check_cells(ep,
                "{" META("web") ",'subsets':[{'addresses':[{'ip':'10.0.0.1'},{'ip':'10.0.0.2'}],"
                                "'ports':[{'port':80},{'port':443}]}]}",
                "['web','10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...','5m']");
    check_cells(ep,
                "{" META("v6") ",'subsets':[{'addresses':[{'ip':'fd00::1'}],'ports':"
                               "[{'port':8080}]},{'addresses':[{'ip':'10.0.0.9'}]}]}",
                "['v6','[fd00::1]:8080,10.0.0.9','5m']");
    check_cells(ep, "{" META("none") "}", "['none','<none>','5m']");
    check_cells(ep, "{" META("empty") ",'subsets':[{'ports':[{'port':80}]}]}", "['empty','','5m']");
}

/* ---- workloads ------------------------------------------------------------------------ */

#define TEMPLATE                                                                                   \
    "'template':{'spec':{'containers':[{'name':'web','image':'nginx:1.25'},"                       \
    "{'name':'log','image':'busybox'}]}}"

static void test_deployments(void **state)
{
    (void)state;
    const api_resource_t *dep = R("apps", "deployments");
    /* mid-rollout: 3 wanted, 4 exist, 1 updated, 2 ready and available */
    check_cells(dep,
                "{'metadata':{'name':'web','creationTimestamp':'2024-05-01T11:00:00Z'},'spec':"
                "{'replicas':3,'selector':{'matchLabels':{'app':'web'},'matchExpressions':"
                "[{'key':'tier','operator':'In','values':['b','a']},{'key':'env','operator':"
                "'Exists'},{'key':'canary','operator':'DoesNotExist'},{'key':'zone','operator':"
                "'NotIn','values':['z1']}]}," TEMPLATE "},'status':{'replicas':4,"
                "'updatedReplicas':1,'readyReplicas':2,'availableReplicas':2}}",
                "['web','2/3',1,2,'60m','web,log','nginx:1.25,busybox',"
                "'app=web,!canary,env,tier in (a,b),zone notin (z1)']");
    check_cells(dep,
                "{" META("bad") ",'spec':{'selector':{'matchExpressions':[{'key':'a',"
                                "'operator':'Equals','values':['x']}]}}}",
                "['bad','0/1',0,0,'5m','','','<invalid>']");
    check_cells(dep,
                "{" META("bad2") ",'spec':{'selector':{'matchExpressions':[{'key':'a',"
                                 "'operator':'Exists','values':['x']}]}}}",
                "['bad2','0/1',0,0,'5m','','','<invalid>']");
    check_cells(dep, "{" META("zero") ",'spec':{'replicas':0,'selector':{}}}",
                "['zero','0/0',0,0,'5m','','','']");
}

static void test_replicasets_statefulsets(void **state)
{
    (void)state;
    check_cells(R("apps", "replicasets"),
                "{" META("web-abc") ",'spec':{'replicas':3,'selector':{'matchLabels':{"
                                    "'pod-template-hash':'abc','app':'web'}}," TEMPLATE
                                    "},'status':{'replicas':3,"
                                    "'readyReplicas':2}}",
                "['web-abc',3,3,2,'5m','web,log','nginx:1.25,busybox',"
                "'app=web,pod-template-hash=abc']");
    check_cells(R("apps", "replicasets"), "{" META("rs") ",'spec':{}}",
                "['rs',1,0,0,'5m','','','<none>']");
    check_cells(R("apps", "replicasets"),
                "{" META("rs") ",'spec':{'selector':{'matchExpressions':[{'key':'a',"
                               "'operator':'In','values':[]}]}}}",
                "['rs',1,0,0,'5m','','','<error>']");
    check_cells(R("apps", "statefulsets"),
                "{" META("db") ",'spec':{'replicas':3," TEMPLATE "},'status':{'readyReplicas':1}}",
                "['db','1/3','5m','web,log','nginx:1.25,busybox']");
    check_cells(R("apps", "statefulsets"), "{" META("db") "}", "['db','0/1','5m','','']");
}

static void test_daemonsets_revisions(void **state)
{
    (void)state;
    check_cells(
        R("apps", "daemonsets"),
        "{" META("ds") ",'spec':{'selector':{'matchLabels':{'app':'ds'}},'template':"
                       "{'spec':{'nodeSelector':{'kubernetes.io/os':'linux'},'containers':[{'name':"
                       "'agent','image':'agent:1'}]}}},'status':{'desiredNumberScheduled':3,"
                       "'currentNumberScheduled':3,'numberReady':2,'updatedNumberScheduled':1,"
                       "'numberAvailable':2}}",
        "['ds',3,3,2,1,2,'kubernetes.io/os=linux','5m','agent','agent:1','app=ds']");
    check_cells(R("apps", "daemonsets"), "{" META("ds0") "}",
                "['ds0',0,0,0,0,0,'<none>','5m','','','<none>']");
    const api_resource_t *cr = R("apps", "controllerrevisions");
    check_cells(cr,
                "{'metadata':{'name':'web-5d4b','creationTimestamp':'2024-05-01T11:55:00Z',"
                "'ownerReferences':[{'apiVersion':'v1','kind':'Pod','name':'other'},"
                "{'apiVersion':'apps/v1','kind':'StatefulSet','name':'web','controller':true}]},"
                "'revision':2}",
                "['web-5d4b','statefulset.apps/web',2,'5m']");
    check_cells(cr,
                "{'metadata':{'name':'r','ownerReferences':[{'apiVersion':'v1','kind':'Pod',"
                "'name':'p','controller':true}]},'revision':1}",
                "['r','pod/p',1,'<unknown>']");
    check_cells(cr, "{'metadata':{'name':'r'}}", "['r','<none>',0,'<unknown>']");
}

static void test_jobs(void **state)
{
    (void)state;
    const api_resource_t *jobs = R("batch", "jobs");
    const char *tmpl = "'selector':{'matchLabels':{'batch.kubernetes.io/controller-uid':'u1'}},"
                       "'template':{'spec':{'containers':[{'name':'pi','image':'perl'}]}}";
    char obj[1024];
    snprintf(obj, sizeof obj,
             "{" META("pi") ",'spec':{'completions':3,'parallelism':1,%s},'status':"
                            "{'succeeded':1,'startTime':'2024-05-01T11:55:00Z'}}",
             tmpl);
    check_cells(jobs, obj,
                "['pi','Running','1/3','5m','5m','pi','perl',"
                "'batch.kubernetes.io/controller-uid=u1']");
    snprintf(
        obj, sizeof obj,
        "{" META("pi") ",'spec':{'completions':1,%s},'status':{'succeeded':1,"
                       "'startTime':'2024-05-01T11:00:00Z','completionTime':'2024-05-01T11:00:42Z',"
                       "'conditions':[{'type':'Complete','status':'True'}]}}",
        tmpl);
    check_cells(jobs, obj,
                "['pi','Complete','1/1','42s','5m','pi','perl',"
                "'batch.kubernetes.io/controller-uid=u1']");
    check_cells(
        jobs,
        "{" META(
            "f") ",'spec':{'completions':1},'status':{'failed':3,'conditions':"
                 "[{'type':'FailureTarget','status':'True'},{'type':'Failed','status':'True'}]}}",
        "['f','Failed','0/1','','5m','','','<none>']");
    check_cells(
        jobs,
        "{" META("par") ",'spec':{'parallelism':2},'status':{'conditions':[{'type':"
                        "'Complete','status':'False'},{'type':'Suspended','status':'True'}]}}",
        "['par','Suspended','0/1 of 2','','5m','','','<none>']");
    check_cells(jobs,
                "{" META("ft") ",'spec':{'parallelism':1},'status':{'conditions':[{'type':"
                               "'FailureTarget','status':'True'}]}}",
                "['ft','FailureTarget','0/1','','5m','','','<none>']");
    check_cells(jobs,
                "{'metadata':{'name':'del','creationTimestamp':'2024-05-01T11:55:00Z',"
                "'deletionTimestamp':'2024-05-01T11:58:00Z'},'spec':{},'status':{'conditions':"
                "[{'type':'Suspended','status':'True'}]}}",
                "['del','Terminating','0/1','','5m','','','<none>']");
}

/* ---- kinds served since issue 15 ------------------------------------------------------ */

static const api_resource_t *R2(const char *group, const char *version, const char *resource)
{
    const api_resource_t *r = api_registry_find(group, version, resource);
    if (!r) fail_msg("no registry entry for %s/%s/%s", group, version, resource);
    return r;
}

static void test_new_columns(void **state)
{
    (void)state;
    check_columns(R("", "podtemplates"),
                  "Name:string:name:0|Containers:string::0|Images:string::0|Pod Labels:string::0");
    check_columns(R("", "replicationcontrollers"),
                  "Name:string:name:0|Desired:integer::0|Current:integer::0|Ready:integer::0|"
                  "Age:string::0|Containers:string::1|Images:string::1|Selector:string::1");
    check_columns(R("", "persistentvolumes"),
                  "Name:string:name:0|Capacity:string::0|Access Modes:string::0|"
                  "Reclaim Policy:string::0|Status:string::0|Claim:string::0|"
                  "StorageClass:string::0|VolumeAttributesClass:string::0|Reason:string::0|"
                  "Age:string::0|VolumeMode:string::1");
    check_columns(R("", "persistentvolumeclaims"),
                  "Name:string:name:0|Status:string::0|Volume:string::0|Capacity:string::0|"
                  "Access Modes:string::0|StorageClass:string::0|"
                  "VolumeAttributesClass:string::0|Age:string::0|VolumeMode:string::1");
    check_columns(R("", "resourcequotas"),
                  "Name:string:name:0|Age:string::0|Request:string::0|Limit:string::0");
    check_columns(R2("autoscaling", "v2", "horizontalpodautoscalers"),
                  "Name:string:name:0|Reference:string::0|Targets:string::0|MinPods:string::0|"
                  "MaxPods:string::0|Replicas:string::0|Age:string::0");
    check_columns(R("batch", "cronjobs"),
                  "Name:string:name:0|Schedule:string::0|Timezone:string::0|Suspend:boolean::0|"
                  "Active:integer::0|Last Schedule:string::0|Age:string::0|"
                  "Containers:string::1|Images:string::1|Selector:string::1");
    check_columns(R("certificates.k8s.io", "certificatesigningrequests"),
                  "Name:string:name:0|Age:string::0|SignerName:string::0|Requestor:string::0|"
                  "RequestedDuration:string::0|Condition:string::0");
    check_columns(R("discovery.k8s.io", "endpointslices"),
                  "Name:string:name:0|AddressType:string::0|Ports:string::0|"
                  "Endpoints:string::0|Age:string::0");
    check_columns(R("networking.k8s.io", "ingresses"),
                  "Name:string:name:0|Class:string::0|Hosts:string::0|Address:string::0|"
                  "Ports:string::0|Age:string::0");
    check_columns(R("networking.k8s.io", "ingressclasses"),
                  "Name:string:name:0|Controller:string::0|Parameters:string::0|Age:string::0");
    check_columns(R("networking.k8s.io", "ipaddresses"), "Name:string:name:0|ParentRef:string::0");
    check_columns(R("networking.k8s.io", "networkpolicies"),
                  "Name:string:name:0|Pod-Selector:string::0|Age:string::0");
    check_columns(R("networking.k8s.io", "servicecidrs"),
                  "Name:string:name:0|CIDRs:string::0|Age:string::0");
    check_columns(R("node.k8s.io", "runtimeclasses"),
                  "Name:string:name:0|Handler:string::0|Age:string::0");
    check_columns(R("rbac.authorization.k8s.io", "rolebindings"),
                  "Name:string:name:0|Role:string::0|Age:string::0|Users:string::1|"
                  "Groups:string::1|ServiceAccounts:string::1");
    check_columns(R("rbac.authorization.k8s.io", "clusterrolebindings"),
                  "Name:string:name:0|Role:string::0|Age:string::0|Users:string::1|"
                  "Groups:string::1|ServiceAccounts:string::1");
    check_columns(R("scheduling.k8s.io", "priorityclasses"),
                  "Name:string:name:0|Value:integer::0|Global-Default:boolean::0|Age:string::0|"
                  "PreemptionPolicy:string::0");
    check_columns(R("storage.k8s.io", "storageclasses"),
                  "Name:string:name:0|Provisioner:string::0|ReclaimPolicy:string::0|"
                  "VolumeBindingMode:string::0|AllowVolumeExpansion:string::0|Age:string::0");
    check_columns(R("storage.k8s.io", "csidrivers"),
                  "Name:string:name:0|AttachRequired:boolean::0|PodInfoOnMount:boolean::0|"
                  "StorageCapacity:boolean::0|TokenRequests:string::0|"
                  "RequiresRepublish:boolean::0|Modes:string::0|Age:string::0");
    check_columns(R("storage.k8s.io", "csinodes"),
                  "Name:string:name:0|Drivers:integer::0|Age:string::0");
    check_columns(R("storage.k8s.io", "csistoragecapacities"),
                  "Name:string:name:0|Created At:date::0");
    check_columns(R("apiregistration.k8s.io", "apiservices"),
                  "Name:string:name:0|Service:string::0|Available:string::0|Age:string::0");
    /* versions served from another's store print as the stored one */
    check_columns(R2("autoscaling", "v1", "horizontalpodautoscalers"),
                  "Name:string:name:0|Reference:string::0|Targets:string::0|MinPods:string::0|"
                  "MaxPods:string::0|Replicas:string::0|Age:string::0");
    check_columns(R("events.k8s.io", "events"),
                  "Last Seen:string::0|Type:string::0|Reason:string::0|Object:string::0|"
                  "Subobject:string::1|Source:string::1|Message:string::0|"
                  "First Seen:string::1|Count:string::1|Name:string:name:1");
    check_columns(R("storage.k8s.io", "volumeattachments"),
                  "Name:string:name:0|Attacher:string:name:0|PV:string::0|Node:string::0|"
                  "Attached:boolean::0|Age:string::0");
    check_columns(R("storage.k8s.io", "volumeattributesclasses"),
                  "Name:string:name:0|DriverName:string::0|Age:string::0");
    api_resource_t pdb = {.group = "policy", .version = "v1", .resource = "poddisruptionbudgets"};
    check_columns(&pdb, "Name:string:name:0|Min Available:string::0|Max Unavailable:string::0|"
                        "Allowed Disruptions:integer::0|Age:string::0");
}

static void test_core_kinds(void **state)
{
    (void)state;
    check_cells(R("", "podtemplates"),
                "{" META("pt") ",'template':{'metadata':{'labels':{'b':'2','a':'1'}},"
                               "'spec':{'containers':[{'name':'web','image':'nginx:1.25'}]}}}",
                "['pt','web','nginx:1.25','a=1,b=2']");
    check_cells(R("", "podtemplates"), "{" META("bare") "}", "['bare','','','<none>']");
    check_cells(R("", "replicationcontrollers"),
                "{" META("rc") ",'spec':{'replicas':3,'selector':{'app':'web'}," TEMPLATE "},"
                               "'status':{'replicas':3,'readyReplicas':2}}",
                "['rc',3,3,2,'5m','web,log','nginx:1.25,busybox','app=web']");
    check_cells(R("", "replicationcontrollers"), "{" META("rc0") ",'spec':{}}",
                "['rc0',1,0,0,'5m','','','<none>']");
    /* a bound PV: access modes in RWO,ROX,RWX,RWOP order, each once */
    check_cells(R("", "persistentvolumes"),
                "{'metadata':{'name':'pv1','creationTimestamp':'2024-04-30T12:00:00Z'},"
                "'spec':{'capacity':{'storage':'10Gi'},'accessModes':['ReadWriteMany',"
                "'ReadWriteOnce','ReadOnlyMany','ReadWriteOnce'],"
                "'persistentVolumeReclaimPolicy':'Retain','storageClassName':'fast',"
                "'claimRef':{'namespace':'default','name':'data'},'volumeMode':'Filesystem'},"
                "'status':{'phase':'Bound'}}",
                "['pv1','10Gi','RWO,ROX,RWX','Retain','Bound','default/data','fast','<unset>','',"
                "'24h','Filesystem']");
    check_cells(R("", "persistentvolumes"),
                "{'metadata':{'name':'pv2','creationTimestamp':'2024-05-01T11:55:00Z',"
                "'deletionTimestamp':'2024-05-01T11:59:00Z','annotations':"
                "{'volume.beta.kubernetes.io/storage-class':'old'}},"
                "'spec':{'accessModes':['ReadWriteOncePod'],'storageClassName':'new',"
                "'volumeAttributesClassName':'gold'},'status':{'phase':'Released',"
                "'reason':'Gone'}}",
                "['pv2','0','RWOP','','Terminating','','old','gold','Gone','5m','<unset>']");
    /* PVC: capacity and access modes only once bound */
    check_cells(R("", "persistentvolumeclaims"),
                "{" META("data") ",'spec':{'accessModes':['ReadWriteOnce'],'resources':"
                                 "{'requests':{'storage':'1Gi'}},'storageClassName':'standard',"
                                 "'volumeMode':'Filesystem'},'status':{'phase':'Pending'}}",
                "['data','Pending','','','','standard','<unset>','5m','Filesystem']");
    check_cells(R("", "persistentvolumeclaims"),
                "{" META("data") ",'spec':{'volumeName':'pv1','resources':{'requests':"
                                 "{'storage':'1Gi'}}},'status':{'phase':'Bound','accessModes':"
                                 "['ReadOnlyMany','ReadWriteOnce'],'capacity':{'storage':'10Gi'}}}",
                "['data','Bound','pv1','10Gi','RWO,ROX','','<unset>','5m','<unset>']");
    check_cells(R("", "resourcequotas"),
                "{" META("q") ",'status':{'hard':{'pods':'10','limits.memory':'2Gi',"
                              "'requests.cpu':'1','limits.cpu':'2'},'used':{'pods':'3',"
                              "'requests.cpu':'500m','limits.cpu':'1'}}}",
                "['q','5m','pods: 3/10, requests.cpu: 500m/1',"
                "'limits.cpu: 1/2, limits.memory: 0/2Gi']");
    check_cells(R("", "resourcequotas"), "{" META("empty") ",'spec':{'hard':{'pods':'1'}}}",
                "['empty','5m','','']");
    check_cells(R("", "limitranges"),
                "{'metadata':{'name':'lr','creationTimestamp':'2024-05-01T11:55:00Z'}}",
                "['lr','2024-05-01T11:55:00Z']");
}

static void test_workload_kinds(void **state)
{
    (void)state;
    const api_resource_t *hpa = R2("autoscaling", "v2", "horizontalpodautoscalers");
    /* no status yet: <unknown> current values */
    check_cells(hpa,
                "{" META("web") ",'spec':{'scaleTargetRef':{'apiVersion':'apps/v1','kind':"
                                "'Deployment','name':'web'},'minReplicas':2,'maxReplicas':10,"
                                "'metrics':[{'type':'Resource','resource':{'name':'cpu','target':"
                                "{'type':'Utilization','averageUtilization':80}}}]}}",
                "['web','Deployment/web','cpu: <unknown>/80%','2',10,0,'5m']");
    check_cells(hpa,
                "{" META("m") ",'spec':{'scaleTargetRef':{'kind':'StatefulSet','name':'db'},"
                              "'maxReplicas':3,'metrics':["
                              "{'type':'Resource','resource':{'name':'memory','target':{'type':"
                              "'AverageValue','averageValue':'500Mi'}}},"
                              "{'type':'Pods','pods':{'metric':{'name':'qps'},'target':{'type':"
                              "'AverageValue','averageValue':'10'}}},"
                              "{'type':'External','external':{'metric':{'name':'q'},'target':"
                              "{'type':'Value','value':'5'}}}]},"
                              "'status':{'currentReplicas':2,'currentMetrics':["
                              "{'type':'Resource','resource':{'name':'memory','current':"
                              "{'averageValue':'200Mi'}}},{'type':'Pods','pods':{'current':"
                              "{'averageValue':'7'}}}]}}",
                "['m','StatefulSet/db','memory: 200Mi/500Mi, 7/10 + 1 more...','<unset>',3,2,"
                "'5m']");
    check_cells(hpa,
                "{" META("o") ",'spec':{'scaleTargetRef':{'kind':'Deployment','name':'a'},"
                              "'maxReplicas':3,'metrics':[{'type':'Object','object':{'target':"
                              "{'type':'AverageValue','averageValue':'3'}}},{'type':'Resource',"
                              "'resource':{'name':'cpu','target':{'type':'Utilization'}}}]},"
                              "'status':{'currentMetrics':[{'type':'Object','object':"
                              "{'current':{'value':'1'}}},{'type':'Resource','resource':"
                              "{'current':{'averageUtilization':41}}}]}}",
                "['o','Deployment/a','<unknown>/3 (avg), cpu: 41%/<auto>','<unset>',3,0,'5m']");
    check_cells(hpa, "{" META("none") ",'spec':{'scaleTargetRef':{'kind':'D','name':'n'}}}",
                "['none','D/n','<none>','<unset>',0,0,'5m']");

    /* autoscaling/v1 prints its v2 form: the CPU target becomes a metric */
    check_cells(R2("autoscaling", "v1", "horizontalpodautoscalers"),
                "{" META("web1") ",'spec':{'scaleTargetRef':{'apiVersion':'apps/v1','kind':"
                                 "'Deployment','name':'web'},'minReplicas':1,'maxReplicas':5,"
                                 "'targetCPUUtilizationPercentage':60},'status':"
                                 "{'currentReplicas':1,'currentCPUUtilizationPercentage':12}}",
                "['web1','Deployment/web','cpu: 12%/60%','1',5,1,'5m']");
    /* events.k8s.io/v1 prints as the core Event it is stored as */
    check_cells(
        R("events.k8s.io", "events"),
        "{'metadata':{'name':'e1','namespace':'default'},'regarding':{'kind':'Pod','name':"
        "'web'},'note':'Pulled image','reason':'Pulled','type':'Normal',"
        "'deprecatedLastTimestamp':'2024-05-01T11:58:00Z','deprecatedCount':3,"
        "'reportingController':'kubelet','reportingInstance':'node-1'}",
        "['2m','Normal','Pulled','pod/web','','kubelet, node-1','Pulled image','<unknown>',3,"
        "'e1']");

    const api_resource_t *cj = R("batch", "cronjobs");
    check_cells(cj,
                "{" META("nightly") ",'spec':{'schedule':'0 3 * * *','suspend':false,"
                                    "'jobTemplate':{'spec':{" TEMPLATE "}}},'status':{'active':"
                                    "[{'name':'j1'}],'lastScheduleTime':'2024-05-01T03:00:00Z'}}",
                "['nightly','0 3 * * *','<none>','False',1,'9h','5m','web,log',"
                "'nginx:1.25,busybox','<none>']");
    check_cells(cj,
                "{" META("tz") ",'spec':{'schedule':'*/5 * * * *','timeZone':'Europe/Paris',"
                               "'suspend':true,'jobTemplate':{'spec':{'selector':{'matchLabels':"
                               "{'a':'b'}}}}},'status':{'lastScheduleTime':"
                               "'2024-05-01T11:58:30Z'}}",
                "['tz','*/5 * * * *','Europe/Paris','True',0,'90s','5m','','','a=b']");
    check_cells(cj, "{" META("new") ",'spec':{'schedule':'@hourly'}}",
                "['new','@hourly','<none>','<unset>',0,'<none>','5m','','','<none>']");

    const api_resource_t *csr = R("certificates.k8s.io", "certificatesigningrequests");
    check_cells(csr,
                "{" META("node-csr") ",'spec':{'signerName':'kubernetes.io/kube-apiserver-client',"
                                     "'username':'alice','expirationSeconds':86400},"
                                     "'status':{'conditions':[{'type':'Approved','status':'True'}],"
                                     "'certificate':'LS0t'}}",
                "['node-csr','5m','kubernetes.io/kube-apiserver-client','alice','24h',"
                "'Approved,Issued']");
    check_cells(csr,
                "{" META("c2") ",'spec':{'username':'bob'},'status':{'conditions':[{'type':"
                               "'Approved'},{'type':'Failed'},{'type':'Denied'}]}}",
                "['c2','5m','<none>','bob','<none>','Denied,Failed']");
    check_cells(csr, "{" META("c3") ",'spec':{'expirationSeconds':3600}}",
                "['c3','5m','<none>','','60m','Pending']");
}

static void test_network_kinds(void **state)
{
    (void)state;
    const api_resource_t *eps = R("discovery.k8s.io", "endpointslices");
    check_cells(eps,
                "{" META("web-abc") ",'addressType':'IPv4','ports':[{'name':'http','port':80},"
                                    "{'name':'metrics'},{}],'endpoints':[{'addresses':"
                                    "['10.0.0.1']},{'addresses':['10.0.0.2','10.0.0.3']},"
                                    "{'addresses':['10.0.0.4','10.0.0.5']}]}",
                "['web-abc','IPv4','80,metrics,*','10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...','5m']");
    check_cells(eps, "{" META("empty") ",'addressType':'IPv6'}",
                "['empty','IPv6','<unset>','<unset>','5m']");
    check_cells(eps,
                "{" META("p") ",'addressType':'FQDN','ports':[{'port':1},{'port':2},{'port':3},"
                              "{'port':4}]}",
                "['p','FQDN','1,2,3 + 1 more...','<unset>','5m']");

    const api_resource_t *ing = R("networking.k8s.io", "ingresses");
    check_cells(
        ing,
        "{" META("web") ",'spec':{'ingressClassName':'nginx','rules':[{'host':'a.example'},"
                        "{'http':{}},{'host':'b.example'},{'host':'c.example'},"
                        "{'host':'d.example'}],'tls':[{'hosts':['a.example']}]},"
                        "'status':{'loadBalancer':{'ingress':[{'ip':'192.0.2.9'},"
                        "{'hostname':'lb.example'},{'ip':'192.0.2.10'},{'ip':'192.0.2.9'}]}}}",
        "['web','nginx','a.example,b.example,c.example + 2 more...',"
        "'192.0.2.10,192.0.2.9,lb.example','80, 443','5m']");
    check_cells(ing, "{" META("any") ",'spec':{'defaultBackend':{}}}",
                "['any','<none>','*','','80','5m']");
    const api_resource_t *ic = R("networking.k8s.io", "ingressclasses");
    check_cells(ic,
                "{" META("nginx") ",'spec':{'controller':'k8s.io/ingress-nginx','parameters':"
                                  "{'apiGroup':'k8s.example.com','kind':'IngressParameters',"
                                  "'name':'external-lb'}}}",
                "['nginx','k8s.io/ingress-nginx','IngressParameters.k8s.example.com/external-lb',"
                "'5m']");
    check_cells(ic, "{" META("plain") ",'spec':{'controller':'example.com/c'}}",
                "['plain','example.com/c','<none>','5m']");
    const api_resource_t *ip = R("networking.k8s.io", "ipaddresses");
    check_cells(ip,
                "{" META("10.96.0.10") ",'spec':{'parentRef':{'group':'','resource':'services',"
                                       "'namespace':'kube-system','name':'kube-dns'}}}",
                "['10.96.0.10','services/kube-system/kube-dns']");
    check_cells(ip,
                "{" META("10.96.0.11") ",'spec':{'parentRef':{'group':'Gateway.Example',"
                                       "'resource':'Gateways','name':'gw'}}}",
                "['10.96.0.11','gateways.gateway.example/gw']");
    check_cells(ip, "{" META("10.96.0.12") ",'spec':{}}", "['10.96.0.12','<none>']");
    const api_resource_t *np = R("networking.k8s.io", "networkpolicies");
    check_cells(np,
                "{" META("deny") ",'spec':{'podSelector':{'matchLabels':{'app':'db'}},"
                                 "'policyTypes':['Ingress']}}",
                "['deny','app=db','5m']");
    check_cells(np, "{" META("all") ",'spec':{'podSelector':{}}}", "['all','<none>','5m']");
    check_cells(R("networking.k8s.io", "servicecidrs"),
                "{" META("kubernetes") ",'spec':{'cidrs':['10.96.0.0/12','fd00::/108']}}",
                "['kubernetes','10.96.0.0/12,fd00::/108','5m']");
    check_cells(R("node.k8s.io", "runtimeclasses"), "{" META("gvisor") ",'handler':'runsc'}",
                "['gvisor','runsc','5m']");
}

static void test_cluster_kinds(void **state)
{
    (void)state;
    const char *subjects = "'subjects':[{'kind':'User','name':'alice'},{'kind':'Group','name':"
                           "'devs'},{'kind':'ServiceAccount','name':'ci','namespace':'build'},"
                           "{'kind':'User','name':'bob'},{'kind':'Other','name':'x'}]";
    char obj[1024];
    snprintf(obj, sizeof obj,
             "{" META("read-pods") ",'roleRef':{'apiGroup':'rbac.authorization.k8s.io','kind':"
                                   "'ClusterRole','name':'view'},%s}",
             subjects);
    check_cells(R("rbac.authorization.k8s.io", "rolebindings"), obj,
                "['read-pods','ClusterRole/view','5m','alice, bob','devs','build/ci']");
    check_cells(R("rbac.authorization.k8s.io", "clusterrolebindings"),
                "{" META("admins") ",'roleRef':{'kind':'ClusterRole','name':'cluster-admin'}}",
                "['admins','ClusterRole/cluster-admin','5m','','','']");
    check_cells(R("rbac.authorization.k8s.io", "roles"),
                "{'metadata':{'name':'r','creationTimestamp':'2024-05-01T11:55:00Z'},'rules':[]}",
                "['r','2024-05-01T11:55:00Z']");
    const api_resource_t *pc = R("scheduling.k8s.io", "priorityclasses");
    check_cells(pc,
                "{" META("high") ",'value':1000000,'globalDefault':true,'preemptionPolicy':"
                                 "'PreemptLowerPriority'}",
                "['high',1000000,true,'5m','PreemptLowerPriority']");
    check_cells(pc, "{" META("low") ",'value':-5}", "['low',-5,false,'5m','']");
    const api_resource_t *sc = R("storage.k8s.io", "storageclasses");
    check_cells(sc,
                "{'metadata':{'name':'standard','creationTimestamp':'2024-05-01T11:55:00Z',"
                "'annotations':{'storageclass.kubernetes.io/is-default-class':'true'}},"
                "'provisioner':'rancher.io/local-path','reclaimPolicy':'Retain',"
                "'volumeBindingMode':'WaitForFirstConsumer','allowVolumeExpansion':true}",
                "['standard (default)','rancher.io/local-path','Retain','WaitForFirstConsumer',"
                "true,'5m']");
    check_cells(sc, "{" META("plain") ",'provisioner':'p'}",
                "['plain','p','Delete','Immediate',false,'5m']");
    const api_resource_t *csid = R("storage.k8s.io", "csidrivers");
    check_cells(csid,
                "{" META("ebs.csi.aws.com") ",'spec':{'attachRequired':false,'podInfoOnMount':"
                                            "true,'tokenRequests':[{'audience':'a'},{'audience':"
                                            "'b'}],'volumeLifecycleModes':['Persistent',"
                                            "'Ephemeral']}}",
                "['ebs.csi.aws.com',false,true,false,'a,b',false,'Persistent,Ephemeral','5m']");
    check_cells(csid, "{" META("d") ",'spec':{}}",
                "['d',true,false,false,'<unset>',false,'<none>','5m']");
    check_cells(R("storage.k8s.io", "csinodes"),
                "{" META("node-1") ",'spec':{'drivers':[{'name':'a','nodeID':'n'},{'name':'b',"
                                   "'nodeID':'n'}]}}",
                "['node-1',2,'5m']");
    check_cells(R("storage.k8s.io", "csistoragecapacities"),
                "{" META("cap1") ",'storageClassName':'fast','capacity':'100Gi'}",
                "['cap1','2024-05-01T11:55:00Z']");
    const api_resource_t *apis = R("apiregistration.k8s.io", "apiservices");
    check_cells(apis,
                "{" META("v1.apps") ",'spec':{'group':'apps','version':'v1'},'status':"
                                    "{'conditions':[{'type':'Available','status':'True',"
                                    "'reason':'Local'}]}}",
                "['v1.apps','Local','True','5m']");
    check_cells(apis,
                "{" META("v1beta1.metrics.k8s.io") ",'spec':{'service':{'namespace':'kube-system',"
                                                   "'name':'metrics-server'}},'status':"
                                                   "{'conditions':[{'type':'Available','status':"
                                                   "'False','reason':'ServiceNotFound'}]}}",
                "['v1beta1.metrics.k8s.io','kube-system/metrics-server',"
                "'False (ServiceNotFound)','5m']");
    check_cells(apis, "{" META("v1.x") ",'spec':{}}", "['v1.x','Local','Unknown','5m']");
    check_cells(R("storage.k8s.io", "volumeattachments"),
                "{" META("csi-123") ",'spec':{'attacher':'ebs.csi.aws.com','nodeName':'node-1',"
                                    "'source':{'persistentVolumeName':'pv1'}},'status':"
                                    "{'attached':true}}",
                "['csi-123','ebs.csi.aws.com','pv1','node-1',true,'5m']");
    check_cells(R("storage.k8s.io", "volumeattributesclasses"),
                "{" META("gold") ",'driverName':'ebs.csi.aws.com','parameters':{'iops':'3000'}}",
                "['gold','ebs.csi.aws.com','5m']");
    api_resource_t pdb = {.group = "policy", .version = "v1", .resource = "poddisruptionbudgets"};
    check_cells(&pdb,
                "{" META("web") ",'spec':{'minAvailable':2},'status':{'disruptionsAllowed':1}}",
                "['web','2','N/A',1,'5m']");
    check_cells(&pdb, "{" META("db") ",'spec':{'maxUnavailable':'25%'}}",
                "['db','N/A','25%',0,'5m']");
}

/* ---- the simple kinds --------------------------------------------------------------- */

static void test_simple_kinds(void **state)
{
    (void)state;
    check_cells(R("", "namespaces"),
                "{'metadata':{'name':'default','creationTimestamp':'2024-04-29T12:00:00Z'},"
                "'status':{'phase':'Active'}}",
                "['default','Active','2d']");
    check_cells(R("", "namespaces"), "{'metadata':{'name':'x','creationTimestamp':'bogus'}}",
                "['x','','<unknown>']");
    check_cells(R("", "configmaps"),
                "{" META("cm") ",'data':{'a':'1','b':'2'},'binaryData':"
                               "{'c':'AA=='}}",
                "['cm',3,'5m']");
    check_cells(R("", "configmaps"), "{" META("cm0") "}", "['cm0',0,'5m']");
    check_cells(R("", "secrets"), "{" META("s") ",'type':'Opaque','data':{'x':'eA=='}}",
                "['s','Opaque',1,'5m']");
    check_cells(R("", "serviceaccounts"), "{" META("default") "}", "['default',0,'5m']");
    check_cells(R("", "serviceaccounts"),
                "{" META("sa") ",'secrets':[{'name':'t1'},{'name':'t2'}]}", "['sa',2,'5m']");
    check_cells(R("coordination.k8s.io", "leases"),
                "{" META("n1") ",'spec':{'holderIdentity':'n1','leaseDurationSeconds':40}}",
                "['n1','n1','5m']");
    check_cells(R("coordination.k8s.io", "leases"), "{" META("free") ",'spec':{}}",
                "['free','','5m']");
    check_cells(NULL,
                "{'metadata':{'name':'thing','creationTimestamp':'2024-05-01T13:55:00+02:00'}}",
                "['thing','5m']");
    api_resource_t crd = {.group = "apiextensions.k8s.io",
                          .version = "v1",
                          .resource = "customresourcedefinitions",
                          .kind = "CustomResourceDefinition"};
    check_cells(&crd,
                "{'metadata':{'name':'widgets.example.com','creationTimestamp':"
                "'2024-05-01T13:55:00.25+02:00'}}",
                "['widgets.example.com','2024-05-01T11:55:00Z']");
    check_cells(&crd, "{'metadata':{'name':'old','creationTimestamp':'1969-12-31T23:59:59Z'}}",
                "['old','1969-12-31T23:59:59Z']");
    check_cells(&crd, "{'metadata':{'name':'w'}}", "['w','0001-01-01T00:00:00Z']");
}

static void test_events(void **state)
{
    (void)state;
    const api_resource_t *ev = R("", "events");
    check_cells(ev,
                "{'metadata':{'name':'web.17c'},'involvedObject':{'kind':'Pod','name':'web',"
                "'fieldPath':'spec.containers{web}'},'reason':'Pulled','message':"
                "' Successfully pulled\\n ','type':'Normal','source':{'component':'kubelet',"
                "'host':'n1'},'firstTimestamp':'2024-05-01T11:00:00Z','lastTimestamp':"
                "'2024-05-01T11:55:00Z','count':3}",
                "['5m','Normal','Pulled','pod/web','spec.containers{web}','kubelet, n1',"
                "'Successfully pulled','60m',3,'web.17c']");
    check_cells(ev,
                "{'metadata':{'name':'e2'},'involvedObject':{'kind':'Node'},'reason':"
                "'FailedScheduling','message':'m','type':'Warning','eventTime':"
                "'2024-05-01T11:59:30.123456Z','series':{'count':4,'lastObservedTime':"
                "'2024-05-01T11:57:00.000000Z'},'reportingComponent':'default-scheduler'}",
                "['3m','Warning','FailedScheduling','node','','default-scheduler','m','30s',4,"
                "'e2']");
    check_cells(ev,
                "{'metadata':{'name':'e3'},'involvedObject':{'kind':'ReplicaSet','name':'rs'},"
                "'reportingComponent':'rc','reportingInstance':'i-1','firstTimestamp':"
                "'2024-05-01T11:58:00Z'}",
                "['2m','','','replicaset/rs','','rc, i-1','','2m',1,'e3']");
    check_cells(ev, "{'metadata':{'name':'e4'}}",
                "['<unknown>','','','','','','','<unknown>',1,'e4']");
}

/* ---- custom resources: printer columns and JSONPath ----------------------------------- */

/* A custom resource's registry line (crd_schema is left NULL: printer_columns
 * alone marks it as custom, and the tests that need a schema set one). */
static api_resource_t widgets(const json_t *pc)
{
    api_resource_t r = {.group = "example.com",
                        .version = "v1",
                        .resource = "widgets",
                        .singular = "widget",
                        .kind = "Widget",
                        .list_kind = "WidgetList",
                        .namespaced = 1,
                        .printer_columns = pc};
    return r;
}

static void test_custom_columns(void **state)
{
    (void)state;
    json_t *pc =
        jq("[{'name':'Replicas','type':'integer','jsonPath':'.spec.replicas'},"
           "{'name':'Ready','type':'string','description':'Ready or not',"
           "'jsonPath':'.status.conditions[?(@.type==\\'Ready\\')].status'},"
           "{'name':'Items','type':'string','priority':1,'jsonPath':'.spec.items[*].name'},"
           "{'name':'Owner','type':'string','format':'name','jsonPath':"
           "'.metadata.labels.owner'},"
           "{'name':'Seen','type':'date','jsonPath':'.status.conditions[-1]."
           "lastTransitionTime'}]");
    api_resource_t res = widgets(pc);
    json_t *t = api_table_new(&res, 1);
    assert_json(json_object_get(t, "columnDefinitions"),
                "[{'name':'Name','type':'string','format':'name','description':"
                "'Name of the object, unique within its namespace.','priority':0},"
                "{'name':'Replicas','type':'integer','format':'','description':"
                "'Value at the JSONPath .spec.replicas.','priority':0},"
                "{'name':'Ready','type':'string','format':'','description':'Ready or not',"
                "'priority':0},"
                "{'name':'Items','type':'string','format':'','description':"
                "'Value at the JSONPath .spec.items[*].name.','priority':1},"
                "{'name':'Owner','type':'string','format':'name','description':"
                "'Value at the JSONPath .metadata.labels.owner.','priority':0},"
                "{'name':'Seen','type':'date','format':'','description':"
                "'Value at the JSONPath .status.conditions[-1].lastTransitionTime.',"
                "'priority':0}]");
    json_t *o = jq("{'apiVersion':'example.com/v1','kind':'Widget','metadata':{'name':'w1',"
                   "'creationTimestamp':'2024-05-01T11:55:00Z'},'spec':{'replicas':3,'items':"
                   "[{'name':'a'},{'name':'b'}]},'status':{'conditions':[{'type':'Ready',"
                   "'status':'True','lastTransitionTime':'2024-05-01T11:59:00Z'}]}}");
    assert_int_equal(api_table_add_row(t, &res, o, API_TABLE_OBJECT, NOW), 0);
    /* no AGE: a CRD's printer columns replace it; Items prints the first match only */
    assert_json(json_array_get(json_object_get(t, "rows"), 0),
                "{'cells':['w1',3,'True','a',null,'60s'],'object':{'apiVersion':"
                "'example.com/v1','kind':'Widget','metadata':{'name':'w1','creationTimestamp':"
                "'2024-05-01T11:55:00Z'},'spec':{'replicas':3,'items':[{'name':'a'},"
                "{'name':'b'}]},'status':{'conditions':[{'type':'Ready','status':'True',"
                "'lastTransitionTime':'2024-05-01T11:59:00Z'}]}}}");
    json_decref(o);
    json_decref(t);
    json_decref(pc);

    /* no printer columns (or an empty list): Name and Age (type date) */
    pc = jq("[]");
    res = widgets(pc);
    check_columns(&res, "Name:string:name:0|Age:date::0");
    check_cells(&res, "{" META("w") "}", "['w','5m']");
    json_t *schema = jq("{'type':'object'}");
    res.printer_columns = NULL;
    res.crd_schema = schema;
    check_columns(&res, "Name:string:name:0|Age:date::0");
    check_cells(&res, "{" META("w") "}", "['w','5m']");
    json_decref(schema);
    json_decref(pc);
}

/* The one cell of a column (type, path) on the fixture below. */
static const char *const JP_OBJ =
    "{'metadata':{'name':'w','creationTimestamp':'2024-05-01T11:55:00Z','labels':"
    "{'app':'web','app.kubernetes.io/name':'wid'}},'spec':{'replicas':3,'ratio':0.5,"
    "'big':1000000.0,'mid':123456.0,'tiny':0.00001,'small':0.0001,'neg':-2.5,'enabled':true,"
    "'str':'7','nul':null,'map':{'b':2,'a':[1,'x']},'items':[{'name':'a','port':80,'on':true},"
    "{'name':'b','port':443,'on':false},{'name':'c','port':8080,'ratio':1.5}],"
    "'when':'2024-05-01T11:00:00Z','bad':'yesterday','empty':'','nullstr':'null',"
    "'future':'2024-05-01T12:05:00Z','deep':{'x':{'name':'deepest'}}},'status':{'conditions':["
    "{'type':'Progressing','status':'True','lastTransitionTime':'2024-05-01T10:00:00Z'},"
    "{'type':'Ready','status':'False','lastTransitionTime':'2024-05-01T11:59:00Z'}]}}";

static void check_jp(const char *type, const char *path, const char *want)
{
    json_t *pc = json_pack("[{s:s, s:s, s:s}]", "name", "X", "type", type, "jsonPath", path);
    api_resource_t res = widgets(pc);
    json_t *row = row_of(&res, JP_OBJ);
    json_t *cell = json_array_get(json_object_get(row, "cells"), 1);
    json_t *w = jq(want);
    if (!json_equal(cell, w)) {
        char *g = json_dumps(cell, JSON_ENCODE_ANY), *ws = json_dumps(w, JSON_ENCODE_ANY);
        fail_msg("%s %s: got %s, want %s", type, path, g, ws);
    }
    json_decref(w);
    json_decref(row);
    json_decref(pc);
}

static void test_jsonpath_types(void **state)
{
    (void)state;
    check_jp("string", ".spec.replicas", "'3'");
    check_jp("integer", ".spec.replicas", "3");
    check_jp("number", ".spec.replicas", "3");
    check_jp("string", ".spec.ratio", "'0.5'");
    check_jp("string", ".spec.neg", "'-2.5'");
    check_jp("string", ".spec.big", "'1e+06'");
    check_jp("string", ".spec.mid", "'123456'");
    check_jp("string", ".spec.tiny", "'1e-05'");
    check_jp("string", ".spec.small", "'0.0001'");
    check_jp("number", ".spec.ratio", "0.5");
    check_jp("integer", ".spec.ratio", "0");
    check_jp("integer", ".spec.neg", "-2");
    check_jp("integer", ".spec.str", "null");
    check_jp("number", ".spec.str", "null");
    check_jp("boolean", ".spec.enabled", "true");
    check_jp("boolean", ".spec.str", "null");
    check_jp("string", ".spec.enabled", "'true'");
    check_jp("string", ".spec.str", "'7'");
    check_jp("string", ".spec.nul", "'<no value>'");
    check_jp("integer", ".spec.nul", "null");
    check_jp("string", ".spec.map", "'{\\'a\\':[1,\\'x\\'],\\'b\\':2}'");
    check_jp("string", ".spec.missing", "null");
    check_jp("date", ".spec.when", "'60m'");
    check_jp("date", ".spec.bad", "'<invalid>'");
    check_jp("date", ".spec.empty", "'<unknown>'");
    check_jp("date", ".spec.nullstr", "'<unknown>'");
    check_jp("date", ".spec.future", "'<invalid>'");
    check_jp("date", ".spec.replicas", "null");
    check_jp("date", ".metadata.creationTimestamp", "'5m'");
    check_jp("color", ".spec.replicas", "null");
}

static void test_jsonpath_paths(void **state)
{
    (void)state;
    check_jp("string", ".metadata.labels.app", "'web'");
    check_jp("string", ".metadata.labels.app\\.kubernetes\\.io/name", "'wid'");
    check_jp("string", ".metadata.labels['app.kubernetes.io/name']", "'wid'");
    check_jp("string", "$.metadata['labels'].app", "'web'");
    check_jp("string", ".spec.items[*].name", "'a'");
    check_jp("string", ".spec.items[1].name", "'b'");
    check_jp("string", ".spec.items[-1].name", "'c'");
    check_jp("string", ".spec.items[-3].name", "'a'");
    check_jp("string", ".spec.items[1:3].name", "'b'");
    check_jp("string", ".spec.items[2:].name", "'c'");
    check_jp("string", ".spec.items[::2].port", "'80'");
    check_jp("string", ".spec.items[3].name", "null");
    check_jp("string", ".spec.items[-4].name", "null");
    check_jp("string", ".spec.items[1:1].name", "null");
    check_jp("string", ".spec.items[0:2:0].name", "null");
    check_jp("string", ".spec.map[0]", "null");
    check_jp("string", ".spec.nul[0]", "null");
    check_jp("string", ".spec.items[0].*", "'a'");
    check_jp("string", ".spec.deep..name", "'deepest'");
    check_jp("string", "..name", "'w'");
    check_jp("string", ".metadata.labels",
             "'{\\'app\\':\\'web\\',\\'app.kubernetes.io/name\\':\\'wid\\'}'");
    check_jp("string", ".metadata.labels.",
             "'{\\'app\\':\\'web\\',\\'app.kubernetes.io/name\\':\\'wid\\'}'");
}

static void test_jsonpath_filters(void **state)
{
    (void)state;
    check_jp("string", ".status.conditions[?(@.type==\"Ready\")].status", "'False'");
    check_jp("string", ".status.conditions[?(@.type=='Ready')].status", "'False'");
    check_jp("date", ".status.conditions[?(@.type==\"Ready\")].lastTransitionTime", "'60s'");
    check_jp("string", ".status.conditions[?(@.type==\"Gone\")].status", "null");
    check_jp("string", ".spec.items[?(@.port==443)].name", "'b'");
    check_jp("string", ".spec.items[?(@.port > 100)].name", "'b'");
    check_jp("string", ".spec.items[?(@.port>=8080)].name", "'c'");
    check_jp("string", ".spec.items[?(@.port<=80)].name", "'a'");
    check_jp("string", ".spec.items[?(@.port<443)].name", "'a'");
    check_jp("string", ".spec.items[?(@.name!=\"a\")].name", "'b'");
    check_jp("string", ".spec.items[?(@.on==false)].name", "'b'");
    check_jp("string", ".spec.items[?(@.ratio==1.5)].name", "'c'");
    check_jp("string", ".spec.items[?(@.ratio)].name", "'c'");
    check_jp("string", ".spec.items[?(@.nothing)].name", "null");
    /* comparing different kinds, or ordering booleans, is an error: null */
    check_jp("string", ".spec.items[?(@.port==\"80\")].name", "null");
    check_jp("string", ".spec.items[?(@.on<true)].name", "null");
    check_jp("string", ".spec.items[?(@.port=<80)].name", "null");
    /* filtering something that is not an array */
    check_jp("string", ".spec.map[?(@.b==2)]", "null");
    /* malformed paths print null */
    check_jp("string", "spec.replicas", "null");
    check_jp("string", ".spec.items[0", "null");
    check_jp("string", ".spec.items[0,1].name", "null");
    check_jp("string", ".spec.items[x].name", "null");
    check_jp("string", ".status.conditions[?(@.type==\"Ready\"].status", "null");
    check_jp("string", "", "null");
}

/* ---- allocation failures --------------------------------------------------------------- */

static int fail_at, n_alloc; /* test-only fault injection state */

static void *failing_malloc(size_t n)
{
    if (++n_alloc == fail_at) return NULL;
    return malloc(n);
}

/* Fail each jansson allocation of add_row in turn: either the call reports
 * KP_ENOMEM and the table is unchanged, or the row is complete and right. */
static void fault_rows(const api_resource_t *res, const char *obj, api_table_include_t inc)
{
    json_t *o = jq(obj), *t0 = api_table_new(res, 1);
    assert_int_equal(api_table_add_row(t0, res, o, inc, NOW), 0);
    json_t *want = json_array_get(json_object_get(t0, "rows"), 0);
    for (fail_at = 1;; fail_at++) {
        json_t *t = api_table_new(res, 1);
        n_alloc = 0;
        json_set_alloc_funcs(failing_malloc, free);
        int rc = api_table_add_row(t, res, o, inc, NOW);
        json_set_alloc_funcs(malloc, free);
        json_t *rows = json_object_get(t, "rows");
        if (rc) {
            assert_int_equal(rc, KP_ENOMEM);
            assert_int_equal(json_array_size(rows), 0);
        } else {
            assert_int_equal(json_array_size(rows), 1);
            if (!json_equal(json_array_get(rows, 0), want)) {
                char *g = json_dumps(json_array_get(rows, 0), JSON_COMPACT);
                fail_msg("allocation %d failed silently: %s", fail_at, g);
            }
        }
        json_decref(t);
        if (n_alloc < fail_at) break; /* nothing failed: every allocation was tried */
    }
    assert_true(fail_at > 10);
    json_decref(t0);
    json_decref(o);
}

static void test_enomem(void **state)
{
    (void)state;
    fault_rows(
        R("", "pods"),
        "{" META(
            "web") ",'spec':{'nodeName':'n1','initContainers':[{'name':'i'}],"
                   "'containers':[{'name':'c'}],'readinessGates':[{'conditionType':'x'}]},"
                   "'status':{'phase':'Succeeded','initContainerStatuses':[{'name':'i','state':"
                   "{'terminated':{'exitCode':0}}}],'containerStatuses':[{'name':'c','restartCount'"
                   ":"
                   "2,'lastState':{'terminated':{'finishedAt':'2024-05-01T11:57:00Z'}},'state':"
                   "{'terminated':{'exitCode':0,'reason':'Completed'}}}]}}",
        API_TABLE_METADATA);
    fault_rows(R("", "nodes"),
               "{'metadata':{'name':'n1','labels':{'node-role.kubernetes.io/a':'',"
               "'kubernetes.io/role':'b'}},'spec':{'unschedulable':true}}",
               API_TABLE_OBJECT);
    fault_rows(R("apps", "deployments"),
               "{" META("d") ",'spec':{'selector':{'matchLabels':{'a':'1'},'matchExpressions':"
                             "[{'key':'b','operator':'In','values':['y','x']}]}," TEMPLATE "}}",
               API_TABLE_NONE);
    fault_rows(
        R("", "services"),
        "{" META(
            "lb") ",'spec':{'type':'LoadBalancer','ports':[{'port':80}],"
                  "'selector':{'a':'b'}},'status':{'loadBalancer':{'ingress':[{'ip':'1.1.1.1'}]}}}",
        API_TABLE_NONE);
    fault_rows(R("", "events"),
               "{'metadata':{'name':'e'},'involvedObject':{'kind':'Pod','name':'p'},"
               "'source':{'component':'c','host':'h'},'message':' m '}",
               API_TABLE_NONE);
    fault_rows(R("", "resourcequotas"),
               "{" META("q") ",'status':{'hard':{'pods':'10','limits.cpu':'2'},'used':{'pods':"
                             "'1'}}}",
               API_TABLE_NONE);
    fault_rows(R2("autoscaling", "v2", "horizontalpodautoscalers"),
               "{" META("h") ",'spec':{'scaleTargetRef':{'kind':'D','name':'n'},'metrics':["
                             "{'type':'Resource','resource':{'name':'cpu','target':{"
                             "'averageUtilization':80}}},{'type':'Pods','pods':{'target':{}}},"
                             "{'type':'X'}]}}",
               API_TABLE_NONE);
    fault_rows(R("networking.k8s.io", "ingresses"),
               "{" META("i") ",'spec':{'rules':[{'host':'a'}]},'status':{'loadBalancer':"
                             "{'ingress':[{'ip':'1.1.1.1'},{'ip':'1.1.1.0'}]}}}",
               API_TABLE_NONE);
    fault_rows(R("rbac.authorization.k8s.io", "rolebindings"),
               "{" META("b") ",'roleRef':{'kind':'Role','name':'r'},'subjects':[{'kind':'User',"
                             "'name':'u'},{'kind':'ServiceAccount','name':'s','namespace':'n'}]}",
               API_TABLE_NONE);
    json_t *pc = jq("[{'name':'R','type':'string','jsonPath':'.spec.items[?(@.port>1)].name'},"
                    "{'name':'M','type':'string','jsonPath':'.spec.map'},"
                    "{'name':'D','type':'date','jsonPath':'.spec.when'}]");
    api_resource_t res = widgets(pc);
    fault_rows(&res, JP_OBJ, API_TABLE_METADATA);
    json_decref(pc);

    /* api_table_new: NULL or the complete table */
    json_t *want = api_table_new(R("", "pods"), 1);
    for (fail_at = 1;; fail_at++) {
        n_alloc = 0;
        json_set_alloc_funcs(failing_malloc, free);
        json_t *t = api_table_new(R("", "pods"), 1);
        json_set_alloc_funcs(malloc, free);
        if (t) assert_true(json_equal(t, want));
        json_decref(t);
        if (n_alloc < fail_at) break;
    }
    json_decref(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_age),
        cmocka_unit_test(test_include_parse),
        cmocka_unit_test(test_new_table),
        cmocka_unit_test(test_row_objects),
        cmocka_unit_test(test_add_row_errors),
        cmocka_unit_test(test_columns),
        cmocka_unit_test(test_pod_running),
        cmocka_unit_test(test_pod_pending),
        cmocka_unit_test(test_pod_failing),
        cmocka_unit_test(test_pod_finished),
        cmocka_unit_test(test_pod_deleting),
        cmocka_unit_test(test_pod_init),
        cmocka_unit_test(test_pod_sidecar),
        cmocka_unit_test(test_nodes),
        cmocka_unit_test(test_services),
        cmocka_unit_test(test_endpoints),
        cmocka_unit_test(test_deployments),
        cmocka_unit_test(test_replicasets_statefulsets),
        cmocka_unit_test(test_daemonsets_revisions),
        cmocka_unit_test(test_jobs),
        cmocka_unit_test(test_simple_kinds),
        cmocka_unit_test(test_new_columns),
        cmocka_unit_test(test_core_kinds),
        cmocka_unit_test(test_workload_kinds),
        cmocka_unit_test(test_network_kinds),
        cmocka_unit_test(test_cluster_kinds),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_custom_columns),
        cmocka_unit_test(test_jsonpath_types),
        cmocka_unit_test(test_jsonpath_paths),
        cmocka_unit_test(test_jsonpath_filters),
        cmocka_unit_test(test_enomem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
