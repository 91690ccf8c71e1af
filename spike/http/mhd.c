/*
 * mhd.c -- the spike's baseline: libmicrohttpd as kplane uses it today
 * (a thread per connection, GnuTLS, HTTP/1.1 only). See common.h.
 *
 * Unlike the event-loop candidates, its watch stream waits on its own
 * connection's thread (usleep between events), as kplane's watches do.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

typedef struct body {
    char *p;
    size_t len;
    int too_large;
} body_t;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 16);
    size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static int reply(struct MHD_Connection *c, int status, char *bytes, size_t len, int owned)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, bytes, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", "application/json");
    int rc = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

static ssize_t watch_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    int *n = cls;
    if (*n >= SPIKE_WATCH_EVENTS) return MHD_CONTENT_READER_END_OF_STREAM;
    usleep(SPIKE_WATCH_EVERY_MS * 1000);
    size_t len;
    char *ev = spike_event(*n, &len);
    if (!ev || len > max) {
        free(ev);
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    memcpy(buf, ev, len);
    free(ev);
    (*n)++;
    return (ssize_t)len;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_len, void **state)
{
    (void)cls;
    (void)version;
    size_t len;
    if (!strcmp(method, "GET") && !strcmp(url, "/api/v1/namespaces/default/configmaps")) {
        const char *w = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
        if (w && !strcmp(w, "1")) {
            int *n = calloc(1, sizeof *n);
            struct MHD_Response *r =
                MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, watch_read, n, free);
            MHD_add_response_header(r, "Content-Type", "application/json");
            int rc = MHD_queue_response(c, 200, r);
            MHD_destroy_response(r);
            return rc;
        }
    }
    if (strcmp(method, "POST") || strcmp(url, SPIKE_CREATE_PATH)) {
        const char *nf = spike_not_found(&len);
        return reply(c, 404, (char *)nf, len, 0);
    }
    body_t *b = *state;
    if (!b) {
        *state = calloc(1, sizeof *b);
        return *state ? MHD_YES : MHD_NO;
    }
    if (*data_len) {
        if (!b->too_large && b->len + *data_len <= SPIKE_BODY_MAX) {
            char *p = realloc(b->p, b->len + *data_len);
            if (!p) return MHD_NO;
            memcpy(p + b->len, data, *data_len);
            b->p = p;
            b->len += *data_len;
        } else {
            b->too_large = 1;
        }
        *data_len = 0;
        return MHD_YES;
    }
    if (b->too_large) {
        static char msg[] = "{\"kind\":\"Status\",\"code\":413}";
        return reply(c, 413, msg, sizeof msg - 1, 0);
    }
    int status;
    char *out = spike_create(b->p ? b->p : "", b->len, &status, &len);
    if (!out) return MHD_NO;
    return reply(c, status, out, len, 1);
}

static void on_done(void *cls, struct MHD_Connection *c, void **state,
                    enum MHD_RequestTerminationCode code)
{
    (void)cls;
    (void)c;
    (void)code;
    body_t *b = *state;
    if (b) free(b->p);
    free(b);
    *state = NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s PORT CERT KEY\n", argv[0]);
        return 2;
    }
    char *cert = slurp(argv[2]), *key = slurp(argv[3]);
    if (!cert || !key) return 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1])),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
            MHD_USE_TLS | MHD_USE_ERROR_LOG,
        (uint16_t)atoi(argv[1]), NULL, NULL, on_request, NULL, MHD_OPTION_HTTPS_MEM_KEY, key,
        MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
        MHD_OPTION_CONNECTION_LIMIT, 4000u, MHD_OPTION_THREAD_STACK_SIZE, (size_t)(256 * 1024),
        MHD_OPTION_END);
    if (!d) return 1;
    printf("ready\n");
    fflush(stdout);
    pause();
    MHD_stop_daemon(d);
    return 0;
}
