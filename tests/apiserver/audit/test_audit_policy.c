/*
 * test_audit_policy.c -- src/apiserver/audit/policy.c: the audit policy
 * read and checked as kube-apiserver reads it (each error naming its
 * field) and evaluated as its policy checker (first matching rule; every
 * field of a rule; the wildcards of resources and nonResourceURLs;
 * omitStages united; omitManagedFields defaulted by the policy); and
 * log.c's line of an event (bodies decoded, managedFields dropped,
 * objectRef completed, nothing of a Metadata event's body written) and
 * event.c's JSON strings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "apiserver/audit/audit.h"
#include "lib/err.h"

static api_audit_policy_t *parse_ok(const char *yaml)
{
    char err[512], warn[256];
    api_audit_policy_t *p = NULL;
    int rc = api_audit_policy_parse(yaml, strlen(yaml), &p, err, sizeof err, warn, sizeof warn);
    if (rc) fail_msg("policy refused: %s\n%s", err, yaml);
    return p;
}

/* The policy is refused with an error that contains `want`. */
static void parse_bad(const char *yaml, const char *want)
{
    char err[512];
    api_audit_policy_t *p = NULL;
    int rc = api_audit_policy_parse(yaml, strlen(yaml), &p, err, sizeof err, NULL, 0);
    if (!rc) fail_msg("policy accepted, want an error with '%s':\n%s", want, yaml);
    assert_int_equal(rc, KP_EINVAL);
    assert_null(p);
    if (!strstr(err, want)) fail_msg("error '%s' lacks '%s'", err, want);
}

static const char *const alice_groups[] = {"dev", "system:authenticated"};
static const api_user_t alice = {.name = "alice", .uid = "1", .groups = alice_groups, .ngroups = 2};
static const char *const bob_groups[] = {"system:authenticated"};
static const api_user_t bob = {.name = "bob", .uid = "", .groups = bob_groups, .ngroups = 1};

/* A resource request's attributes: "verb group resource[/sub] ns name". */
static api_attrs_t res(const api_user_t *u, const char *verb, const char *group,
                       const char *resource, const char *sub, const char *ns, const char *name)
{
    return (api_attrs_t){.user = u,
                         .verb = verb,
                         .resource_request = 1,
                         .ns = ns,
                         .group = group,
                         .version = "v1",
                         .resource = resource,
                         .sub = sub,
                         .name = name,
                         .path = ""};
}

static api_attrs_t path(const api_user_t *u, const char *verb, const char *p)
{
    return (api_attrs_t){.user = u,
                         .verb = verb,
                         .ns = "",
                         .group = "",
                         .version = "",
                         .resource = "",
                         .sub = "",
                         .name = "",
                         .path = p};
}

static int level(const api_audit_policy_t *p, api_attrs_t a)
{
    api_audit_verdict_t v;
    api_audit_policy_eval(p, &a, &v);
    return v.level;
}

#define HEAD "apiVersion: audit.k8s.io/v1\nkind: Policy\n"

static void test_first_rule_wins(void **state)
{
    (void)state;
    api_audit_policy_t *p = parse_ok(HEAD "rules:\n"
                                          "- level: RequestResponse\n  users: [alice]\n"
                                          "- level: None\n  users: [alice, bob]\n"
                                          "- level: Request\n");
    assert_int_equal(level(p, res(&alice, "get", "", "pods", "", "default", "x")),
                     API_AUDIT_REQUEST_RESPONSE);
    assert_int_equal(level(p, res(&bob, "get", "", "pods", "", "default", "x")), API_AUDIT_NONE);
    static const api_user_t carol = {.name = "carol", .uid = ""};
    assert_int_equal(level(p, res(&carol, "get", "", "pods", "", "", "")), API_AUDIT_REQUEST);
    apiserver_audit_policy_free(p);
    /* no rule matches: None */
    p = parse_ok(HEAD "rules:\n- level: Metadata\n  users: [zed]\n");
    assert_int_equal(level(p, res(&alice, "get", "", "pods", "", "", "")), API_AUDIT_NONE);
    apiserver_audit_policy_free(p);
    assert_string_equal(api_audit_level_name(API_AUDIT_METADATA), "Metadata");
    assert_string_equal(api_audit_level_name(API_AUDIT_REQUEST_RESPONSE), "RequestResponse");
    assert_string_equal(api_audit_stage_name(API_AUDIT_RESPONSE_STARTED), "ResponseStarted");
    assert_string_equal(api_audit_stage_name(API_AUDIT_PANIC), "Panic");
}

/* users, userGroups, verbs: each a list any of whose entries matches; a
 * request without a user (failed authentication) matches neither. */
static void test_users_groups_verbs(void **state)
{
    (void)state;
    api_audit_policy_t *p = parse_ok(HEAD "rules:\n"
                                          "- level: Request\n  userGroups: [dev, ops]\n"
                                          "- level: Metadata\n  verbs: [create, delete]\n"
                                          "- level: RequestResponse\n  users: [bob]\n"
                                          "  verbs: [watch]\n");
    assert_int_equal(level(p, res(&alice, "list", "", "pods", "", "", "")), API_AUDIT_REQUEST);
    assert_int_equal(level(p, res(&bob, "list", "", "pods", "", "", "")), API_AUDIT_NONE);
    assert_int_equal(level(p, res(&bob, "delete", "", "pods", "", "d", "x")), API_AUDIT_METADATA);
    assert_int_equal(level(p, res(&bob, "watch", "", "pods", "", "", "")),
                     API_AUDIT_REQUEST_RESPONSE);
    assert_int_equal(level(p, res(NULL, "watch", "", "pods", "", "", "")), API_AUDIT_NONE);
    assert_int_equal(level(p, res(NULL, "create", "", "pods", "", "d", "")), API_AUDIT_METADATA);
    apiserver_audit_policy_free(p);
}

static void test_resources(void **state)
{
    (void)state;
    api_audit_policy_t *p = parse_ok(HEAD "rules:\n"
                                          "- level: None\n  resources:\n"
                                          "  - group: ''\n    resources: [secrets]\n"
                                          "    resourceNames: [kept]\n"
                                          "- level: Metadata\n  resources:\n"
                                          "  - group: ''\n    resources: [secrets, pods/log]\n"
                                          "- level: Request\n  resources:\n"
                                          "  - group: apps\n"
                                          "- level: RequestResponse\n  resources:\n"
                                          "  - group: batch\n    resources: ['*']\n"
                                          "  - group: ''\n    resources: ['*/scale', 'nodes/*']\n");
    /* resourceNames narrow the entry they are in */
    assert_int_equal(level(p, res(&bob, "get", "", "secrets", "", "d", "kept")), API_AUDIT_NONE);
    assert_int_equal(level(p, res(&bob, "get", "", "secrets", "", "d", "other")),
                     API_AUDIT_METADATA);
    assert_int_equal(level(p, res(&bob, "list", "", "secrets", "", "d", "")), API_AUDIT_METADATA);
    /* "pods/log" is the subresource, not pods */
    assert_int_equal(level(p, res(&bob, "get", "", "pods", "log", "d", "p")), API_AUDIT_METADATA);
    assert_int_equal(level(p, res(&bob, "get", "", "pods", "", "d", "p")), API_AUDIT_NONE);
    assert_int_equal(level(p, res(&bob, "get", "", "pods", "exec", "d", "p")), API_AUDIT_NONE);
    /* a group with no resources: all of them, subresources too */
    assert_int_equal(level(p, res(&bob, "get", "apps", "deployments", "scale", "d", "x")),
                     API_AUDIT_REQUEST);
    /* "*": every resource and subresource of the group */
    assert_int_equal(level(p, res(&bob, "create", "batch", "jobs", "", "d", "")),
                     API_AUDIT_REQUEST_RESPONSE);
    assert_int_equal(level(p, res(&bob, "get", "batch", "cronjobs", "status", "d", "c")),
                     API_AUDIT_REQUEST_RESPONSE);
    /* "*\/scale": any resource's scale, in the entry's group */
    assert_int_equal(level(p, res(&bob, "get", "", "replicationcontrollers", "scale", "d", "r")),
                     API_AUDIT_REQUEST_RESPONSE);
    assert_int_equal(level(p, res(&bob, "get", "", "replicationcontrollers", "", "d", "r")),
                     API_AUDIT_NONE);
    /* "nodes/\*": the subresources, and (as Kubernetes' checker) nodes */
    assert_int_equal(level(p, res(&bob, "get", "", "nodes", "status", "", "n")),
                     API_AUDIT_REQUEST_RESPONSE);
    assert_int_equal(level(p, res(&bob, "get", "", "nodes", "", "", "n")),
                     API_AUDIT_REQUEST_RESPONSE);
    /* the group must be the request's */
    assert_int_equal(level(p, res(&bob, "get", "other", "secrets", "", "d", "x")), API_AUDIT_NONE);
    /* a path never matches a resource rule */
    assert_int_equal(level(p, path(&bob, "get", "/api/v1/secrets")), API_AUDIT_NONE);
    apiserver_audit_policy_free(p);
}

static void test_namespaces(void **state)
{
    (void)state;
    api_audit_policy_t *p = parse_ok(HEAD "rules:\n"
                                          "- level: Request\n  namespaces: [kube-system, '']\n"
                                          "- level: Metadata\n  namespaces: [prod]\n"
                                          "  resources:\n  - group: ''\n    resources: [pods]\n");
    assert_int_equal(level(p, res(&bob, "get", "", "pods", "", "kube-system", "x")),
                     API_AUDIT_REQUEST);
    /* "": cluster-scoped resources */
    assert_int_equal(level(p, res(&bob, "get", "", "nodes", "", "", "n")), API_AUDIT_REQUEST);
    assert_int_equal(level(p, res(&bob, "get", "", "pods", "", "prod", "x")), API_AUDIT_METADATA);
    assert_int_equal(level(p, res(&bob, "get", "", "services", "", "prod", "x")), API_AUDIT_NONE);
    /* namespaces make it a resource rule: a path does not match */
    assert_int_equal(level(p, path(&bob, "get", "/healthz")), API_AUDIT_NONE);
    apiserver_audit_policy_free(p);
}

static void test_non_resource_urls(void **state)
{
    (void)state;
    api_audit_policy_t *p =
        parse_ok(HEAD "rules:\n"
                      "- level: None\n  nonResourceURLs: ['/healthz*', /version]\n"
                      "- level: Metadata\n  nonResourceURLs: ['/apis/*']\n"
                      "- level: Request\n  nonResourceURLs: ['*']\n"
                      "  verbs: [post]\n"
                      "- level: RequestResponse\n");
    assert_int_equal(level(p, path(&bob, "get", "/healthz")), API_AUDIT_NONE);
    assert_int_equal(level(p, path(&bob, "get", "/healthz/ping")), API_AUDIT_NONE);
    assert_int_equal(level(p, path(&bob, "get", "/version")), API_AUDIT_NONE);
    assert_int_equal(level(p, path(&bob, "get", "/version/x")), API_AUDIT_REQUEST_RESPONSE);
    assert_int_equal(level(p, path(&bob, "get", "/apis/apps")), API_AUDIT_METADATA);
    assert_int_equal(level(p, path(&bob, "get", "/apis")), API_AUDIT_REQUEST_RESPONSE);
    assert_int_equal(level(p, path(&bob, "post", "/x")), API_AUDIT_REQUEST);
    /* a resource request never matches a URL rule */
    assert_int_equal(level(p, res(&bob, "post", "", "pods", "", "d", "")),
                     API_AUDIT_REQUEST_RESPONSE);
    apiserver_audit_policy_free(p);
}

static void test_omit_stages_and_managed_fields(void **state)
{
    (void)state;
    api_audit_policy_t *p = parse_ok(HEAD "omitStages: [RequestReceived]\n"
                                          "omitManagedFields: true\n"
                                          "rules:\n"
                                          "- level: Metadata\n  users: [alice]\n"
                                          "  omitStages: [ResponseStarted, Panic]\n"
                                          "  omitManagedFields: false\n"
                                          "- level: Request\n");
    api_audit_verdict_t v;
    api_attrs_t a = res(&alice, "get", "", "pods", "", "d", "x");
    api_audit_policy_eval(p, &a, &v);
    assert_int_equal(v.level, API_AUDIT_METADATA);
    assert_int_equal(v.omit_stages,
                     API_AUDIT_REQUEST_RECEIVED | API_AUDIT_RESPONSE_STARTED | API_AUDIT_PANIC);
    assert_int_equal(v.omit_managed_fields, 0); /* the rule's false wins */
    a = res(&bob, "get", "", "pods", "", "d", "x");
    api_audit_policy_eval(p, &a, &v);
    assert_int_equal(v.level, API_AUDIT_REQUEST);
    assert_int_equal(v.omit_stages, API_AUDIT_REQUEST_RECEIVED);
    assert_int_equal(v.omit_managed_fields, 1); /* the policy's */
    apiserver_audit_policy_free(p);
    /* the rule may turn it on alone */
    p = parse_ok(HEAD "rules:\n- level: Request\n  omitManagedFields: true\n");
    api_audit_policy_eval(p, &a, &v);
    assert_int_equal(v.omit_managed_fields, 1);
    assert_int_equal(v.omit_stages, 0);
    apiserver_audit_policy_free(p);
}

/* JSON is YAML: a policy may be either; an unknown field is named in the
 * warning and ignored. */
static void test_json_and_warning(void **state)
{
    (void)state;
    const char *json = "{\"apiVersion\":\"audit.k8s.io/v1\",\"kind\":\"Policy\",\"metadata\":"
                       "{\"name\":\"x\"},\"rules\":[{\"level\":\"Metadata\",\"usrs\":[\"a\"]}]}";
    char err[256], warn[256];
    api_audit_policy_t *p = NULL;
    assert_int_equal(
        api_audit_policy_parse(json, strlen(json), &p, err, sizeof err, warn, sizeof warn), 0);
    assert_string_equal(warn, "rules[0].usrs: unknown field (ignored)");
    assert_int_equal(level(p, res(&bob, "get", "", "pods", "", "", "")), API_AUDIT_METADATA);
    apiserver_audit_policy_free(p);
}

static void test_errors_name_the_field(void **state)
{
    (void)state;
    parse_bad("kind: Policy\nrules:\n- level: None\n", "apiVersion: Required value");
    parse_bad("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules:\n- level: None\n",
              "apiVersion: Unsupported value: \"audit.k8s.io/v1beta1\"");
    parse_bad("apiVersion: audit.k8s.io/v1\nkind: Pod\nrules:\n- level: None\n",
              "kind: Unsupported value: \"Pod\"");
    parse_bad(HEAD "rules: []\n", "rules: Required value");
    parse_bad(HEAD, "rules: Required value");
    parse_bad(HEAD "rules: nope\n", "rules: must be a list");
    parse_bad(HEAD "rules:\n- level: None\n- users: [a]\n", "rules[1].level: Required value");
    parse_bad(HEAD "rules:\n- level: Everything\n",
              "rules[0].level: Unsupported value: \"Everything\": supported values: \"None\", "
              "\"Metadata\", \"Request\", \"RequestResponse\"");
    parse_bad(HEAD "rules:\n- level: None\n  omitStages: [RequestRecieved]\n",
              "rules[0].omitStages[0]: Invalid value: \"RequestRecieved\": allowed stages are "
              "RequestReceived,ResponseStarted,ResponseComplete,Panic");
    parse_bad(HEAD "omitStages: [Done]\nrules:\n- level: None\n", "omitStages[0]: Invalid value");
    parse_bad(HEAD "rules:\n- level: None\n  nonResourceURLs: [healthz]\n",
              "rules[0].nonResourceURLs[0]: Invalid value: \"healthz\": non-resource URL rules "
              "must begin with a '/' character");
    parse_bad(HEAD "rules:\n- level: None\n  nonResourceURLs: ['/a/*/b']\n",
              "rules[0].nonResourceURLs[0]: Invalid value: \"/a/*/b\": non-resource URL "
              "wildcards '*' must be the final character of the rule");
    parse_bad(HEAD "rules:\n- level: None\n  nonResourceURLs: [/x]\n  namespaces: [d]\n",
              "rules[0].nonResourceURLs: Invalid value: \"/x\": rules cannot apply to both "
              "regular resources and non-resource URLs");
    parse_bad(HEAD "rules:\n- level: None\n  resources:\n  - group: Apps\n",
              "rules[0].resources[0].group: Invalid value: \"Apps\": a lowercase RFC 1123 "
              "subdomain");
    parse_bad(HEAD "rules:\n- level: None\n  resources:\n  - group: apps/v1\n",
              "rules[0].resources[0].group: Invalid value: \"apps/v1\"");
    parse_bad(HEAD "rules:\n- level: None\n  resources:\n  - resourceNames: [x]\n",
              "rules[0].resources[0].resourceNames: Invalid value: \"x\": using resourceNames "
              "requires at least one resource");
    parse_bad(HEAD "rules:\n- level: None\n  users: alice\n",
              "rules[0].users: must be a list of strings");
    parse_bad(HEAD "rules:\n- level: None\n  verbs: [get, 3]\n",
              "rules[0].verbs[1]: must be a string");
    parse_bad(HEAD "rules:\n- level: None\n  omitManagedFields: maybe\n",
              "rules[0].omitManagedFields: must be true or false");
    parse_bad(HEAD "rules:\n- level: None\n  resources: [pods]\n",
              "rules[0].resources[0]: must be an object");
    parse_bad("apiVersion: [\n", "not a YAML or JSON document: yaml: line");
    parse_bad("- a\n- b\n", "the policy must be an object");
}

/* ---- log.c: an event's line ---- */

/* An item: head, mid, tail as texts; ref as "resource ns name group version
 * sub" (spaces: fields; "-": empty), NULL: none. */
static api_audit_item_t *item(const char *head, const char *ref, const char *mid, const char *tail)
{
    api_audit_item_t *it = calloc(1, sizeof *it);
    assert_non_null(it);
    size_t h = strlen(head), m = strlen(mid), t = strlen(tail);
    it->text = malloc(h + m + t + 3);
    assert_non_null(it->text);
    memcpy(it->text, head, h + 1);
    memcpy(it->text + h + 1, mid, m + 1);
    memcpy(it->text + h + m + 2, tail, t + 1);
    it->mid = h + 1;
    it->tail = h + m + 2;
    if (ref) { /* each field NUL-terminated, in a row */
        it->ref = calloc(1, strlen(ref) + 2);
        assert_non_null(it->ref);
        char *o = it->ref;
        for (const char *p = ref; *p;) {
            size_t n = strcspn(p, " ");
            if (n != 1 || *p != '-') {
                memcpy(o, p, n);
                o += n;
            }
            *o++ = '\0';
            p += n + (p[n] == ' ');
        }
    }
    return it;
}

static void body(char **p, size_t *len, char *type, const char *text, const char *ctype)
{
    *p = strdup(text);
    *len = strlen(text);
    snprintf(type, 64, "%s", ctype);
}

static void expect_line(api_audit_item_t *it, const char *want)
{
    buf_t b;
    buf_init(&b, SIZE_MAX);
    assert_int_equal(api_audit_item_line(it, &b), 0);
    assert_int_equal(buf_append(&b, "", 1), 0);
    assert_string_equal(b.p, want);
    buf_free(&b);
    api_audit_item_free(it);
}

static void test_item_line(void **state)
{
    (void)state;
    /* no bodies: the parts in a row, objectRef's empty fields left out */
    api_audit_item_t *it = item("{\"a\":1", "pods default web - v1 log", ",\"m\":2", ",\"t\":3}");
    expect_line(it, "{\"a\":1,\"objectRef\":{\"resource\":\"pods\",\"namespace\":\"default\","
                    "\"name\":\"web\",\"apiVersion\":\"v1\",\"subresource\":\"log\"},"
                    "\"m\":2,\"t\":3}");
    /* Request level: the body, pretty-printed by the client, in one line;
     * managedFields dropped; objectRef completed from it, in Kubernetes'
     * order */
    it = item("{", "configmaps d - - v1 -", "\"s\":0", "}");
    body(&it->req, &it->req_len, it->req_type,
         "{\n  \"kind\": \"ConfigMap\",\n  \"metadata\": {\"name\": \"c\", \"uid\": \"u1\", "
         "\"resourceVersion\": \"7\", \"managedFields\": [{\"manager\": \"m\"}]}\n}",
         "application/json");
    it->req_fill = 1;
    it->omit_managed_fields = 1;
    expect_line(it,
                "{,\"objectRef\":{\"resource\":\"configmaps\",\"namespace\":\"d\",\"name\":"
                "\"c\",\"uid\":\"u1\",\"apiVersion\":\"v1\",\"resourceVersion\":\"7\"}"
                "\"s\":0,\"requestObject\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\","
                "\"uid\":\"u1\",\"resourceVersion\":\"7\"}}}");
    /* Metadata level: the body only names the object; nothing of it is
     * written */
    it = item("{\"x\":1", "secrets d - - v1 -", "", "}");
    body(&it->req, &it->req_len, it->req_type,
         "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"},\"data\":{\"k\":\"SECRET\"}}",
         "application/json; charset=utf-8");
    it->req_fill = 1;
    it->req_meta = 1;
    expect_line(it, "{\"x\":1,\"objectRef\":{\"resource\":\"secrets\",\"namespace\":\"d\","
                    "\"name\":\"s\",\"apiVersion\":\"v1\"}}");
    /* a patch (no fill): objectRef stays; a YAML body is decoded; a
     * list's items lose their managedFields */
    it = item("{", "pods d n - v1 -", "", "}");
    body(&it->req, &it->req_len, it->req_type, "metadata:\n  name: other\n  labels: {a: b}\n",
         "application/apply-patch+yaml");
    body(&it->resp, &it->resp_len, it->resp_type,
         "{\"items\":[{\"metadata\":{\"name\":\"a\",\"managedFields\":[]}}]}", "application/json");
    it->omit_managed_fields = 1;
    expect_line(it, "{,\"objectRef\":{\"resource\":\"pods\",\"namespace\":\"d\",\"name\":\"n\","
                    "\"apiVersion\":\"v1\"},\"requestObject\":{\"metadata\":{\"name\":\"other\","
                    "\"labels\":{\"a\":\"b\"}}},\"responseObject\":{\"items\":[{\"metadata\":"
                    "{\"name\":\"a\"}}]}}");
    /* bodies that do not decode, or are text: no field */
    it = item("{", NULL, "\"z\":0", "}");
    body(&it->req, &it->req_len, it->req_type, "{not json", "application/json");
    body(&it->resp, &it->resp_len, it->resp_type, "a log line\n", "text/plain");
    expect_line(it, "{\"z\":0}");
}

/* JSON strings as Go writes them: escapes, and U+FFFD for bytes that are
 * not UTF-8, so that the line is always JSON. */
static void test_json_str(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, SIZE_MAX);
    assert_int_equal(
        api_audit_json_str(&b, "a\"b\\c\n\t\x01 \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), 0);
    assert_string_equal(b.p, "\"a\\\"b\\\\c\\n\\t\\u0001 \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    buf_reset(&b);
    /* a lone continuation byte, a cut sequence, an overlong, a surrogate */
    assert_int_equal(api_audit_json_str(&b, "\x80|\xe2\x82|\xc0\xaf|\xed\xa0\x80"), 0);
    assert_string_equal(b.p, "\"\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\"");
    buf_free(&b);
}

/* Bodies logged as they are: one valid JSON value, its whitespace gone;
 * anything else refused, the buffer as it was. */
static void test_json_compact(void **state)
{
    (void)state;
    static const char *const good[][2] = {
        {" { \"a\" : [ 1 , -2.5e+3 , true , false , null , \"x y\" ] ,\n\"b\":{}} ",
         "{\"a\":[1,-2.5e+3,true,false,null,\"x y\"],\"b\":{}}"},
        {"\"\\u00e9\\n\xc3\xa9\"", "\"\\u00e9\\n\xc3\xa9\""},
        {"[[],[ ]]", "[[],[]]"},
        {"0", "0"},
        {"-0.5E-7", "-0.5E-7"},
    };
    static const char *const bad[] = {
        "",          "{",        "{\"a\"}",      "{\"a\":}", "[1,]",    "[1 2]",     "01",
        "1.",        "-",        "1e",           "tru",      "\"abc",   "\"a\x01\"", "\"\\x\"",
        "\"\\u12\"", "\"\xff\"", "\"\xe2\x82\"", "{} {}",    "{'a':1}", "[1]]",      "NaN",
    };
    buf_t b;
    buf_init(&b, SIZE_MAX);
    assert_int_equal(buf_append(&b, "keep", 4), 0);
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        buf_reset(&b);
        if (api_audit_json_compact(good[i][0], strlen(good[i][0]), &b))
            fail_msg("refused: %s", good[i][0]);
        assert_string_equal(b.p, good[i][1]);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        buf_reset(&b);
        assert_int_equal(buf_append(&b, "keep", 4), 0);
        if (!api_audit_json_compact(bad[i], strlen(bad[i]), &b)) fail_msg("taken: %s", bad[i]);
        assert_string_equal(b.p, "keep");
    }
    /* too deep */
    char deep[2 * 600 + 1];
    memset(deep, '[', 600);
    memset(deep + 600, ']', 600);
    deep[1200] = '\0';
    assert_int_equal(api_audit_json_compact(deep, 1200, &b), -1);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_rule_wins),
        cmocka_unit_test(test_users_groups_verbs),
        cmocka_unit_test(test_resources),
        cmocka_unit_test(test_namespaces),
        cmocka_unit_test(test_non_resource_urls),
        cmocka_unit_test(test_omit_stages_and_managed_fields),
        cmocka_unit_test(test_json_and_warning),
        cmocka_unit_test(test_errors_name_the_field),
        cmocka_unit_test(test_item_line),
        cmocka_unit_test(test_json_str),
        cmocka_unit_test(test_json_compact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
