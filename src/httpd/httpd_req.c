/*
 * httpd_req.c -- one request of the engine: made and freed, its headers
 * gathered (both protocols hand them here), its target split into path and
 * decoded query, and the accessors the application reads it with
 * (httpd.h: method, path, query, headers, body, the peer's certificate and
 * address, the reply header, the handler's pointer).
 *
 * The request's life across threads (dispatch, replies, hand-back) is
 * httpd.c's; what is here touches one request, under whatever holds it.
 */
#include "httpd/httpd_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/err.h"

httpd_req_t *httpd__req_new(conn_t *c)
{
    httpd_t *h = c->h;
    httpd_req_t *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->h = h;
    r->conn = c;
    r->local = c->local;
    if ((r->peer = c->peer)) atomic_fetch_add(&r->peer->refs, 1);
    memcpy(r->peer_addr, c->peer_addr, sizeof r->peer_addr);
    buf_init(&r->target, HTTPD_TARGET_MAX);
    buf_init(&r->body, 0);
    buf_init(&r->head, SIZE_MAX);
    buf_init(&r->pre, SIZE_MAX);
    buf_init(&r->out, SIZE_MAX);
    pthread_mutex_lock(&h->mu);
    h->live_reqs++;
    pthread_mutex_unlock(&h->mu);
    return r;
}

void httpd__req_free(httpd_req_t *r)
{
    httpd_t *h = r->h;
    /* A request the application took at its headers and never handled:
     * its data goes with it (A REQUEST'S LIFE, on_drop). */
    if (r->taken && !r->picked && h->cfg.on_drop) h->cfg.on_drop(h->cfg.arg, r, r->status);
    free(r->xhead[0]);
    free(r->xhead[1]);
    buf_free(&r->target);
    buf_free(&r->body);
    buf_free(&r->head);
    buf_free(&r->pre);
    buf_free(&r->out);
    free(r->path);
    httpd__peer_put(r->peer);
    for (size_t i = 0; i < 2 * r->nargs; i++)
        free(r->args[i]);
    free(r->args);
    for (size_t i = 0; i < r->nhdrs; i++) {
        free(r->hdrs[i].name);
        free(r->hdrs[i].value);
    }
    free(r);
    pthread_mutex_lock(&h->mu);
    h->live_reqs--;
    pthread_cond_broadcast(&h->done_cv);
    pthread_mutex_unlock(&h->mu);
}

int httpd__add_header(httpd_req_t *r, const char *n, size_t nlen, const char *v, size_t vlen)
{
    for (size_t i = 0; i < r->nhdrs; i++) { /* a repeated field: one value, ", "-joined */
        if (strlen(r->hdrs[i].name) != nlen || strncasecmp(r->hdrs[i].name, n, nlen)) continue;
        size_t a = strlen(r->hdrs[i].value);
        char *j = realloc(r->hdrs[i].value, a + 2 + vlen + 1);
        if (!j) return KP_ENOMEM;
        memcpy(j + a, ", ", 2);
        memcpy(j + a + 2, v, vlen);
        j[a + 2 + vlen] = '\0';
        r->hdrs[i].value = j;
        return 0;
    }
    if (r->nhdrs == HTTPD_HEADERS_MAX) return KP_ETOOLARGE;
    char *name = strndup(n, nlen), *value = strndup(v, vlen);
    if (!name || !value) {
        free(name);
        free(value);
        return KP_ENOMEM;
    }
    r->hdrs[r->nhdrs++] = (hdr_t){name, value};
    return 0;
}

/* Queue r for the loop (h->mu held). */
static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c = (char)(c | 32);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A query component decoded ('+' a space, %XX a byte; as Go's
 * url.ParseQuery), malloc'd. */
static char *qdecode(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        int hi = s[i] == '%' && i + 2 < n ? hexval(s[i + 1]) : -1;
        int lo = hi >= 0 ? hexval(s[i + 2]) : -1;
        if (s[i] == '+') {
            out[j++] = ' ';
        } else if (lo >= 0) {
            out[j++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[j++] = s[i];
        }
    }
    out[j] = '\0';
    return out;
}

/* r->query's name=value pairs, decoded, in order ('&'-separated; a name
 * without '=' has the value NULL). Errors: KP_ENOMEM. */
static int split_query(httpd_req_t *r)
{
    const char *q = r->query;
    size_t cap = 1;
    for (const char *p = q; *p; p++)
        cap += *p == '&';
    if (!*q) return 0;
    if (!(r->args = calloc(2 * cap, sizeof *r->args))) return KP_ENOMEM;
    for (const char *p = q; *p;) {
        const char *end = strchr(p, '&');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        if (n) {
            size_t kn = eq ? (size_t)(eq - p) : n;
            char *k = qdecode(p, kn), *v = eq ? qdecode(eq + 1, n - kn - 1) : NULL;
            if (!k || (eq && !v)) {
                free(k);
                free(v);
                return KP_ENOMEM;
            }
            r->args[2 * r->nargs] = k;
            r->args[2 * r->nargs++ + 1] = v;
        }
        p += n;
        if (*p == '&') p++;
    }
    return 0;
}

int httpd__split_target(httpd_req_t *r)
{
    char *t = r->target.p ? r->target.p : (char *)"";
    char *q = strchr(t, '?');
    size_t n = q ? (size_t)(q - t) : strlen(t);
    r->query = q ? q + 1 : t + strlen(t);
    char *p = malloc(n + 1);
    if (!p) return KP_ENOMEM;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        int hi = t[i] == '%' && i + 2 < n ? hexval(t[i + 1]) : -1;
        int lo = hi >= 0 ? hexval(t[i + 2]) : -1;
        if (lo < 0) {
            p[j++] = t[i];
            continue;
        }
        if (!hi && !lo) {
            free(p);
            return KP_EINVAL;
        }
        p[j++] = (char)(hi * 16 + lo);
        i += 2;
    }
    p[j] = '\0';
    r->path = p;
    return split_query(r);
}

/* Run on_gone() or on_drain() for r with h->mu held (released around the
 * call): a reply that completes meanwhile on another thread waits for it
 * (hand_back), so the handler's data stays valid during the call. */

const char *httpd_method(const httpd_req_t *r)
{
    return r->method;
}
const char *httpd_path(const httpd_req_t *r)
{
    return r->path ? r->path : "";
}
const char *httpd_query(const httpd_req_t *r)
{
    return r->query ? r->query : "";
}

const char *httpd_arg(const httpd_req_t *r, const char *name)
{
    for (size_t i = 0; i < r->nargs; i++)
        if (!strcmp(r->args[2 * i], name)) return r->args[2 * i + 1];
    return NULL;
}

size_t httpd_nargs(const httpd_req_t *r)
{
    return r->nargs;
}

void httpd_arg_at(const httpd_req_t *r, size_t i, const char **name, const char **value)
{
    *name = r->args[2 * i];
    *value = r->args[2 * i + 1];
}

const char *httpd_header(const httpd_req_t *r, const char *name)
{
    for (size_t i = 0; i < r->nhdrs; i++)
        if (!strcasecmp(r->hdrs[i].name, name)) return r->hdrs[i].value;
    return NULL;
}

const char *httpd_header_at(const httpd_req_t *r, size_t i, const char **name)
{
    if (i >= r->nhdrs) return NULL;
    *name = r->hdrs[i].name;
    return r->hdrs[i].value;
}

const char *httpd_body(const httpd_req_t *r, size_t *len)
{
    *len = r->body.len;
    return r->body.p ? r->body.p : "";
}

int httpd_is_h2(const httpd_req_t *r)
{
    return r->h2;
}
int httpd_is_local(const httpd_req_t *r)
{
    return r->local;
}
int httpd_peer_cert(const httpd_req_t *r, const char **cn, const char *const **orgs, size_t *norgs)
{
    const httpd_peer_t *p = r->peer;
    int ok = p && p->state == 1;
    if (cn) *cn = ok ? p->cn : NULL;
    if (orgs) *orgs = ok ? (const char *const *)p->orgs : NULL;
    if (norgs) *norgs = ok ? p->norgs : 0;
    return p ? p->state : 0;
}
const char *httpd_peer_cert_error(const httpd_req_t *r)
{
    return r->peer && r->peer->state == -1 ? r->peer->why : NULL;
}
void httpd_set_data(httpd_req_t *r, void *data)
{
    r->data = data;
}
void *httpd_data(const httpd_req_t *r)
{
    return r->data;
}

const char *httpd_target(const httpd_req_t *r)
{
    return r->target.p ? r->target.p : "";
}

const char *httpd_peer(const httpd_req_t *r)
{
    return r->peer_addr;
}

int httpd_set_reply_header(httpd_req_t *r, const char *name, const char *value)
{
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return KP_ENOMEM;
    }
    free(r->xhead[0]);
    free(r->xhead[1]);
    r->xhead[0] = n;
    r->xhead[1] = v;
    return 0;
}
