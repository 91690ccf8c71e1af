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
 * Threading: libmicrohttpd's thread per connection, so a follow blocks only
 * its own thread (polling its socket, so a client that leaves ends it).
 * Plain HTTP on the configured address (127.0.0.1 by default).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

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
    struct MHD_Connection *conn;
    buf_t raw; /* file bytes not yet a whole record */
    buf_t out; /* formatted bytes not yet sent */
    size_t out_off;
} lstream_t;

static void lstream_free(void *cls)
{
    lstream_t *ls = cls;
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

static int client_gone(lstream_t *ls, int wait_ms)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(ls->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) {
        usleep((useconds_t)wait_ms * 1000);
        return 0;
    }
    struct pollfd pf = {.fd = ci->connect_fd, .events = POLLRDHUP};
    int r = poll(&pf, 1, wait_ms);
    return r > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static ssize_t lstream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    lstream_t *ls = cls;
    for (;;) {
        if (ls->limit >= 0 && ls->sent >= ls->limit) return MHD_CONTENT_READER_END_OF_STREAM;
        if (ls->out_off < ls->out.len) {
            size_t n = ls->out.len - ls->out_off;
            if (n > max) n = max;
            if (ls->limit >= 0 && (long long)n > ls->limit - ls->sent)
                n = (size_t)(ls->limit - ls->sent);
            memcpy(buf, ls->out.p + ls->out_off, n);
            ls->out_off += n;
            ls->sent += (long long)n;
            if (ls->out_off == ls->out.len) {
                buf_reset(&ls->out);
                ls->out_off = 0;
            }
            return (ssize_t)n;
        }
        int ended = atomic_load(&ls->log->ended);
        int r = read_more(ls);
        if (r < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (r > 0) continue;
        if (!ls->follow || ended || atomic_load(&ls->p->stopping))
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (client_gone(ls, FOLLOW_WAIT_MS)) return MHD_CONTENT_READER_END_WITH_ERROR;
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

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(msg), msg, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    enum MHD_Result ok = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return ok;
}

static int qbool(struct MHD_Connection *conn, const char *name)
{
    const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
    return v && (!strcmp(v, "1") || !strcasecmp(v, "t") || !strcasecmp(v, "true"));
}

/* A non-negative integer query value: 1 with *out, 0 when absent, -1 bad. */
static int qint(struct MHD_Connection *conn, const char *name, long long *out)
{
    const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
    if (!v) return 0;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || errno || n < 0) return -1;
    *out = n;
    return 1;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload;
    node_proc_t *p = cls;
    if (!*con_cls) {
        *con_cls = (void *)1;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0; /* a body is ignored */
        return MHD_YES;
    }
    if (p->token) {
        const char *h =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        if (!h || strncasecmp(h, "Bearer ", 7) || strcmp(h + 7, p->token))
            return reply_text(conn, 401, "Unauthorized");
    }
    char ns[64], pod[254], ctr[PROC_NAME_MAX], extra[2];
    if (strncmp(url, "/containerLogs/", 15) ||
        sscanf(url + 15, "%63[^/]/%253[^/]/%63[^/]%1s", ns, pod, ctr, extra) != 3)
        return reply_text(conn, 404, "404 page not found");
    if (strcmp(method, "GET")) return reply_text(conn, 405, "method not allowed");
    long long tail = -1, since = 0, limit = -1;
    if (qint(conn, "tailLines", &tail) < 0)
        return reply_text(conn, 400, "tailLines: must be a non-negative integer");
    if (qint(conn, "sinceSeconds", &since) < 0 ||
        (since == 0 && MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "sinceSeconds")))
        return reply_text(conn, 400, "sinceSeconds: must be greater than 0");
    if (qint(conn, "limitBytes", &limit) < 0 || limit == 0)
        return reply_text(conn, 400, "limitBytes: must be greater than 0");
    int previous = qbool(conn, "previous");
    char key[SIM_KEY_MAX];
    snprintf(key, sizeof key, "%s/%s", ns, pod);
    const char *why = NULL;
    proc_log_t *log = proc__log_lookup(p, key, ctr, previous, &why);
    if (!log) {
        if (!strcmp(why, "pod")) return reply_text(conn, 404, "pod %s/%s not found", ns, pod);
        if (!strcmp(why, "previous"))
            return reply_text(conn, 400,
                              "previous terminated container \"%s\" in pod \"%s\" not found", ctr,
                              pod);
        return reply_text(conn, 404, "container \"%s\" in pod \"%s\" not found", ctr, pod);
    }
    lstream_t *ls = calloc(1, sizeof *ls);
    if (!ls) {
        proc__log_unref(log);
        return reply_text(conn, 500, "out of memory");
    }
    ls->p = p;
    ls->log = log;
    ls->conn = conn;
    ls->follow = qbool(conn, "follow") && !previous;
    ls->timestamps = qbool(conn, "timestamps");
    ls->limit = limit;
    buf_init(&ls->raw, 64u << 20);
    buf_init(&ls->out, 64u << 20);
    const char *st = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "sinceTime");
    if (since > 0)
        proc__time_nano(ls->since, sizeof ls->since, clock_wall_ns() - since * 1000000000LL);
    else if (st && *st)
        snprintf(ls->since, sizeof ls->since, "%s", st);
    ls->fd = open(log->path, O_RDONLY | O_CLOEXEC);
    if (ls->fd < 0) {
        lstream_free(ls);
        return reply_text(conn, 404, "container \"%s\" in pod \"%s\" has no log", ctr, pod);
    }
    if (tail >= 0) tail_offset(ls->fd, tail);
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024,
                                                               lstream_read, ls, lstream_free);
    if (!r) {
        lstream_free(ls);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    enum MHD_Result ok = MHD_queue_response(conn, 200, r);
    MHD_destroy_response(r);
    return ok;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    log_debug(PROC_COMPONENT, "log server: %s", msg);
}

int proc__http_start(node_proc_t *p)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)p->port_cfg);
    if (inet_pton(AF_INET, p->addr, &sa.sin_addr) != 1) return KP_EINVAL;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG;
    p->http = MHD_start_daemon(flags, 0, NULL, NULL, on_request, p, MHD_OPTION_EXTERNAL_LOGGER,
                               mhd_log, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                               MHD_OPTION_CONNECTION_LIMIT, 256u, MHD_OPTION_THREAD_STACK_SIZE,
                               (size_t)(256 * 1024), MHD_OPTION_END);
    if (!p->http) {
        log_error(PROC_COMPONENT, "log server cannot listen on %s:%d", p->addr, p->port_cfg);
        return KP_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(p->http, MHD_DAEMON_INFO_BIND_PORT);
    p->port = info ? info->port : p->port_cfg;
    return 0;
}

void proc__http_stop(node_proc_t *p)
{
    if (p->http) {
        MHD_stop_daemon(p->http);
        p->http = NULL;
    }
}
