/*
 * proc_http.c -- the node's log server, the part of a kubelet's API that
 * the API server's pods/<name>/log proxies to:
 *
 *   GET /containerLogs/{namespace}/{pod}/{container}
 *       ?follow=&previous=&tailLines=&sinceSeconds=&sinceTime=&timestamps=&limitBytes=
 *
 * answers text/plain: the container's output, as a kubelet gives it (each
 * CRI record's text, with its RFC 3339 time first when timestamps=true).
 * follow=true streams (chunked) until the run's output has ended (the
 * container exited) or the client goes away. 401 without the bearer token
 * (when one is configured), 404 for an unknown pod, container or previous
 * run, 400 for a bad query.
 *
 * INVARIANT: a stream holds a reference to the run's log (proc_log_t), never
 * to a pod entry, so pods can come and go under it; it reads only the file.
 *
 * Threading: the HTTP engine (src/httpd): its loop and workers; a reply is
 * a pulled stream (httpd_stream_pull): a follow with nothing new parks
 * (no thread) and reads again after FOLLOW_WAIT_MS; it ends when its
 * client goes. Plain HTTP on the
 * configured address (127.0.0.1 by default).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "httpd/httpd.h"
#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "node/proc_int.h"

#define READ_CHUNK     65536
#define FOLLOW_WAIT_MS 100

typedef struct lstream {
    node_proc_t *p;
    proc_log_t *log;
    int fd;
    int follow, timestamps;
    long long limit; /* -1: none */
    long long sent;
    char since[48]; /* records older than this time are skipped ("": none) */
    httpd_req_t *req;
    buf_t raw; /* file bytes not yet a whole record */
    buf_t out; /* formatted bytes not yet sent */
} lstream_t;

static void lstream_free(void *arg)
{
    lstream_t *ls = arg;
    if (ls->fd >= 0) close(ls->fd);
    proc__log_unref(ls->log);
    buf_free(&ls->raw);
    buf_free(&ls->out);
    free(ls);
}

/* Turn the whole records in raw into output. */
static void format_records(lstream_t *ls)
{
    size_t start = 0;
    for (size_t i = 0; i < ls->raw.len; i++) {
        if (ls->raw.p[i] != '\n') continue;
        const char *rec = ls->raw.p + start;
        size_t len = i - start;
        start = i + 1;
        const char *s1 = memchr(rec, ' ', len);
        const char *s2 = s1 ? memchr(s1 + 1, ' ', len - (size_t)(s1 + 1 - rec)) : NULL;
        const char *s3 = s2 ? memchr(s2 + 1, ' ', len - (size_t)(s2 + 1 - rec)) : NULL;
        if (!s3) continue; /* not a record */
        int partial = s2[1] == 'P';
        const char *text = s3 + 1;
        size_t tlen = len - (size_t)(text - rec);
        if (ls->since[0] && strncmp(rec, ls->since, (size_t)(s1 - rec)) < 0) continue;
        if (ls->timestamps) {
            buf_append(&ls->out, rec, (size_t)(s1 - rec));
            buf_append(&ls->out, " ", 1);
        }
        buf_append(&ls->out, text, tlen);
        if (!partial) buf_append(&ls->out, "\n", 1);
    }
    if (start) {
        memmove(ls->raw.p, ls->raw.p + start, ls->raw.len - start);
        ls->raw.len -= start;
    }
}

/* Read what the file has: 1 if anything came, 0 at its end, -1 on error. */
static int read_more(lstream_t *ls)
{
    if (buf_reserve(&ls->raw, READ_CHUNK)) return -1;
    ssize_t n = read(ls->fd, ls->raw.p + ls->raw.len, READ_CHUNK);
    if (n < 0) return errno == EINTR ? 1 : -1;
    if (n == 0) return 0;
    ls->raw.len += (size_t)n;
    ls->raw.p[ls->raw.len] = '\0';
    format_records(ls);
    return 1;
}

/* The next piece of the log (httpd_stream_pull's `next`): what the file
 * has, formatted; none at the end (not following, the run's output ended,
 * the node stopping, the client gone, or limitBytes reached). */
static int lstream_next(void *arg, buf_t *piece, int *wait_ms)
{
    lstream_t *ls = arg;
    for (;;) {
        if (ls->limit >= 0 && ls->sent >= ls->limit) return 0;
        if (ls->out.len) {
            size_t n = ls->out.len;
            if (ls->limit >= 0 && (long long)n > ls->limit - ls->sent)
                n = (size_t)(ls->limit - ls->sent);
            int rc = buf_append(piece, ls->out.p, n);
            buf_reset(&ls->out);
            ls->sent += (long long)n;
            return rc;
        }
        int ended = atomic_load(&ls->log->ended);
        int r = read_more(ls);
        if (r < 0) return KP_EIO;
        if (r > 0) continue;
        if (!ls->follow || ended || atomic_load(&ls->p->stopping) || httpd_gone(ls->req))
            return 0;
        *wait_ms = FOLLOW_WAIT_MS;
        return KP_EAGAIN;
    }
}

/* Seek fd to the first record of its last n lines (a line ends with an F
 * record; P records belong to the line the next F ends). The file is read
 * whole, up to its last TAIL_SCAN_MAX bytes. */
#define TAIL_SCAN_MAX (64 << 20)
static void tail_offset(int fd, long long n)
{
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > TAIL_SCAN_MAX ? size - TAIL_SCAN_MAX : 0;
    lseek(fd, from, SEEK_SET);
    if (size <= 0) return;
    char *d = malloc((size_t)(size - from));
    if (!d) return;
    ssize_t got = pread(fd, d, (size_t)(size - from), from);
    if (got <= 0) {
        free(d);
        return;
    }
    /* Walk backwards over records; a line starts after an F record. */
    long long lines = 0;
    off_t start = got; /* offset (in d) of the earliest line kept */
    ssize_t end = got; /* the current record ends at end-1 ('\n') */
    while (end > 0 && lines < n) {
        ssize_t s = end - 1;
        while (s > 0 && d[s - 1] != '\n')
            s--;
        /* the record before s: a line boundary at s if it was F (or s is 0) */
        int boundary = 1;
        if (s > 0) {
            ssize_t ps = s - 1;
            while (ps > 0 && d[ps - 1] != '\n')
                ps--;
            const char *q1 = memchr(d + ps, ' ', (size_t)(s - ps));
            const char *q2 = q1 ? memchr(q1 + 1, ' ', (size_t)(d + s - q1 - 1)) : NULL;
            boundary = !q2 || q2[1] == 'F';
        }
        if (boundary) {
            lines++;
            start = s;
        }
        end = s;
    }
    free(d);
    lseek(fd, from + start, SEEK_SET);
}

static void reply_text(httpd_req_t *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reply_text(httpd_req_t *r, int code, const char *fmt, ...)
{
    static const char *const plain[] = {"Content-Type", "text/plain; charset=utf-8", NULL};
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    httpd_reply(r, code, plain, n < 0 ? NULL : msg, n < 0 ? 0 : (size_t)n);
}

static int qbool(httpd_req_t *r, const char *name)
{
    const char *v = httpd_arg(r, name);
    return v && (!strcmp(v, "1") || !strcasecmp(v, "t") || !strcasecmp(v, "true"));
}

/* A non-negative integer query value: 1 with *out, 0 when absent, -1 bad. */
static int qint(httpd_req_t *r, const char *name, long long *out)
{
    const char *v = httpd_arg(r, name);
    if (!v) return 0;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || errno || n < 0) return -1;
    *out = n;
    return 1;
}

/* The bearer token on the headers; a body is never read. */
static httpd_next_t on_headers(void *arg, httpd_req_t *r, size_t *body_max)
{
    node_proc_t *p = arg;
    *body_max = 0;
    if (p->token) {
        const char *h = httpd_header(r, "Authorization");
        if (!h || strncasecmp(h, "Bearer ", 7) || strcmp(h + 7, p->token)) {
            reply_text(r, 401, "Unauthorized");
            return HTTPD_REPLIED;
        }
        httpd_prove(r);
    }
    const char *cl = httpd_header(r, "Content-Length");
    if ((cl && strcmp(cl, "0")) || httpd_header(r, "Transfer-Encoding")) {
        reply_text(r, 413, "a request body is not accepted");
        return HTTPD_REPLIED;
    }
    return HTTPD_READ_BODY;
}

static void on_request(void *arg, httpd_req_t *r)
{
    node_proc_t *p = arg;
    const char *url = httpd_path(r);
    char ns[64], pod[254], ctr[PROC_NAME_MAX], extra[2];
    if (strncmp(url, "/containerLogs/", 15) ||
        sscanf(url + 15, "%63[^/]/%253[^/]/%63[^/]%1s", ns, pod, ctr, extra) != 3) {
        reply_text(r, 404, "404 page not found");
        return;
    }
    if (strcmp(httpd_method(r), "GET")) {
        reply_text(r, 405, "method not allowed");
        return;
    }
    long long tail = -1, since = 0, limit = -1;
    if (qint(r, "tailLines", &tail) < 0) {
        reply_text(r, 400, "tailLines: must be a non-negative integer");
        return;
    }
    if (qint(r, "sinceSeconds", &since) < 0 || (since == 0 && httpd_arg(r, "sinceSeconds"))) {
        reply_text(r, 400, "sinceSeconds: must be greater than 0");
        return;
    }
    if (qint(r, "limitBytes", &limit) < 0 || limit == 0) {
        reply_text(r, 400, "limitBytes: must be greater than 0");
        return;
    }
    int previous = qbool(r, "previous");
    char key[SIM_KEY_MAX];
    snprintf(key, sizeof key, "%s/%s", ns, pod);
    const char *why = NULL;
    proc_log_t *log = proc__log_lookup(p, key, ctr, previous, &why);
    if (!log) {
        if (!strcmp(why, "pod"))
            reply_text(r, 404, "pod %s/%s not found", ns, pod);
        else if (!strcmp(why, "previous"))
            reply_text(r, 400, "previous terminated container \"%s\" in pod \"%s\" not found",
                       ctr, pod);
        else
            reply_text(r, 404, "container \"%s\" in pod \"%s\" not found", ctr, pod);
        return;
    }
    lstream_t *ls = calloc(1, sizeof *ls);
    if (!ls) {
        proc__log_unref(log);
        reply_text(r, 500, "out of memory");
        return;
    }
    ls->p = p;
    ls->log = log;
    ls->req = r;
    ls->follow = qbool(r, "follow") && !previous;
    ls->timestamps = qbool(r, "timestamps");
    ls->limit = limit;
    buf_init(&ls->raw, 64u << 20);
    buf_init(&ls->out, 64u << 20);
    const char *st = httpd_arg(r, "sinceTime");
    if (since > 0)
        proc__time_nano(ls->since, sizeof ls->since, clock_wall_ns() - since * 1000000000LL);
    else if (st && *st)
        snprintf(ls->since, sizeof ls->since, "%s", st);
    ls->fd = open(log->path, O_RDONLY | O_CLOEXEC);
    if (ls->fd < 0) {
        lstream_free(ls);
        reply_text(r, 404, "container \"%s\" in pod \"%s\" has no log", ctr, pod);
        return;
    }
    if (tail >= 0) tail_offset(ls->fd, tail);
    static const char *const plain[] = {"Content-Type", "text/plain; charset=utf-8", NULL};
    if (httpd_stream_pull(r, 200, plain, 0, lstream_next, lstream_free, ls)) {
        lstream_free(ls);
        reply_text(r, 500, "out of memory");
    }
}

int proc__http_start(node_proc_t *p)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)p->port_cfg);
    if (inet_pton(AF_INET, p->addr, &sa.sin_addr) != 1) return KP_EINVAL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    socklen_t len = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 256) ||
        getsockname(fd, (struct sockaddr *)&sa, &len)) {
        if (fd >= 0) close(fd);
        log_error(PROC_COMPONENT, "log server cannot listen on %s:%d", p->addr, p->port_cfg);
        return KP_EIO;
    }
    httpd_config_t hc = {.tcp_fd = fd,
                         .unix_fd = -1,
                         .workers = 1,
                         .max_workers = 16,
                         .limits = {.max_connections = 256},
                         .on_headers = on_headers,
                         .on_request = on_request,
                         .arg = p};
    int rc = httpd_start(&hc, &p->http);
    if (rc) {
        log_error(PROC_COMPONENT, "log server on %s:%d: %s", p->addr, p->port_cfg, err_str(rc));
        return rc;
    }
    p->port = ntohs(sa.sin_port);
    return 0;
}

void proc__http_stop(node_proc_t *p)
{
    httpd_stop(p->http);
    p->http = NULL;
}
