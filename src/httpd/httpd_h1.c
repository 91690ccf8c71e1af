/*
 * httpd_h1.c -- HTTP/1.1 on a connection (http-parser), for httpd.c.
 *
 * A connection serves one request at a time: once a request's headers and
 * body are in, the parser pauses (bytes that come meanwhile wait in
 * c->rest, up to its cap, then reading stops) until the reply has been
 * written; then the next request is parsed. Replies are framed by the
 * thread that gives them (httpd.c's hand-back): status line and headers,
 * Content-Length or chunks.
 */
#include "httpd/httpd_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "lib/err.h"

int httpd__h1_head(buf_t *b, int status, const char *const *headers, const char *const *more,
                   long long length, int keep_alive)
{
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    int rc = buf_printf(b, "HTTP/1.1 %d %s\r\nDate: %s\r\n", status, httpd__reason(status), date);
    for (int list = 0; list < 2; list++) {
        const char *const *hs = list ? more : headers;
        for (size_t i = 0; !rc && hs && hs[i]; i += 2) {
            const char *n = hs[i], *v = hs[i + 1] ? hs[i + 1] : "";
            if (!strcasecmp(n, "Content-Length") || !strcasecmp(n, "Transfer-Encoding") ||
                !strcasecmp(n, "Connection") || !strcasecmp(n, "Date") || strpbrk(n, "\r\n:") ||
                strpbrk(v, "\r\n") || (list && httpd__head_names(headers, n)))
                continue; /* the engine's, unsafe, or given by the application */
            rc = buf_append(b, n, strlen(n));
            if (!rc) rc = buf_append(b, ": ", 2);
            if (!rc) rc = buf_append(b, v, strlen(v));
            if (!rc) rc = buf_append(b, "\r\n", 2);
        }
    }
    if (status == 101) { /* the connection becomes the application's */
        if (!rc) rc = buf_printf(b, "Connection: Upgrade\r\n");
    } else {
        if (!rc && length >= 0) rc = buf_printf(b, "Content-Length: %lld\r\n", length);
        if (!rc && length < 0) rc = buf_printf(b, "Transfer-Encoding: chunked\r\n");
        if (!rc && !keep_alive) rc = buf_printf(b, "Connection: close\r\n");
    }
    if (!rc) rc = buf_append(b, "\r\n", 2);
    return rc ? KP_ENOMEM : 0;
}

void httpd__h1_start(conn_t *c)
{
    c->proto = P_H1;
    http_parser_init(&c->p, HTTP_REQUEST);
    c->p.data = c;
}

static void feed(conn_t *c, const char *data, size_t n);

/* Feed what waited while the parser was paused, then what TLS holds. */
static void resume_input(conn_t *c)
{
    if (c->rest.len) {
        size_t n;
        char *rest = buf_detach(&c->rest, &n);
        feed(c, rest, n);
        free(rest);
    }
    if (!c->closing && c->secure) httpd__tls_input(c);
}

/* The request on c is complete (its reply written): go on to the next one,
 * or close. */
static void conn_next(conn_t *c)
{
    httpd_t *h = c->h;
    httpd_req_t *r = c->cur;
    atomic_fetch_add(&h->s_requests, 1);
    pthread_mutex_lock(&h->mu);
    int keep = r && r->keep_alive && !c->refused && !c->peer_eof && !h->stopping;
    pthread_mutex_unlock(&h->mu);
    if (!keep && (c->refused || c->tunnel) && !c->draining) {
        /* The reply is out; the client may still be sending the body we
         * refused, or its protocol's bytes. */
        httpd__conn_linger(c);
        return;
    }
    if (!keep) {
        httpd__conn_close(c);
        return;
    }
    c->cur = NULL;
    c->in_handler = 0;
    httpd__req_free(r);
    http_parser_pause(&c->p, 0);
    httpd__timer_set(c, httpd__idle_ms(c));
    httpd__set_reading(c, 1);
    resume_input(c);
}

/* Is c's current request done, reply and all? */
static int cur_done(conn_t *c)
{
    if (!c->cur || c->writing) return 0;
    pthread_mutex_lock(&c->h->mu);
    int done = c->cur->state == R_DONE && !c->cur->pre.len && !c->cur->out.len && !c->cur->in_ready;
    pthread_mutex_unlock(&c->h->mu);
    return done;
}

/* ---- a switched connection (UPGRADES in httpd.h) ---- */

/* Offer client bytes to on_data (h->mu discipline of CALLBACKS in httpd.h);
 * how many it took. Bytes of a reply that is over are dropped (all taken). */
static size_t give(conn_t *c, const char *p, size_t n)
{
    httpd_t *h = c->h;
    httpd_req_t *r = c->cur;
    pthread_mutex_lock(&h->mu);
    if (r->state != R_STREAM || r->gone) {
        pthread_mutex_unlock(&h->mu);
        return n;
    }
    r->in_cb++;
    r->cb_thread = pthread_self();
    pthread_mutex_unlock(&h->mu);
    size_t took = h->cfg.on_data(h->cfg.arg, r, p, n);
    pthread_mutex_lock(&h->mu);
    if (!--r->in_cb) pthread_cond_broadcast(&h->cb_cv);
    pthread_mutex_unlock(&h->mu);
    return took < n ? took : n;
}

/* Offer what waits in c->rest; once all is taken, read on. */
static void tunnel_offer(conn_t *c)
{
    if (c->rest.len) {
        size_t took = give(c, c->rest.p, c->rest.len);
        if (c->closing) return;
        memmove(c->rest.p, c->rest.p + took, c->rest.len - took);
        c->rest.len -= took;
        if (c->rest.len) return; /* held until httpd_upgrade_resume() */
    }
    httpd__set_reading(c, 1);
    if (c->secure) httpd__tls_input(c); /* records that waited for room */
}

/* Client bytes on a switched connection. */
static void tunnel_input(conn_t *c, const char *data, size_t n)
{
    size_t took = c->rest.len ? 0 : give(c, data, n); /* held bytes go first */
    if (!c->closing && took < n && buf_append(&c->rest, data + took, n - took))
        httpd__conn_close(c);
}

/* Move the current request's framed bytes to the socket: all of them on a
 * plain connection (no copy), over TLS as much as keeps HTTPD_WRITE_HIGH in
 * flight (the rest is encrypted as the client reads). Then, if the reply is
 * complete and sent, the next request. */
static void pump(conn_t *c)
{
    httpd_t *h = c->h;
    httpd_req_t *r = c->cur;
    while (r && !c->closing && (!c->secure || c->writing < HTTPD_WRITE_HIGH)) {
        size_t room = c->secure ? HTTPD_WRITE_HIGH - c->writing : SIZE_MAX;
        pthread_mutex_lock(&h->mu);
        if (r->pre.len) { /* the head of an adopted body (httpd.c's hand_back) */
            size_t hn;
            char *head = buf_detach(&r->pre, &hn);
            pthread_mutex_unlock(&h->mu);
            httpd__send(c, r, head, hn);
            continue;
        }
        size_t n = r->out.len - r->out_off;
        char *bytes = NULL;
        if (n > room && c->secure && r->state == R_DONE) {
            /* A complete reply bigger than the room no longer grows, and
             * only this thread takes from it: encrypt it from where it is,
             * a room at a time, without a copy. */
            const char *from = r->out.p + r->out_off;
            n = room;
            r->out_off += n;
            pthread_mutex_unlock(&h->mu);
            httpd__send_ref(c, r, from, n);
            if (c->closing) return;
            pthread_mutex_lock(&h->mu);
            if (r->out_off == r->out.len) {
                buf_free(&r->out);
                r->out_off = 0;
            }
            pthread_mutex_unlock(&h->mu);
            continue;
        }
        if (n && !r->out_off && n <= room) {
            bytes = buf_detach(&r->out, &n);
        } else if (n) {
            if (n > room) n = room;
            if ((bytes = malloc(n))) memcpy(bytes, r->out.p + r->out_off, n);
            r->out_off += n;
            if (r->out_off == r->out.len) {
                buf_reset(&r->out);
                r->out_off = 0;
            }
        }
        pthread_mutex_unlock(&h->mu);
        if (!n) break;
        if (!bytes) {
            httpd__conn_close(c);
            return;
        }
        httpd__send(c, r, bytes, n);
    }
    if (!c->closing && r && r->upgrade && !c->tunnel) {
        pthread_mutex_lock(&h->mu);
        int switched = r->tunnel && r->state != R_NONE;
        pthread_mutex_unlock(&h->mu);
        if (switched) { /* its 101 is on the way: the bytes are on_data's now */
            c->tunnel = 1;
            httpd__set_reading(c, 1);
            tunnel_offer(c);
            if (c->closing) return;
        }
    } else if (!c->closing && c->tunnel && c->rest.len) {
        pthread_mutex_lock(&h->mu);
        int again = r->resume;
        r->resume = 0;
        pthread_mutex_unlock(&h->mu);
        if (again) tunnel_offer(c);
        if (c->closing) return;
    }
    if (!c->closing && cur_done(c)) conn_next(c);
}

void httpd__h1_written(conn_t *c)
{
    httpd__timer_set(c, c->writing ? c->h->lim.write_timeout_ms : 0);
    pump(c);
}

void httpd__h1_ready(conn_t *c)
{
    pump(c);
}

/* ---- parsing ---- */

/* Stop the parser where it is (http-parser asserts on pausing a parser
 * that failed: a failed one stops anyway). */
static void pause_parser(conn_t *c)
{
    if (HTTP_PARSER_ERRNO(&c->p) == HPE_OK) http_parser_pause(&c->p, 1);
}

/* Refuse c's request with `status` (plain text) and close after it. */
static void refuse(conn_t *c, int status)
{
    httpd_t *h = c->h;
    c->refused = 1;
    pause_parser(c);
    httpd__set_reading(c, 0);
    httpd__timer_set(c, h->lim.write_timeout_ms);
    atomic_fetch_add(&h->s_refused, 1);
    httpd_req_t *r = c->cur;
    if (!r || c->in_handler) {
        httpd__conn_close(c);
        return;
    }
    r->keep_alive = 0;
    c->in_handler = 1; /* the reply below is its only one */
    if (httpd__refuse_text(r, status)) httpd__conn_close(c);
}

static int commit_header(conn_t *c)
{
    if (c->header_state != 2) return 0;
    c->header_state = 0;
    int rc = httpd__add_header(c->cur, c->hname.p ? c->hname.p : "", c->hname.len,
                               c->hval.p ? c->hval.p : "", c->hval.len);
    buf_reset(&c->hname);
    buf_reset(&c->hval);
    return rc;
}

static int header_room(conn_t *c, size_t n)
{
    c->header_bytes += n;
    return c->header_bytes <= c->h->lim.header_bytes;
}

static int on_message_begin(http_parser *p)
{
    conn_t *c = p->data;
    c->cur = httpd__req_new(c);
    if (!c->cur) return -1;
    c->in_handler = 0;
    c->header_state = 0;
    c->header_bytes = 0;
    buf_reset(&c->hname);
    buf_reset(&c->hval);
    httpd__timer_set(c, c->h->lim.header_timeout_ms);
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    conn_t *c = p->data;
    if (!header_room(c, n)) {
        refuse(c, 431);
        return -1;
    }
    if (buf_append(&c->cur->target, at, n)) {
        refuse(c, 414);
        return -1;
    }
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    conn_t *c = p->data;
    int rc = header_room(c, n) ? commit_header(c) : KP_ETOOLARGE;
    if (!rc) rc = buf_append(&c->hname, at, n);
    if (rc) {
        refuse(c, rc == KP_ENOMEM ? 500 : 431);
        return -1;
    }
    c->header_state = 1;
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    conn_t *c = p->data;
    int rc = header_room(c, n) ? buf_append(&c->hval, at, n) : KP_ETOOLARGE;
    if (rc || memchr(at, '\0', n)) {
        refuse(c, rc == KP_ENOMEM ? 500 : rc ? 431 : 400);
        return -1;
    }
    c->header_state = 2;
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    conn_t *c = p->data;
    httpd_t *h = c->h;
    httpd_req_t *r = c->cur;
    int rc = commit_header(c);
    if (rc) {
        refuse(c, rc == KP_ENOMEM ? 500 : 431);
        return -1;
    }
    snprintf(r->method, sizeof r->method, "%s", http_method_str((enum http_method)p->method));
    if ((rc = httpd__split_target(r))) {
        refuse(c, rc == KP_ENOMEM ? 500 : 400);
        return -1;
    }
    httpd__timer_set(c, 0);
    int has_body =
        (p->flags & F_CHUNKED) || (p->content_length > 0 && p->content_length != ULLONG_MAX);
    if (p->upgrade) { /* UPGRADES in httpd.h: the handler may switch */
        if (p->method == HTTP_CONNECT || has_body) {
            refuse(c, 400);
            return -1;
        }
        r->upgrade = 1;
    }
    int keep = http_should_keep_alive(p) && !r->upgrade;
    r->keep_alive = keep && !has_body; /* a refusal leaves the body unread */
    size_t body_max = 0;
    if (h->cfg.on_headers(h->cfg.arg, r, &body_max) == HTTPD_REPLIED) {
        c->in_handler = 1;
        if (has_body) { /* the body is never read: the connection ends */
            c->refused = 1;
            pause_parser(c);
            httpd__set_reading(c, 0);
        }
        return 0;
    }
    r->taken = 1;
    r->keep_alive = keep;
    if (r->discard)
        body_max = 0; /* nothing kept; on_body drops it all */
    else if (has_body && !(p->flags & F_CHUNKED) && p->content_length > body_max) {
        refuse(c, 413);
        return -1;
    }
    r->body.max = body_max;
    c->body_at = uv_now(&h->loop);
    if (has_body) httpd__timer_set(c, h->lim.idle_timeout_ms);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    conn_t *c = p->data;
    if (c->in_handler) return 0;           /* replied before the body: dropped */
    if (httpd__body_late(c, c->body_at)) { /* a body that trickles: cut off */
        atomic_fetch_add(&c->h->s_timeouts, 1);
        httpd__conn_close(c);
        return -1;
    }
    if (c->cur->discard) {
        httpd__timer_set(c, c->h->lim.idle_timeout_ms);
        return 0;
    }
    int rc = buf_append(&c->cur->body, at, n);
    if (rc) {
        refuse(c, rc == KP_ETOOLARGE ? 413 : 500);
        return -1;
    }
    httpd__timer_set(c, c->h->lim.idle_timeout_ms);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    conn_t *c = p->data;
    pause_parser(c);
    httpd__timer_set(c, 0);
    /* Reading goes on while the handler works, so that a client that goes
     * away is noticed (on_gone); what it sends meanwhile waits in c->rest. */
    if (c->in_handler) return 0; /* on_headers replied */
    c->in_handler = 1;
    httpd__dispatch(c->cur);
    return 0;
}

void httpd__h1_settings(http_parser_settings *s)
{
    *s = (http_parser_settings){
        .on_message_begin = on_message_begin,
        .on_url = on_url,
        .on_header_field = on_header_field,
        .on_header_value = on_header_value,
        .on_headers_complete = on_headers_complete,
        .on_body = on_body,
        .on_message_complete = on_message_complete,
    };
}

static void feed(conn_t *c, const char *data, size_t n)
{
    size_t done = http_parser_execute(&c->p, &c->h->settings, data, n);
    if (c->closing) return;
    enum http_errno e = HTTP_PARSER_ERRNO(&c->p);
    if (e == HPE_PAUSED) {
        if (done < n && !c->refused && buf_append(&c->rest, data + done, n - done))
            httpd__conn_close(c);
        return;
    }
    if (e != HPE_OK && !c->refused) {
        if (c->cur && !c->in_handler)
            refuse(c, 400);
        else
            httpd__conn_close(c);
    }
}

void httpd__h1_input(conn_t *c, const char *data, size_t n)
{
    if (c->tunnel) {
        tunnel_input(c, data, n);
        return;
    }
    if (c->refused) return; /* its reply is on the way; then draining */
    if (c->in_handler) {    /* the parser waits: keep what came (httpd__room's room) */
        if (buf_append(&c->rest, data, n)) httpd__conn_close(c);
        return;
    }
    feed(c, data, n);
}

void httpd__h1_eof(conn_t *c, int clean)
{
    int streaming = 0;
    if (clean && c->cur) {
        pthread_mutex_lock(&c->h->mu);
        streaming = c->cur->state == R_STREAM;
        pthread_mutex_unlock(&c->h->mu);
    }
    if (clean && c->cur && c->in_handler && !c->refused && !streaming) {
        /* The client stopped sending, maybe to wait for this reply (a
         * half-close), maybe for good. As Go's net/http, the handler hears
         * of it; the reply still goes out, and the connection closes then.
         * A stream's client that stops sending has left (a watch's client
         * closes to stop it): that is the close below. */
        c->peer_eof = 1;
        httpd__set_reading(c, 0);
        httpd__tell_gone(c->cur);
        return;
    }
    httpd__conn_close(c); /* end of file between requests, or an error */
}
