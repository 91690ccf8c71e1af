/*
 * lws.c -- the spike's libwebsockets 4.1 candidate: one lws_service() loop on
 * the main thread (default poll backend), a TLS vhost (OpenSSL) offering ALPN
 * h2 and http/1.1, and one protocol callback serving common.h's paths.
 *
 * Replies are queued in the transaction's state (`out`, with LWS_PRE bytes of
 * headroom lws needs before every write) and written from
 * LWS_CALLBACK_HTTP_WRITEABLE at most CHUNK bytes at a time, and no more than
 * the h2 peer's window allows. lws only calls WRITEABLE once the socket took
 * the previous write (h1) or the stream has credit and its turn (h2), so the
 * queue grows when the client reads slowly; the watch stream ends when it
 * holds more than SPIKE_WATCH_QUEUE_MAX unsent bytes.
 */
#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define CHUNK 16384 /* one h2 DATA frame at the default SETTINGS_MAX_FRAME_SIZE */
#define BASE_PATH "/api/v1/namespaces/default/configmaps"

/* Per-wsi (h1 connection or h2 stream) state, zeroed by lws; reset between
 * h1 keep-alive transactions. */
typedef struct pss {
    struct lws *wsi;
    char *body; /* POST body so far */
    size_t body_len, body_cap;
    int responded; /* a reply is queued: ignore any further body */
    unsigned char *out; /* LWS_PRE headroom, then out_len bytes, out_off sent */
    size_t out_len, out_off;
    int out_final; /* the reply ends once `out` drains */
    int watch_n;   /* watch events queued so far */
    int ending;    /* the watch's client fell behind: end it */
    lws_sorted_usec_list_t sul; /* the watch's timer */
    lws_sorted_usec_list_t wake; /* retry a write the h2 window stopped */
} pss_t;

static void reset(pss_t *s)
{
    lws_sul_cancel(&s->sul);
    lws_sul_cancel(&s->wake);
    free(s->body);
    free(s->out);
    memset(s, 0, sizeof *s);
}

static int out_append(pss_t *s, const char *p, size_t n)
{
    if (s->out_off) { /* drop what was sent (lws may have scribbled on it) */
        memmove(s->out + LWS_PRE, s->out + LWS_PRE + s->out_off, s->out_len - s->out_off);
        s->out_len -= s->out_off;
        s->out_off = 0;
    }
    unsigned char *b = realloc(s->out, LWS_PRE + s->out_len + n);
    if (!b) return -1;
    memcpy(b + LWS_PRE + s->out_len, p, n);
    s->out = b;
    s->out_len += n;
    return 0;
}

/* Writes the headers now and queues the body. `len` < 0: no length (a
 * stream). `close`: h1 closes the connection after it (the request body may
 * still be arriving, or the length is unknown). */
static int respond(struct lws *wsi, pss_t *s, unsigned status, const char *body, long len,
                   int close)
{
    unsigned char hb[LWS_PRE + 512], *start = hb + LWS_PRE, *p = start, *end = hb + sizeof hb;
    s->responded = 1;
    if (status == 201 && !close && lws_get_network_wsi(wsi) == wsi) {
        /* lws knows no reason phrase for 201 and sends "HTTP/1.1 201 ",
         * which h2load's parser does not report; write the line here */
        static const char line[] = "HTTP/1.1 201 Created", ct[] = "application/json";
        if (lws_add_http_header_by_name(wsi, NULL, (const unsigned char *)line, sizeof line - 1,
                                        &p, end) ||
            lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE,
                                         (const unsigned char *)ct, sizeof ct - 1, &p, end) ||
            lws_add_http_header_content_length(wsi, (lws_filepos_t)len, &p, end))
            return -1;
    } else if (lws_add_http_common_headers(wsi, status, "application/json",
                                           close ? LWS_ILLEGAL_HTTP_CONTENT_LEN
                                                 : (lws_filepos_t)len,
                                           &p, end)) {
        return -1;
    }
    if (close && len >= 0 && lws_add_http_header_content_length(wsi, (lws_filepos_t)len, &p, end))
        return -1;
    if (lws_finalize_write_http_header(wsi, start, &p, end)) return -1;
    if (len < 0) return 0;
    if (out_append(s, body, (size_t)len)) return -1;
    s->out_final = 1;
    lws_callback_on_writable(wsi);
    return 0;
}

static int too_large(struct lws *wsi, pss_t *s)
{
    static const char msg[] = "{\"kind\":\"Status\",\"code\":413}";
    free(s->body);
    s->body = NULL;
    return respond(wsi, s, 413, msg, sizeof msg - 1, 1);
}

static void watch_tick(lws_sorted_usec_list_t *sul)
{
    pss_t *s = lws_container_of(sul, pss_t, sul);
    size_t len;
    char *ev = spike_event(s->watch_n, &len);
    int bad = !ev || out_append(s, ev, len) || s->out_len - s->out_off > SPIKE_WATCH_QUEUE_MAX;
    free(ev);
    if (bad) { /* out of memory, or the client does not keep up: end the stream */
        s->ending = 1;
        lws_callback_on_writable(s->wsi);
        return;
    }
    if (++s->watch_n == SPIKE_WATCH_EVENTS)
        s->out_final = 1;
    else
        lws_sul_schedule(lws_get_context(s->wsi), 0, &s->sul, watch_tick,
                         SPIKE_WATCH_EVERY_MS * LWS_US_PER_MS);
    lws_callback_on_writable(s->wsi);
}

static int method_is(struct lws *wsi, const char *m, enum lws_token_indexes h1)
{
    char b[16];
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_COLON_METHOD) > 0) /* h2 */
        return lws_hdr_copy(wsi, b, sizeof b, WSI_TOKEN_HTTP_COLON_METHOD) > 0 && !strcmp(b, m);
    return lws_hdr_total_length(wsi, h1) > 0;
}

static int create(struct lws *wsi, pss_t *s)
{
    int status;
    size_t len;
    char *out = spike_create(s->body ? s->body : "", s->body_len, &status, &len);
    if (!out) return -1;
    int rc = respond(wsi, s, (unsigned)status, out, (long)len, 0);
    free(out);
    return rc;
}

static int on_http(struct lws *wsi, pss_t *s, const char *path)
{
    char b[32];
    const char *w;
    size_t len;
    reset(s);
    s->wsi = wsi;
    if (!strcmp(path, BASE_PATH) && method_is(wsi, "GET", WSI_TOKEN_GET_URI) &&
        (w = lws_get_urlarg_by_name(wsi, "watch=", b, sizeof b)) && !strcmp(w, "1")) {
        if (respond(wsi, s, 200, NULL, -1, 1)) return -1;
        if (lws_get_network_wsi(wsi) != wsi)
            lws_http_mark_sse(wsi); /* h2: stream and connection get no idle timeout */
        else
            lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
        lws_sul_schedule(lws_get_context(wsi), 0, &s->sul, watch_tick,
                         SPIKE_WATCH_EVERY_MS * LWS_US_PER_MS);
        return 0;
    }
    int post = method_is(wsi, "POST", WSI_TOKEN_POST_URI);
    if (!post || strcmp(path, SPIKE_CREATE_PATH)) {
        const char *nf = spike_not_found(&len);
        return respond(wsi, s, 404, nf, (long)len, post);
    }
    if (lws_hdr_copy(wsi, b, sizeof b, WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0) {
        unsigned long long cl = strtoull(b, NULL, 10);
        if (cl > SPIKE_BODY_MAX) return too_large(wsi, s);
        if (!cl) return create(wsi, s); /* lws reports no body events */
        if (!(s->body = malloc(s->body_cap = cl))) return -1;
    } else if (lws_get_network_wsi(wsi) == wsi &&
               !lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING)) {
        return create(wsi, s); /* h1 without length or chunking: no body */
    }
    return 0; /* the body follows (HTTP_BODY, then HTTP_BODY_COMPLETION) */
}

static void wake(lws_sorted_usec_list_t *sul)
{
    lws_callback_on_writable(lws_container_of(sul, pss_t, wake)->wsi);
}

static int on_writeable(struct lws *wsi, pss_t *s)
{
    if (s->ending) { /* drop the queue and end the stream */
        unsigned char z[LWS_PRE + 1];
        if (lws_get_network_wsi(wsi) == wsi) return -1; /* h1: only closing ends it */
        /* h2: an empty END_STREAM needs no window. (Returning -1 here, or
         * lws_set_timeout(), closes the whole h2 connection in lws 4.1.) */
        reset(s);
        if (lws_write(wsi, z + LWS_PRE, 0, LWS_WRITE_HTTP_FINAL) < 0) return -1;
        return lws_http_transaction_completed(wsi) ? -1 : 0;
    }
    size_t left = s->out_len - s->out_off, n = left < CHUNK ? left : CHUNK;
    lws_fileofs_t allow = lws_get_peer_write_allowance(wsi); /* h2 window, else -1 */
    if (allow >= 0 && (lws_fileofs_t)n > allow) n = (size_t)allow;
    if (!left && !s->out_final) return 0;
    if (!n && left) { /* no h2 window: lws 4.1 would call WRITEABLE again at
                       * once (a busy loop) and has no "window opened" event */
        lws_sul_schedule(lws_get_context(wsi), 0, &s->wake, wake, 10 * LWS_US_PER_MS);
        return 0;
    }
    int final = s->out_final && n == left;
    if (lws_write(wsi, s->out + LWS_PRE + s->out_off, n,
                  final ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != (int)n)
        return -1;
    s->out_off += n;
    if (final) {
        reset(s);
        return lws_http_transaction_completed(wsi) ? -1 : 0;
    }
    if (s->out_off < s->out_len) lws_callback_on_writable(wsi);
    return 0;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    pss_t *s = user;
    switch (reason) {
    case LWS_CALLBACK_HTTP:
        return on_http(wsi, s, in);
    case LWS_CALLBACK_HTTP_BODY:
        if (s->responded) return 0; /* 413 or 404 sent: drop the rest */
        if (s->body_len + len > SPIKE_BODY_MAX) return too_large(wsi, s);
        if (s->body_len + len > s->body_cap) {
            size_t cap = s->body_cap * 2 > s->body_len + len ? s->body_cap * 2 : s->body_len + len;
            char *p = realloc(s->body, cap < SPIKE_BODY_MAX ? cap : SPIKE_BODY_MAX);
            if (!p) return -1;
            s->body = p;
            s->body_cap = cap < SPIKE_BODY_MAX ? cap : SPIKE_BODY_MAX;
        }
        memcpy(s->body + s->body_len, in, len);
        s->body_len += len;
        return 0;
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        return s->responded ? 0 : create(wsi, s);
    case LWS_CALLBACK_HTTP_WRITEABLE:
        return s ? on_writeable(wsi, s) : 0;
    case LWS_CALLBACK_CLOSED_HTTP:
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
        if (s) reset(s);
        break;
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols protocols[] = {
    {.name = "http", .callback = callback, .per_session_data_size = sizeof(pss_t)},
    {0},
};

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s PORT CERT KEY\n", argv[0]);
        return 2;
    }
    lws_set_log_level(LLL_ERR | LLL_WARN, NULL);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = atoi(argv[1]);
    info.iface = "127.0.0.1";
    info.protocols = protocols;
    info.ssl_cert_filepath = argv[2];
    info.ssl_private_key_filepath = argv[3];
    info.alpn = "h2,http/1.1";
    /* Our h2 SETTINGS. lws's default HEADER_TABLE_SIZE of 65536 costs ~120 KiB
     * per connection (its HPACK table is allocated up front); 4096 is the
     * RFC's default. Window 0 (lws's default) makes every POST body wait
     * for a WINDOW_UPDATE; 65535 is the RFC's. */
    info.http2_settings[0] = 1; /* use [1]..[6] */
    info.http2_settings[1] = 4096;  /* HEADER_TABLE_SIZE */
    info.http2_settings[2] = 0;     /* ENABLE_PUSH */
    info.http2_settings[3] = 100;   /* MAX_CONCURRENT_STREAMS */
    info.http2_settings[4] = 65535; /* INITIAL_WINDOW_SIZE */
    info.http2_settings[5] = 16384; /* MAX_FRAME_SIZE */
    info.http2_settings[6] = 4096;  /* MAX_HEADER_LIST_SIZE (the ah holds 4096) */
    info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT | LWS_SERVER_OPTION_DISABLE_IPV6;
    struct lws_context *ctx = lws_create_context(&info);
    if (!ctx) return 1;
    printf("ready\n");
    fflush(stdout);
    while (lws_service(ctx, 0) >= 0)
        ;
    lws_context_destroy(ctx);
    return 0;
}
