/*
 * h2_watches.c -- N watches over HTTP/2 from one libcurl multi handle, the
 * way client-go multiplexes an informer's watches: every transfer waits to
 * share a connection (CURLOPT_PIPEWAIT) and the connection takes N streams.
 *
 *   h2_watches URL TOKEN CAFILE N HOLD_S
 *
 * Opens N watches of URL, and once every one has its response head (200)
 * prints "open N connections C http2 H" (C: connections libcurl made, H:
 * the watches that came over HTTP/2). Then it waits, up to HOLD_S seconds,
 * for every watch to receive an event (body bytes after the open), prints
 * "received R" (the watches that did) and exits 0; 1 if a watch failed or
 * the heads did not all come within 60 s.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_open; /* every head has come: bytes from now on are events */

static size_t drop(char *p, size_t sz, size_t n, void *arg)
{
    (void)p;
    if (g_open) *(int *)arg = 1;
    return sz * n;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: h2_watches URL TOKEN CAFILE N HOLD_S\n");
        return 2;
    }
    int n = (int)strtol(argv[4], NULL, 10);
    double hold = strtod(argv[5], NULL);
    if (n < 1 || n > 10000) return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char auth[512];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", argv[2]);
    struct curl_slist *hdrs = curl_slist_append(NULL, auth);
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
    curl_multi_setopt(m, CURLMOPT_MAX_CONCURRENT_STREAMS, (long)n);
    CURL **e = calloc((size_t)n, sizeof *e);
    int *got = calloc((size_t)n, sizeof *got);
    for (int i = 0; i < n; i++) {
        e[i] = curl_easy_init();
        curl_easy_setopt(e[i], CURLOPT_URL, argv[1]);
        curl_easy_setopt(e[i], CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(e[i], CURLOPT_CAINFO, argv[3]);
        curl_easy_setopt(e[i], CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(e[i], CURLOPT_PIPEWAIT, 1L);
        curl_easy_setopt(e[i], CURLOPT_WRITEFUNCTION, drop);
        curl_easy_setopt(e[i], CURLOPT_WRITEDATA, &got[i]);
        curl_multi_add_handle(m, e[i]);
    }
    double start = now_s();
    int running = 1, reported = 0, rc = 0;
    while (running) {
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) /* a watch ended early */
            if (msg->msg == CURLMSG_DONE && !reported) {
                fprintf(stderr, "h2_watches: a watch ended before all were open: %s\n",
                        curl_easy_strerror(msg->data.result));
                rc = 1;
            }
        if (rc) break;
        if (!reported) {
            int heads = 0, h2 = 0;
            long conns = 0;
            for (int i = 0; i < n; i++) {
                long code = 0, ver = 0, c = 0;
                curl_easy_getinfo(e[i], CURLINFO_RESPONSE_CODE, &code);
                curl_easy_getinfo(e[i], CURLINFO_HTTP_VERSION, &ver);
                curl_easy_getinfo(e[i], CURLINFO_NUM_CONNECTS, &c);
                heads += code == 200;
                h2 += code == 200 && ver == CURL_HTTP_VERSION_2_0;
                conns += c;
            }
            if (heads == n) {
                printf("open %d connections %ld http2 %d\n", n, conns, h2);
                fflush(stdout);
                reported = 1;
                g_open = 1;
                start = now_s();
            } else if (now_s() - start > 60) {
                fprintf(stderr, "h2_watches: %d of %d watches open after 60 s\n", heads, n);
                rc = 1;
                break;
            }
        } else {
            int all = 1;
            for (int i = 0; i < n && all; i++) all = got[i];
            if (all || now_s() - start > hold) break;
        }
        curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    if (reported) {
        int r = 0;
        for (int i = 0; i < n; i++) r += got[i];
        printf("received %d\n", r);
    }
    for (int i = 0; i < n; i++) {
        curl_multi_remove_handle(m, e[i]);
        curl_easy_cleanup(e[i]);
    }
    free(e);
    free(got);
    curl_multi_cleanup(m);
    curl_slist_free_all(hdrs);
    curl_global_cleanup();
    return rc;
}
