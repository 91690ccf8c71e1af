/*
 * labrun.h -- one lab at a time, run as a child process of the API server
 * for the dashboard's lab page (ui.c): `kplane lab run NAME` with
 * KPLANE_LAB_EVENTS=1, its output (stdout and stderr together) kept in a
 * buffer with a hard cap, read from any offset while it runs and after.
 *
 * Lifecycle: new -> start (again once the run is over) ... -> free. free()
 * ends a run still going: SIGTERM (the lab stops what it started), and
 * SIGKILL to its whole process group after API_LABRUN_GRACE_MS.
 *
 * Threads: every call is safe from any thread (one mutex, held briefly);
 * a run's output is read by a thread of its own, which also reaps the
 * child. Errors are KP_* codes (lib/err.h).
 */
#ifndef KP_API_UI_LABRUN_H
#define KP_API_UI_LABRUN_H

#include <stddef.h>

#define API_LABRUN_OUTPUT_MAX (1u << 20) /* output kept per run; the rest is dropped */
#define API_LABRUN_GRACE_MS   10000      /* after SIGTERM, before SIGKILL */
#define API_LABRUN_NAME_MAX   63

typedef struct api_labrun api_labrun_t;

typedef enum api_labrun_state {
    API_LABRUN_NONE = 0, /* nothing run yet */
    API_LABRUN_RUNNING,
    API_LABRUN_EXITED, /* ended: exit_code says how */
} api_labrun_state_t;

typedef struct api_labrun_status {
    api_labrun_state_t state;
    char name[API_LABRUN_NAME_MAX + 1]; /* the run's lab ("" before the first) */
    int exit_code;                      /* its exit status; 128+N for signal N; -1 while running */
    size_t total;                       /* output bytes kept so far */
    int truncated;                      /* output passed `cap` and what followed was dropped */
    double seconds;                     /* since it started (to its end once it ended) */
} api_labrun_status_t;

/* A runner keeping at most `cap` bytes of a run's output (0:
 * API_LABRUN_OUTPUT_MAX). *out is the caller's until api_labrun_free().
 * Errors: KP_ENOMEM. */
int api_labrun_new(size_t cap, api_labrun_t **out);

/* Start argv (argv[0] a path; NULL-terminated) as lab `name`, with the
 * server's environment plus KPLANE_LAB_EVENTS=1, standard input from
 * /dev/null, in a process group of its own, with no signal blocked or
 * ignored (the server's mask is not inherited). The previous run's output
 * is forgotten. Errors: KP_EBUSY (a run is going), KP_EINVAL (a name
 * empty or over API_LABRUN_NAME_MAX), KP_EIO (the process could not be
 * started), KP_ENOMEM, KP_ECLOSED (being freed). */
int api_labrun_start(api_labrun_t *lr, const char *name, char *const argv[]);

/* The current (or last) run: its status in *st, and its output from
 * `offset` (at most `max` bytes) as a new buffer in *data (the caller
 * frees it; NULL with *len 0 when there is nothing from there). An offset
 * past the end gives nothing. Errors: KP_ENOMEM. */
int api_labrun_read(api_labrun_t *lr, size_t offset, size_t max, char **data, size_t *len,
                    api_labrun_status_t *st);

/* End a run still going (see above), wait for it, and free. NULL: no-op. */
void api_labrun_free(api_labrun_t *lr);

#endif
