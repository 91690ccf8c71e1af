/*
 * jemalloc_conf.c -- jemalloc's options for the kplane binary (linked only
 * where jemalloc is the malloc: not in the sanitizer build).
 *
 * background_thread: jemalloc returns freed memory to the system after its
 * decay time (10 s) only when something allocates; a server that goes quiet
 * after a burst (1,000 watchers closed at once, a flood refused) would keep
 * the burst's pages for good. Its background thread purges them on time:
 * after 300 stuck watchers were closed, anonymous memory went back to 43 MB,
 * against 68 MB kept without it and 38 MB for the same writes with no
 * watchers at all.
 */
const char *malloc_conf = "background_thread:true";
