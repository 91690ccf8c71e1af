/*
 * ui.c -- the dashboard's server side (ui.h): its files, compiled in, and
 * the lab page's endpoints over the lab runner (labrun.h).
 *
 * The files are served with their type, a strong ETag (If-None-Match gets
 * 304), "Cache-Control: no-cache" (revalidated each load: a new build's
 * page is never mixed with an old one's script) and headers that keep the
 * page to itself: a Content-Security-Policy allowing only its own script,
 * style and API (no inline script, no framing), nosniff, no referrer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "apiserver/ui/assets.h"
#include "apiserver/ui/labrun.h"
#include "apiserver/ui/ui.h"
#include "lib/err.h"
#include "lib/log.h"

#define UI_PREFIX     "/ui/"
#define UI_API_PREFIX "/ui/api/"
#define UI_READ_MAX   (256u << 10) /* lab output per poll */

struct api_ui {
    api_labrun_t *run; /* NULL when labs are not enabled */
};

/* The page's own origin only; 'none' for what it never uses. */
#define UI_CSP                                                                                     \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "              \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static const char *const ui_headers[] = {"Content-Security-Policy",
                                         UI_CSP,
                                         "X-Content-Type-Options",
                                         "nosniff",
                                         "X-Frame-Options",
                                         "DENY",
                                         "Referrer-Policy",
                                         "no-referrer",
                                         NULL};

const api_ui_asset_t *api_ui_asset_find(const char *name)
{
    for (const api_ui_asset_t *a = api_ui_assets; a->name; a++)
        if (!strcmp(a->name, name)) return a;
    return NULL;
}

api_ui_path_t api_ui_path_kind(const char *path)
{
    if (!strcmp(path, "/ui")) return API_UI_ASSET;
    if (strncmp(path, UI_PREFIX, strlen(UI_PREFIX))) return API_UI_NONE;
    if (!strncmp(path, UI_API_PREFIX, strlen(UI_API_PREFIX)) || !strcmp(path, "/ui/api"))
        return API_UI_API;
    return API_UI_ASSET;
}

int api_ui_start(apiserver_t *s)
{
    struct api_ui *ui = calloc(1, sizeof *ui);
    if (!ui) return KP_ENOMEM;
    if (s->cfg.enable_labs && api_labrun_new(0, &ui->run)) {
        free(ui);
        return KP_ENOMEM;
    }
    s->ui = ui;
    return 0;
}

void api_ui_stop(apiserver_t *s)
{
    if (!s->ui) return;
    api_labrun_free(s->ui->run);
    free(s->ui);
    s->ui = NULL;
}

/* Reply with a copy of len bytes and the page's headers, plus `more`
 * (NULL, or pairs ending with NULL; at most 8 pairs). */
static int reply_with(api_req_t *r, int code, const char *ctype, const void *body, size_t len,
                      const char *const *more)
{
    const char *h[sizeof ui_headers / sizeof ui_headers[0] + 16];
    size_t n = 0;
    for (size_t i = 0; ui_headers[i]; i++)
        h[n++] = ui_headers[i];
    for (size_t i = 0; more && more[i] && n + 2 < sizeof h / sizeof h[0]; i++)
        h[n++] = more[i];
    h[n] = NULL;
    char *copy = malloc(len + 1);
    if (!copy) return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    if (len) memcpy(copy, body, len);
    copy[len] = '\0';
    return api_reply_take_with(r, code, ctype, copy, len, h);
}

/* Does If-None-Match (a list, or *) name etag? */
static int etag_matches(const char *inm, const char *etag)
{
    if (!inm) return 0;
    if (!strcmp(inm, "*")) return 1;
    size_t n = strlen(etag);
    for (const char *p = strstr(inm, etag); p; p = strstr(p + 1, etag)) {
        char after = p[n];
        if (!after || after == ',' || after == ' ') return 1;
    }
    return 0;
}

static int serve_asset(api_req_t *r)
{
    if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD")) {
        static const char *const allow[] = {"Allow", "GET, HEAD", NULL};
        static const char msg[] = "method not allowed\n";
        return reply_with(r, 405, "text/plain; charset=utf-8", msg, sizeof msg - 1, allow);
    }
    if (!strcmp(r->path, "/ui")) {
        static const char *const loc[] = {"Location", UI_PREFIX, NULL};
        static const char msg[] = "the dashboard is at /ui/\n";
        return reply_with(r, 301, "text/plain; charset=utf-8", msg, sizeof msg - 1, loc);
    }
    const char *name = r->path + strlen(UI_PREFIX);
    const api_ui_asset_t *a = api_ui_asset_find(*name ? name : "index.html");
    if (!a) {
        static const char msg[] = "no such file in the dashboard\n";
        return reply_with(r, 404, "text/plain; charset=utf-8", msg, sizeof msg - 1, NULL);
    }
    const char *const cache[] = {"ETag", a->etag, "Cache-Control", "no-cache", NULL};
    if (etag_matches(api_header(r, "If-None-Match"), a->etag))
        return reply_with(r, 304, NULL, "", 0, cache);
    return reply_with(r, 200, a->ctype, a->data, a->len, cache);
}

/* ---- the lab page's endpoints ---- */

static const apiserver_lab_t *lab_named(const apiserver_t *s, const char *name)
{
    for (size_t i = 0; s->cfg.labs && i < s->cfg.nlabs; i++)
        if (s->cfg.labs[i].name && !strcmp(s->cfg.labs[i].name, name)) return &s->cfg.labs[i];
    return NULL;
}

static const char *state_name(api_labrun_state_t st)
{
    return st == API_LABRUN_RUNNING ? "running" : st == API_LABRUN_EXITED ? "exited" : "none";
}

/* GET /ui/api/labs */
static int serve_list(api_req_t *r)
{
    apiserver_t *s = r->srv;
    json_t *labs = json_array(), *doc = json_object();
    for (size_t i = 0; labs && s->cfg.labs && i < s->cfg.nlabs; i++) {
        const apiserver_lab_t *l = &s->cfg.labs[i];
        json_t *row = json_pack("{s:s,s:s,s:s}", "name", l->name ? l->name : "", "seed",
                                l->seed ? l->seed : "", "title", l->title ? l->title : "");
        if (row && l->needs) json_object_set_new(row, "needs", json_string(l->needs));
        if (!row || json_array_append_new(labs, row)) {
            json_decref(labs);
            labs = NULL;
        }
    }
    int enabled = s->ui && s->ui->run;
    if (!labs || !doc || json_object_set_new(doc, "enabled", json_boolean(enabled)) ||
        json_object_set_new(doc, "labs", labs)) {
        json_decref(doc);
        return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    }
    if (enabled) {
        char *data;
        size_t len;
        api_labrun_status_t st;
        if (!api_labrun_read(s->ui->run, 0, 0, &data, &len, &st) && st.state != API_LABRUN_NONE) {
            json_object_set_new(doc, "last", json_string(st.name));
            json_object_set_new(doc, "state", json_string(state_name(st.state)));
        }
        free(data);
    }
    return api_reply_json(r, 200, doc);
}

static int labs_disabled(api_req_t *r)
{
    return api_reply_status(r, 404, "NotFound", NULL,
                            "labs are not enabled on this server: they run only in `kplane "
                            "server` on loopback (--enable-labs)");
}

/* POST /ui/api/labs/NAME/run */
static int serve_run(api_req_t *r, const char *name)
{
    apiserver_t *s = r->srv;
    if (strcmp(r->method, "POST"))
        return api_reply_status(r, 405, "MethodNotAllowed", NULL, "POST to start a lab");
    if (!s->ui || !s->ui->run) return labs_disabled(r);
    const apiserver_lab_t *lab = lab_named(s, name);
    if (!lab) return api_reply_status(r, 404, "NotFound", NULL, "no lab \"%s\"", name);
    const char *exe = s->cfg.lab_exe ? s->cfg.lab_exe : "/proc/self/exe";
    char *const argv[] = {(char *)exe, "lab", "run", (char *)lab->name, NULL};
    int rc = api_labrun_start(s->ui->run, lab->name, argv);
    if (rc == KP_EBUSY) {
        char *data;
        size_t len;
        api_labrun_status_t st;
        api_labrun_read(s->ui->run, 0, 0, &data, &len, &st);
        free(data);
        return api_reply_status(r, 409, "Conflict", NULL,
                                "lab \"%s\" is running: one lab at a time", st.name);
    }
    if (rc) return api_reply_error(r, rc, NULL, "starting lab \"%s\": %s", lab->name, err_str(rc));
    log_info("apiserver", "lab %s: started for %s", lab->name, r->user.name);
    json_t *doc = json_pack("{s:s,s:s}", "name", lab->name, "state", "running");
    return api_reply_json(r, 202, doc);
}

/* GET /ui/api/labs/run?offset=N */
static int serve_output(api_req_t *r)
{
    apiserver_t *s = r->srv;
    if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD"))
        return api_reply_status(r, 405, "MethodNotAllowed", NULL, "GET a lab's output");
    if (!s->ui || !s->ui->run) return labs_disabled(r);
    const char *o = api_query(r, "offset");
    char *end = NULL;
    unsigned long long offset = o && *o ? strtoull(o, &end, 10) : 0;
    if (o && *o && (*end || *o == '-'))
        return api_reply_status(r, 400, "BadRequest", NULL, "offset: not a byte count: %s", o);
    char *data = NULL;
    size_t len = 0;
    api_labrun_status_t st;
    if (api_labrun_read(s->ui->run, (size_t)offset, UI_READ_MAX, &data, &len, &st))
        return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    char next[32], total[32], code[16], secs[32];
    snprintf(next, sizeof next, "%llu", offset + len);
    snprintf(total, sizeof total, "%zu", st.total);
    snprintf(code, sizeof code, "%d", st.exit_code);
    snprintf(secs, sizeof secs, "%.1f", st.seconds);
    const char *const more[] = {"X-Kplane-Lab",
                                st.name,
                                "X-Kplane-Lab-State",
                                state_name(st.state),
                                "X-Kplane-Lab-Exit",
                                code,
                                "X-Kplane-Lab-Next",
                                next,
                                "X-Kplane-Lab-Total",
                                total,
                                "X-Kplane-Lab-Truncated",
                                st.truncated ? "1" : "0",
                                "X-Kplane-Lab-Seconds",
                                secs,
                                NULL};
    int rc = reply_with(r, 200, "text/plain; charset=utf-8", data ? data : "", len, more);
    free(data);
    return rc;
}

static int serve_api(api_req_t *r)
{
    const char *p = r->path + strlen(UI_API_PREFIX);
    if (!strncmp(r->path, UI_API_PREFIX, strlen(UI_API_PREFIX))) {
        if (!strcmp(p, "labs")) {
            if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD"))
                return api_reply_status(r, 405, "MethodNotAllowed", NULL, "GET the labs");
            return serve_list(r);
        }
        if (!strcmp(p, "labs/run")) return serve_output(r);
        /* labs/NAME/run */
        char name[API_LABRUN_NAME_MAX + 1];
        size_t n = 0;
        if (!strncmp(p, "labs/", 5)) {
            const char *q = p + 5;
            while (n < sizeof name - 1 &&
                   ((q[n] >= 'a' && q[n] <= 'z') || (q[n] >= '0' && q[n] <= '9') || q[n] == '-'))
                n++;
            memcpy(name, q, n);
            name[n] = '\0';
            if (n && !strcmp(q + n, "/run")) return serve_run(r, name);
        }
    }
    return api_reply_status(r, 404, "NotFound", NULL,
                            "the server could not find the requested resource");
}

int api_ui_serve(api_req_t *r)
{
    switch (api_ui_path_kind(r->path)) {
    case API_UI_ASSET:
        return serve_asset(r);
    case API_UI_API:
        return serve_api(r);
    default:
        return api_reply_status(r, 404, "NotFound", NULL,
                                "the server could not find the requested resource");
    }
}
