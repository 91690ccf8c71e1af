/*
 * spdy.h -- SPDY/3.1 framing for both ends, without I/O: a decoder fed the
 * byte stream in chunks of any size, and encoders for every frame. What an
 * upgraded HTTP/1.1 connection (httpd_upgrade, "Upgrade: SPDY/3.1") needs
 * to carry Kubernetes' streaming protocols the way kubectl before 1.31
 * speaks them for exec and attach, and every kubectl for port-forward when
 * WebSockets are refused (client-go's httpstream/spdy, over moby's
 * spdystream), and what a test client needs to speak to it.
 *
 * FRAMES. Eight bytes of head, then the payload. A control frame's head is
 * the control bit, the version (3), its type, flags and length; a data
 * frame's is the stream id, flags and length (FIN: the sender's last bytes
 * on that stream). SYN_STREAM, SYN_REPLY and HEADERS carry a header block:
 * name/value pairs (lengths 32-bit, names lowercase and unique, a value's
 * several values separated by NUL) compressed with zlib, primed with the
 * protocol's dictionary, in one compression context per direction for the
 * whole session (each block ends with a sync flush).
 *
 * DECODING. Control frames are delivered whole, their header blocks
 * inflated and checked; data frames are delivered in pieces as their bytes
 * arrive (never buffered), the last piece carrying the frame's flags. A
 * control frame of an unknown type is skipped, as the protocol wants. A
 * control frame of another version, a known one of the wrong length, a
 * stream id of 0 where one is needed, a bad header block (not zlib, not
 * the dictionary, truncated, a name empty, uppercase or repeated, a count
 * its bytes cannot hold) is a protocol error. After the first error the
 * decoder takes no more bytes (the header context is lost with it): the
 * owner sends GOAWAY with PROTOCOL_ERROR (spdy_encode_goaway) and closes.
 *
 * BOUNDS. A control frame's length is checked against max_control when its
 * head is complete, before its payload is buffered; a header block
 * inflates to at most max_headers bytes (a decompression bomb stops there,
 * KP_ETOOLARGE). Data costs the decoder nothing.
 *
 * ERRORS (KP_* of lib/err.h):
 *   KP_ECORRUPT   a protocol error
 *   KP_ETOOLARGE  a control frame over max_control, a header block over
 *                 max_headers
 *   KP_ENOMEM
 *   any nonzero the on_frame callback returned (decoding stops there)
 *
 * THREADS. A decoder or an encoder is its owner's (no locking); the
 * functions without one are pure.
 */
#ifndef KP_SPDY_H
#define KP_SPDY_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

#define SPDY_VERSION    3
#define SPDY_HEAD_LEN   8
#define SPDY_LENGTH_MAX 0xffffffu /* a frame's payload, 24 bits */
#define SPDY_STREAM_MAX 0x7fffffffu

/* Frame types (SPDY_DATA is ours: data frames have none). */
enum {
    SPDY_DATA = 0,
    SPDY_SYN_STREAM = 1,
    SPDY_SYN_REPLY = 2,
    SPDY_RST_STREAM = 3,
    SPDY_SETTINGS = 4,
    SPDY_PING = 6,
    SPDY_GOAWAY = 7,
    SPDY_HEADERS = 8,
    SPDY_WINDOW_UPDATE = 9,
};

/* Flags. FIN on data, SYN_STREAM, SYN_REPLY and HEADERS; UNIDIRECTIONAL on
 * SYN_STREAM; CLEAR_SETTINGS on SETTINGS. */
enum {
    SPDY_FLAG_FIN = 0x01,
    SPDY_FLAG_UNIDIRECTIONAL = 0x02,
    SPDY_FLAG_CLEAR_SETTINGS = 0x01,
};

/* RST_STREAM status codes. */
enum {
    SPDY_RST_PROTOCOL_ERROR = 1,
    SPDY_RST_INVALID_STREAM = 2,
    SPDY_RST_REFUSED_STREAM = 3,
    SPDY_RST_UNSUPPORTED_VERSION = 4,
    SPDY_RST_CANCEL = 5,
    SPDY_RST_INTERNAL_ERROR = 6,
    SPDY_RST_FLOW_CONTROL_ERROR = 7,
    SPDY_RST_STREAM_IN_USE = 8,
    SPDY_RST_STREAM_ALREADY_CLOSED = 9,
    SPDY_RST_FRAME_TOO_LARGE = 11,
};

/* GOAWAY status codes. */
enum {
    SPDY_GOAWAY_OK = 0,
    SPDY_GOAWAY_PROTOCOL_ERROR = 1,
    SPDY_GOAWAY_INTERNAL_ERROR = 2,
};

/* The protocol's zlib dictionary for header blocks (1,423 bytes). */
extern const unsigned char spdy_dictionary[];
extern const size_t spdy_dictionary_len;

/* One name/value pair; the bytes need not be NUL-terminated. */
typedef struct spdy_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} spdy_header_t;

typedef struct spdy_setting {
    uint8_t flags;
    uint32_t id; /* 24 bits */
    uint32_t value;
} spdy_setting_t;

/* A decoded frame, borrowed for the on_frame call. The fields a type does
 * not use are 0. */
typedef struct spdy_frame {
    int type;                     /* SPDY_DATA or a control type above */
    uint8_t flags;                /* a data frame's: on its last piece only */
    uint32_t stream_id;           /* data, SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS,
                                     WINDOW_UPDATE (0: the session's window);
                                     GOAWAY: the last stream the sender accepted */
    uint32_t assoc_id;            /* SYN_STREAM */
    uint8_t priority;             /* SYN_STREAM: 0 (highest) to 7 */
    uint32_t status;              /* RST_STREAM, GOAWAY */
    uint32_t value;               /* PING: its id; WINDOW_UPDATE: the delta */
    const spdy_header_t *headers; /* SYN_STREAM, SYN_REPLY, HEADERS */
    size_t n_headers;
    const spdy_setting_t *settings; /* SETTINGS */
    size_t n_settings;
    const uint8_t *data; /* a data piece (never NULL, may be empty) */
    size_t len;
    int last; /* a data piece: the frame's last one */
} spdy_frame_t;

/* Return 0 to go on, nonzero to stop decoding (spdy_decode returns it). */
typedef int (*spdy_on_frame_t)(void *arg, const spdy_frame_t *f);

typedef struct spdy_decoder {
    size_t max_control; /* a control frame's payload, at most */
    size_t max_headers; /* a header block's inflated bytes, at most */
    /* state (the decoder's) */
    uint8_t head[SPDY_HEAD_LEN];
    size_t head_len;   /* head bytes so far */
    uint32_t left;     /* payload bytes of the current frame still to come */
    int data;          /* the current frame is a data frame */
    int skip;          /* ... a control frame of an unknown type */
    buf_t ctl;         /* a control frame's payload so far */
    buf_t plain;       /* a header block, inflated */
    void *z;           /* the inflate context (z_stream), made at first use */
    spdy_header_t *hv; /* a header block's pairs */
    size_t hv_cap;
    spdy_setting_t *sv;
    size_t sv_cap;
    int err; /* sticky: the first error */
} spdy_decoder_t;

/* max_control and max_headers: 0 gives 64 KiB and 256 KiB. */
void spdy_decoder_init(spdy_decoder_t *d, size_t max_control, size_t max_headers);
void spdy_decoder_free(spdy_decoder_t *d);

/* Feed n bytes; each frame (or data piece) is handed to on_frame in order.
 * Returns 0 (every byte taken) or an error (see ERRORS; sticky). */
int spdy_decode(spdy_decoder_t *d, const void *p, size_t n, spdy_on_frame_t on_frame, void *arg);

/* The header compression context of one direction of a session. */
typedef struct spdy_encoder {
    void *z;     /* the deflate context (z_stream), made at first use */
    buf_t plain; /* a header block before compression (scratch) */
    int err;     /* sticky: a failed deflate loses the context */
} spdy_encoder_t;

void spdy_encoder_init(spdy_encoder_t *e);
void spdy_encoder_free(spdy_encoder_t *e);

/* Append one frame to out. Errors: KP_EINVAL (a stream id of 0 or over
 * SPDY_STREAM_MAX where one is needed, a priority over 7, a header name
 * empty or not lowercase, a payload over SPDY_LENGTH_MAX), KP_ENOMEM
 * (out's, or zlib's: the encoder is then spent). */
int spdy_encode_syn_stream(spdy_encoder_t *e, buf_t *out, uint32_t stream_id, uint32_t assoc_id,
                           int priority, uint8_t flags, const spdy_header_t *h, size_t n);
int spdy_encode_syn_reply(spdy_encoder_t *e, buf_t *out, uint32_t stream_id, uint8_t flags,
                          const spdy_header_t *h, size_t n);
int spdy_encode_headers(spdy_encoder_t *e, buf_t *out, uint32_t stream_id, uint8_t flags,
                        const spdy_header_t *h, size_t n);
int spdy_encode_data(buf_t *out, uint32_t stream_id, uint8_t flags, const void *p, size_t n);
int spdy_encode_rst_stream(buf_t *out, uint32_t stream_id, uint32_t status);
int spdy_encode_settings(buf_t *out, uint8_t flags, const spdy_setting_t *s, size_t n);
int spdy_encode_ping(buf_t *out, uint32_t id);
int spdy_encode_goaway(buf_t *out, uint32_t last_stream_id, uint32_t status);
int spdy_encode_window_update(buf_t *out, uint32_t stream_id, uint32_t delta);

/* The value of header `name` (lowercase) among h[0..n), NULL if absent;
 * *len gets its length. */
const char *spdy_header_get(const spdy_header_t *h, size_t n, const char *name, size_t *len);

#endif
