/*
 * fuzz_audit_policy.c -- the audit policy (apiserver/audit/policy.c,
 * --audit-policy-file: an audit.k8s.io/v1 Policy in YAML or JSON) read,
 * checked and evaluated. Input: a first line of request attributes, space
 * separated: user group verb apigroup resource subresource namespace name
 * (missing ones ""; a resource starting with '/' makes a non-resource
 * request for that path), then the policy. When the policy parses, the
 * request is evaluated, as the user and as a request with no user. The
 * policy's bytes also go to the audit log's JSON compactor (the bodies it
 * logs as they are): what it takes must be JSON that jansson reads as the
 * same value as the input.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "apiserver/audit/audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_INPUT_MAX) return 0;
    char *line = fz_line(&data, &size);
    if (!line) return 0;
    const char *f[8] = {"", "", "", "", "", "", "", ""};
    char *save = NULL;
    size_t n = 0;
    for (char *t = strtok_r(line, " ", &save); t && n < 8; t = strtok_r(NULL, " ", &save))
        f[n++] = t;
    const char *groups[] = {f[1]};
    api_user_t u = {.name = f[0], .uid = "", .groups = groups, .ngroups = *f[1] ? 1 : 0};
    int res = f[4][0] != '/';
    api_attrs_t a = {.user = &u,
                     .verb = f[2],
                     .resource_request = res,
                     .group = res ? f[3] : "",
                     .version = res ? "v1" : "",
                     .resource = res ? f[4] : "",
                     .sub = res ? f[5] : "",
                     .ns = res ? f[6] : "",
                     .name = res ? f[7] : "",
                     .path = res ? "" : f[4]};
    char *text = fz_str(data, size);
    char err[512], warn[256];
    api_audit_policy_t *p = NULL;
    if (text && !api_audit_policy_parse(text, size, &p, err, sizeof err, warn, sizeof warn)) {
        api_audit_verdict_t v;
        api_audit_policy_eval(p, &a, &v);
        if (v.level < API_AUDIT_NONE || v.level > API_AUDIT_REQUEST_RESPONSE || v.omit_stages > 15)
            abort(); /* a verdict is always one of the levels and stages */
        a.user = NULL;
        api_audit_policy_eval(p, &a, &v);
        apiserver_audit_policy_free(p);
    } else if (text && !err[0]) {
        abort(); /* a refusal always says why */
    }
    buf_t b;
    buf_init(&b, SIZE_MAX);
    if (!api_audit_json_compact((const char *)data, size, &b)) {
        json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
        json_t *out = b.p ? json_loadb(b.p, b.len, JSON_DECODE_ANY, NULL) : NULL;
        /* (jansson refuses some valid JSON: \u0000, deeper than its 2048) */
        if (in && (!out || !json_equal(in, out))) abort();
        json_decref(in);
        json_decref(out);
    }
    buf_free(&b);
    free(text);
    free(line);
    return 0;
}
