/*
 * test_ui.c -- the dashboard's server side (apiserver/ui/ui.c) through a
 * real `kplane server` over HTTPS (tests/client/kpserver.c): the files
 * with their types, ETags (304 on a match) and security headers, to anyone
 * (they hold no cluster data); /ui redirected to /ui/; unknown files 404;
 * the lab endpoints refused without credentials (401), with a bad token
 * (401), to a user RBAC gives no rule for the /ui/api/ paths (403), and
 * answered for the admin (system:masters); and `kplane server` printing
 * the dashboard's URL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kpserver.h"
#include "lib/buf.h"
#include "testutil.h"

typedef struct fixture {
    kpserver_t s;
    char *tokdir;
    char admin[128];
    char ca[700];
} fixture_t;

typedef struct reply {
    long code;
    buf_t body;
    buf_t heads; /* "Name: value\r\n" lines of the final reply */
} reply_t;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    buf_append(arg, p, size * n);
    return size * n;
}

static size_t on_head(char *p, size_t size, size_t n, void *arg)
{
    buf_t *b = arg;
    if (!strncmp(p, "HTTP/", 5)) buf_reset(b); /* a new reply's headers */
    buf_append(b, p, size * n);
    return size * n;
}

/* One request; token NULL: no Authorization. extra: one more header or NULL. */
static void call(fixture_t *f, const char *method, const char *path, const char *token,
                 const char *extra, reply_t *out)
{
    memset(out, 0, sizeof *out);
    buf_init(&out->body, 4u << 20);
    buf_init(&out->heads, 1u << 20);
    CURL *c = curl_easy_init();
    assert_non_null(c);
    char url[512], auth[256];
    snprintf(url, sizeof url, "https://127.0.0.1:%d%s", f->s.port, path);
    struct curl_slist *h = NULL;
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    if (extra) h = curl_slist_append(h, extra);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO, f->ca);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "POST")) curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &out->body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_head);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &out->heads);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    CURLcode cc = curl_easy_perform(c);
    if (cc) fail_msg("%s %s: %s", method, path, curl_easy_strerror(cc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static void reply_free(reply_t *r)
{
    buf_free(&r->body);
    buf_free(&r->heads);
}

/* The value of header `name` in r (copied into out), or NULL. */
static const char *head(const reply_t *r, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    for (const char *p = r->heads.p; p && *p;) {
        const char *eol = strstr(p, "\r\n");
        size_t l = eol ? (size_t)(eol - p) : strlen(p);
        if (l > n + 1 && !strncasecmp(p, name, n) && p[n] == ':') {
            const char *v = p + n + 1;
            while (*v == ' ')
                v++;
            snprintf(out, len, "%.*s", (int)(l - (size_t)(v - p)), v);
            return out;
        }
        p += l + (eol ? 2 : 0);
    }
    return NULL;
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->tokdir = tu_tmpdir("ui-tokens");
    char path[700];
    snprintf(path, sizeof path, "%s/tokens.csv", f->tokdir);
    FILE *t = fopen(path, "w");
    assert_non_null(t);
    fprintf(t, "jane-token-0123456789,jane,1001\n");
    fclose(t);
    const char *const extra[] = {
        "--nodes", "0", "--no-controllers", "--no-scheduler", "--token-auth-file", path, NULL};
    kpserver_start(&f->s, extra);
    snprintf(f->ca, sizeof f->ca, "%s/data/ca.crt", f->s.dir);
    snprintf(path, sizeof path, "%s/data/admin-token", f->s.dir);
    FILE *a = fopen(path, "r");
    assert_non_null(a);
    assert_non_null(fgets(f->admin, sizeof f->admin, a));
    fclose(a);
    f->admin[strcspn(f->admin, "\r\n")] = '\0';
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    kpserver_stop(&f->s);
    tu_rmtree(f->tokdir);
    free(f->tokdir);
    free(f);
    return 0;
}

static void check_page_headers(const reply_t *r)
{
    char v[1024];
    assert_non_null(head(r, "Content-Security-Policy", v, sizeof v));
    assert_non_null(strstr(v, "script-src 'self'"));
    assert_non_null(strstr(v, "frame-ancestors 'none'"));
    assert_null(strstr(v, "unsafe-inline"));
    assert_null(strstr(v, "unsafe-eval"));
    assert_non_null(head(r, "X-Content-Type-Options", v, sizeof v));
    assert_string_equal(v, "nosniff");
    assert_non_null(head(r, "X-Frame-Options", v, sizeof v));
    assert_string_equal(v, "DENY");
}

static void test_assets(void **state)
{
    fixture_t *f = *state;
    static const struct {
        const char *path, *ctype, *needle;
    } files[] = {{"/ui/", "text/html; charset=utf-8", "<script src=\"app.js\""},
                 {"/ui/index.html", "text/html; charset=utf-8", "<title>kplane</title>"},
                 {"/ui/app.js", "text/javascript; charset=utf-8", "'use strict'"},
                 {"/ui/style.css", "text/css; charset=utf-8", ":root"}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        reply_t r;
        /* Anyone may load the page: no credentials at all. */
        call(f, "GET", files[i].path, NULL, NULL, &r);
        assert_int_equal(r.code, 200);
        char v[256], etag[128], inm[200];
        assert_non_null(head(&r, "Content-Type", v, sizeof v));
        assert_string_equal(v, files[i].ctype);
        assert_non_null(strstr(r.body.p, files[i].needle));
        check_page_headers(&r);
        assert_non_null(head(&r, "Cache-Control", v, sizeof v));
        assert_string_equal(v, "no-cache");
        assert_non_null(head(&r, "ETag", etag, sizeof etag));
        assert_int_equal(etag[0], '"');
        reply_free(&r);
        /* Revalidation: 304 with no body. */
        snprintf(inm, sizeof inm, "If-None-Match: %s", etag);
        call(f, "GET", files[i].path, NULL, inm, &r);
        assert_int_equal(r.code, 304);
        assert_int_equal(r.body.len, 0);
        reply_free(&r);
        call(f, "GET", files[i].path, NULL, "If-None-Match: \"other\"", &r);
        assert_int_equal(r.code, 200);
        reply_free(&r);
    }
    /* No inline script in the page: the policy would refuse it. */
    reply_t r;
    call(f, "GET", "/ui/", NULL, NULL, &r);
    assert_null(strstr(r.body.p, "<script>"));
    assert_null(strstr(r.body.p, " onclick="));
    assert_null(strstr(r.body.p, "style=\""));
    reply_free(&r);
}

static void test_redirect_and_missing(void **state)
{
    fixture_t *f = *state;
    reply_t r;
    char v[256];
    call(f, "GET", "/ui", NULL, NULL, &r);
    assert_int_equal(r.code, 301);
    assert_non_null(head(&r, "Location", v, sizeof v));
    assert_string_equal(v, "/ui/");
    reply_free(&r);
    call(f, "GET", "/ui/nope.js", NULL, NULL, &r);
    assert_int_equal(r.code, 404);
    check_page_headers(&r);
    reply_free(&r);
    call(f, "GET", "/ui/../api/v1/secrets", NULL, NULL, &r);
    assert_true(r.code == 404 || r.code == 403);
    reply_free(&r);
    call(f, "POST", "/ui/", f->admin, NULL, &r);
    assert_int_equal(r.code, 405);
    reply_free(&r);
    /* A wrong token is still a wrong token, also for the page's files. */
    call(f, "GET", "/ui/", "wrong", NULL, &r);
    assert_int_equal(r.code, 401);
    reply_free(&r);
}

static void test_lab_endpoints_refused(void **state)
{
    fixture_t *f = *state;
    static const struct {
        const char *method, *path;
    } eps[] = {{"GET", "/ui/api/labs"},
               {"POST", "/ui/api/labs/exercise/run"},
               {"GET", "/ui/api/labs/run?offset=0"}};
    for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++) {
        reply_t r;
        call(f, eps[i].method, eps[i].path, NULL, NULL, &r);
        assert_int_equal(r.code, 401);
        reply_free(&r);
        call(f, eps[i].method, eps[i].path, "not-a-token", NULL, &r);
        assert_int_equal(r.code, 401);
        reply_free(&r);
        call(f, eps[i].method, eps[i].path, "jane-token-0123456789", NULL, &r);
        assert_int_equal(r.code, 403);
        json_t *st = json_loadb(r.body.p, r.body.len, 0, NULL);
        assert_non_null(st);
        const char *msg = json_string_value(json_object_get(st, "message"));
        assert_non_null(msg);
        assert_non_null(strstr(msg, "User \"jane\" cannot"));
        json_decref(st);
        reply_free(&r);
    }
}

static void test_lab_endpoints_admin(void **state)
{
    fixture_t *f = *state;
    reply_t r;
    call(f, "GET", "/ui/api/labs", f->admin, NULL, &r);
    assert_int_equal(r.code, 200);
    json_t *doc = json_loadb(r.body.p, r.body.len, 0, NULL);
    assert_non_null(doc);
    /* kplane server on 127.0.0.1: labs enabled by default. */
    assert_true(json_is_true(json_object_get(doc, "enabled")));
    assert_true(json_is_array(json_object_get(doc, "labs")));
    json_decref(doc);
    reply_free(&r);
    call(f, "POST", "/ui/api/labs/no-such-lab/run", f->admin, NULL, &r);
    assert_int_equal(r.code, 404);
    reply_free(&r);
    call(f, "GET", "/ui/api/labs/run?offset=0", f->admin, NULL, &r);
    assert_int_equal(r.code, 200);
    char v[64];
    assert_non_null(head(&r, "X-Kplane-Lab-State", v, sizeof v));
    assert_string_equal(v, "none");
    reply_free(&r);
    call(f, "GET", "/ui/api/labs/run?offset=x", f->admin, NULL, &r);
    assert_int_equal(r.code, 400);
    reply_free(&r);
    call(f, "GET", "/ui/api/nothing", f->admin, NULL, &r);
    assert_int_equal(r.code, 404);
    reply_free(&r);
}

static void test_dashboard_line(void **state)
{
    fixture_t *f = *state;
    char path[700], line[1024], want[256];
    snprintf(path, sizeof path, "%s/server.out", f->s.dir);
    snprintf(want, sizeof want, "dashboard: https://127.0.0.1:%d/ui/#token=%s", f->s.port,
             f->admin);
    FILE *o = fopen(path, "r");
    assert_non_null(o);
    int found = 0;
    while (fgets(line, sizeof line, o))
        found |= strstr(line, want) != NULL;
    fclose(o);
    assert_true(found);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assets),
        cmocka_unit_test(test_redirect_and_missing),
        cmocka_unit_test(test_lab_endpoints_refused),
        cmocka_unit_test(test_lab_endpoints_admin),
        cmocka_unit_test(test_dashboard_line),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    curl_global_cleanup();
    return rc;
}
