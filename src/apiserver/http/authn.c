/*
 * authn.c -- bearer tokens: the generated admin token and Kubernetes'
 * static token file (--token-auth-file).
 *
 * The file is CSV as Kubernetes reads it (Go's encoding/csv, any number of
 * fields per record): token,user,uid[,"group1,group2"]. Blank lines are
 * skipped; a quoted field may hold commas, doubled quotes and line breaks;
 * a record with fewer than 3 fields, a bare quote in an unquoted field or
 * a quoted field that does not close is an error naming its line, and the
 * server refuses to start. An empty token is skipped, a duplicate token is
 * taken from its last line (both logged), as kube-apiserver does.
 *
 * Matching is constant-time in the token's bytes: every known token of the
 * same length is compared in full, with no early exit, so the time does
 * not tell how much of a guess was right (only, as everywhere, its length).
 *
 * Each line's user is built once at load (authn.h's api_user_t: the 4th
 * field split at commas, as Kubernetes splits it, and system:authenticated
 * added), so that a request borrows it instead of building it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/apiserver.h"
#include "apiserver/http/authn.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/log.h"

#define AUTHN_FILE_MAX (16u << 20) /* cap on a token file */

typedef struct authn_entry {
    char *token, *user, *uid, *groups; /* groups: the 4th field as written, or NULL */
    size_t len;                        /* strlen(token) */
    char **group_list;                 /* the groups split, then system:authenticated */
    size_t ngroups;
} authn_entry_t;

struct apiserver_tokens {
    authn_entry_t *e;
    size_t n, cap;
};

void apiserver_tokens_free(apiserver_tokens_t *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->e[i].token);
        free(t->e[i].user);
        free(t->e[i].uid);
        free(t->e[i].groups);
        for (size_t g = 0; g < t->e[i].ngroups; g++)
            free(t->e[i].group_list[g]);
        free(t->e[i].group_list);
    }
    free(t->e);
    free(t);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- the CSV reader ---- */

typedef struct csv {
    const char *p, *end;
    int line; /* the line p is on (1-based) */
} csv_t;

typedef struct record {
    char *f[64]; /* fields (malloc'd); more than 64 are counted, not kept */
    size_t n;
    int line; /* where the record starts */
} record_t;

static void record_clear(record_t *r)
{
    for (size_t i = 0; i < r->n && i < 64; i++)
        free(r->f[i]);
    r->n = 0;
}

/* Read one record. 1: got one; 0: end of file; negative: an error (err says
 * where). */
static int csv_read(csv_t *c, record_t *r, const char *path, char *err, size_t errlen)
{
    r->n = 0;
    /* Skip blank lines ("\n" or "\r\n"). */
    for (;;) {
        if (c->p >= c->end) return 0;
        if (*c->p == '\n') {
            c->p++, c->line++;
        } else if (*c->p == '\r' && c->p + 1 < c->end && c->p[1] == '\n') {
            c->p += 2, c->line++;
        } else {
            break;
        }
    }
    r->line = c->line;
    buf_t f;
    const char *line_start = c->p;
    for (;;) { /* one field per round */
        buf_init(&f, AUTHN_FILE_MAX);
        int rc = buf_append(&f, "", 0);
        if (rc) return rc;
        int ended_line = 0;
        if (c->p < c->end && *c->p == '"') {
            int qline = c->line;
            c->p++;
            for (;;) {
                if (c->p >= c->end) {
                    buf_free(&f);
                    set_err(err, errlen,
                            "%s: parse error on line %d: extraneous or missing \" "
                            "in quoted-field (the quote opened on line %d)",
                            path, c->line, qline);
                    return KP_EINVAL;
                }
                char ch = *c->p++;
                if (ch == '"') {
                    if (c->p < c->end && *c->p == '"') { /* "" is one quote */
                        c->p++;
                        rc = buf_append(&f, "\"", 1);
                    } else {
                        break;
                    }
                } else {
                    if (ch == '\n') c->line++;
                    if (ch == '\r' && c->p < c->end && *c->p == '\n') continue; /* CRLF -> LF */
                    rc = buf_append(&f, &ch, 1);
                }
                if (rc) {
                    buf_free(&f);
                    return rc;
                }
            }
            /* After the closing quote: a separator or the end of the line. */
            if (c->p < c->end && *c->p != ',' && *c->p != '\n' &&
                !(*c->p == '\r' && c->p + 1 < c->end && c->p[1] == '\n')) {
                buf_free(&f);
                set_err(err, errlen,
                        "%s: parse error on line %d: extraneous or missing \" in "
                        "quoted-field",
                        path, c->line);
                return KP_EINVAL;
            }
        } else {
            while (c->p < c->end && *c->p != ',' && *c->p != '\n' &&
                   !(*c->p == '\r' && c->p + 1 < c->end && c->p[1] == '\n')) {
                if (*c->p == '"') {
                    buf_free(&f);
                    set_err(err, errlen,
                            "%s: parse error on line %d, column %d: bare \" in "
                            "non-quoted field",
                            path, c->line, (int)(c->p - line_start) + 1);
                    return KP_EINVAL;
                }
                if ((rc = buf_append(&f, c->p, 1))) {
                    buf_free(&f);
                    return rc;
                }
                c->p++;
            }
        }
        size_t len;
        char *text = buf_detach(&f, &len);
        if (!text) return KP_ENOMEM;
        if (r->n < 64)
            r->f[r->n] = text;
        else
            free(text);
        r->n++;
        if (c->p >= c->end) {
            ended_line = 1;
        } else if (*c->p == ',') {
            c->p++;
        } else { /* a line break */
            c->p += *c->p == '\r' ? 2 : 1;
            c->line++;
            ended_line = 1;
        }
        if (ended_line) return 1;
    }
}

/* The entry's groups as a list: its 4th field split at every comma (empty
 * pieces kept, as Go's strings.Split keeps them; no 4th field or an empty
 * one: none), then system:authenticated unless listed. */
static int split_groups(authn_entry_t *e)
{
    size_t n = 1;
    for (const char *p = e->groups; p && *p; p++)
        n += *p == ',';
    n += e->groups && *e->groups; /* pieces, and system:authenticated */
    if (!(e->group_list = calloc(n, sizeof *e->group_list))) return KP_ENOMEM;
    int member = 0;
    const char *p = e->groups && *e->groups ? e->groups : NULL;
    while (p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *g = strndup(p, len);
        if (!g) return KP_ENOMEM;
        e->group_list[e->ngroups++] = g;
        member |= !strcmp(g, API_GROUP_AUTHENTICATED);
        p = comma ? comma + 1 : NULL;
    }
    if (!member && !(e->group_list[e->ngroups++] = strdup(API_GROUP_AUTHENTICATED)))
        return KP_ENOMEM;
    return 0;
}

static int add_entry(apiserver_tokens_t *t, record_t *r)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        authn_entry_t *e = realloc(t->e, cap * sizeof *e);
        if (!e) return KP_ENOMEM;
        t->e = e;
        t->cap = cap;
    }
    authn_entry_t *e = &t->e[t->n++];
    memset(e, 0, sizeof *e);
    e->token = r->f[0];
    e->user = r->f[1];
    e->uid = r->f[2];
    e->len = strlen(e->token);
    r->f[0] = r->f[1] = r->f[2] = NULL;
    if (r->n >= 4) {
        e->groups = r->f[3];
        r->f[3] = NULL;
    }
    return split_groups(e);
}

int apiserver_tokens_load(const char *path, apiserver_tokens_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen) err[0] = '\0';
    buf_t b;
    buf_init(&b, AUTHN_FILE_MAX);
    int rc = buf_append_file(&b, path);
    if (rc == KP_ENOTFOUND || rc == KP_EIO) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        buf_free(&b);
        return rc;
    }
    apiserver_tokens_t *t = rc ? NULL : calloc(1, sizeof *t);
    if (!rc && !t) rc = KP_ENOMEM;
    if (rc) {
        set_err(err, errlen, "%s: %s", path, err_str(rc));
        buf_free(&b);
        return rc;
    }
    csv_t c = {b.p, b.p + b.len, 1};
    record_t r = {.n = 0};
    int got, recno = 0;
    while ((got = csv_read(&c, &r, path, err, errlen)) == 1) {
        if (r.n < 3) {
            set_err(err, errlen,
                    "token file '%s' must have at least 3 columns (token, user name, "
                    "user uid), found %zu on line %d",
                    path, r.n, r.line);
            rc = KP_EINVAL;
            break;
        }
        recno++;
        if (!*r.f[0]) {
            log_warn("apiserver",
                     "empty token has been found in token file '%s', record number "
                     "'%d' (line %d)",
                     path, recno, r.line);
            record_clear(&r);
            continue;
        }
        for (size_t i = 0; i < t->n; i++)
            if (!strcmp(t->e[i].token, r.f[0])) {
                log_warn("apiserver",
                         "duplicate token has been found in token file '%s', record "
                         "number '%d' (line %d)",
                         path, recno, r.line);
                t->e[i].token[0] = '\0'; /* the later line wins */
                t->e[i].len = 0;
            }
        if ((rc = add_entry(t, &r))) break;
        record_clear(&r);
    }
    record_clear(&r);
    if (got < 0) rc = got;
    buf_free(&b);
    if (rc) {
        if (err && errlen && !err[0]) set_err(err, errlen, "%s: %s", path, err_str(rc));
        apiserver_tokens_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

int apiserver_tokens_add(apiserver_tokens_t **t, const char *token, const char *user,
                         const char *uid, const char *groups)
{
    if (!token || !*token || !user || !*user) return KP_EINVAL;
    if (!*t && !(*t = calloc(1, sizeof **t))) return KP_ENOMEM;
    record_t r = {.n = groups ? 4 : 3};
    r.f[0] = strdup(token);
    r.f[1] = strdup(user);
    r.f[2] = strdup(uid ? uid : "");
    if (groups) r.f[3] = strdup(groups);
    int rc = r.f[0] && r.f[1] && r.f[2] && (!groups || r.f[3]) ? add_entry(*t, &r) : KP_ENOMEM;
    record_clear(&r);
    return rc;
}

size_t apiserver_tokens_count(const apiserver_tokens_t *t)
{
    size_t n = 0;
    for (size_t i = 0; t && i < t->n; i++)
        n += t->e[i].len > 0;
    return n;
}

/* 1 when a and b (both of length n) are equal; time independent of where
 * they differ. */
static int same(const char *a, const char *b, size_t n)
{
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

int api_user_in_group(const api_user_t *u, const char *g)
{
    for (size_t i = 0; i < u->ngroups; i++)
        if (!strcmp(u->groups[i], g)) return 1;
    return 0;
}

api_authn_result_t api_authn_token(const char *admin_token, const api_user_t *admin_user,
                                   const apiserver_tokens_t *t, const char *tok, api_user_t *out)
{
    size_t n = strlen(tok);
    const authn_entry_t *found = NULL;
    int admin = admin_token && strlen(admin_token) == n && n && same(tok, admin_token, n);
    /* No early exit: every entry of the same length is compared. */
    for (size_t i = 0; t && i < t->n; i++) {
        const authn_entry_t *e = &t->e[i];
        if (e->len == n && n && same(tok, e->token, n) && !found) found = e;
    }
    if (admin) {
        *out = *admin_user;
    } else if (found) {
        *out = (api_user_t){.name = found->user,
                            .uid = found->uid,
                            .groups = (const char *const *)found->group_list,
                            .ngroups = found->ngroups};
    } else {
        return API_AUTHN_FAILED;
    }
    return API_AUTHN_OK;
}
