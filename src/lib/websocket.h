/*
 * websocket.h -- RFC 6455 WebSocket framing for both ends, without I/O:
 * the handshake's accept key, a decoder fed the byte stream in chunks of
 * any size, and an encoder. What an upgraded HTTP/1.1 connection
 * (httpd_upgrade) needs to carry Kubernetes' streaming protocols
 * (v4/v5.channel.k8s.io for exec and attach, portforward.k8s.io), and what
 * a test client needs to speak to it.
 *
 * DECODING. A server's decoder requires every frame masked and a client's
 * requires none (RFC 6455 5.1). Data messages (text, binary) are delivered
 * whole, their fragments joined, at most max_message bytes; a text
 * message must be valid UTF-8. Control frames (close, ping, pong) are
 * delivered as they come, also between the fragments of a data message;
 * they are at most 125 bytes and never fragmented. A close frame's payload
 * is empty or a status code (2 bytes, big-endian, one that may be sent)
 * with a UTF-8 reason. Reserved bits, reserved opcodes, a continuation
 * without a message begun, a new message before the last one ended, or a
 * length in a longer encoding than needed are protocol errors. After the
 * first error or a close frame the decoder takes no more bytes.
 *
 * BOUNDS. A frame's length is checked against max_message when its header
 * is complete, before any of its payload is buffered: a peer cannot make
 * the decoder hold more than max_message bytes plus one control frame.
 *
 * ERRORS (KP_* of lib/err.h) and the close codes a peer is told:
 *   KP_ECORRUPT   a protocol error (close 1002), or a text message or close
 *                 reason not UTF-8 (close 1007)  -- ws_decoder_close_code()
 *   KP_ETOOLARGE  a message over max_message (close 1009)
 *   KP_ECLOSED    bytes fed after a close frame (after an error: that error)
 *   KP_ENOMEM
 *   any nonzero the on_message callback returned (decoding stops there)
 *
 * THREADS. A decoder is its owner's (no locking); the functions without
 * one are pure.
 */
#ifndef KP_WEBSOCKET_H
#define KP_WEBSOCKET_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

enum {
    WS_OP_CONT = 0x0,
    WS_OP_TEXT = 0x1,
    WS_OP_BINARY = 0x2,
    WS_OP_CLOSE = 0x8,
    WS_OP_PING = 0x9,
    WS_OP_PONG = 0xA,
};

/* Close status codes (RFC 6455 7.4.1). */
enum {
    WS_CLOSE_NORMAL = 1000,
    WS_CLOSE_GOING_AWAY = 1001,
    WS_CLOSE_PROTOCOL = 1002,
    WS_CLOSE_UNSUPPORTED = 1003,
    WS_CLOSE_NO_STATUS = 1005, /* never sent: a close frame without a code */
    WS_CLOSE_BAD_DATA = 1007,
    WS_CLOSE_POLICY = 1008,
    WS_CLOSE_TOO_BIG = 1009,
    WS_CLOSE_INTERNAL = 1011,
};

#define WS_CONTROL_MAX 125 /* a control frame's payload, at most */
#define WS_ACCEPT_LEN  28  /* base64 of a SHA-1 digest */

/* Sec-WebSocket-Accept for a client's Sec-WebSocket-Key: base64(SHA-1(key
 * + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")) into out (NUL-terminated).
 * Errors: KP_EINVAL (key is not the base64 of 16 bytes, as RFC 6455 4.2.1
 * requires of a server), KP_ENOMEM. */
int ws_accept_key(const char *key, char out[WS_ACCEPT_LEN + 1]);

/* A message: op is WS_OP_TEXT, WS_OP_BINARY, WS_OP_CLOSE, WS_OP_PING or
 * WS_OP_PONG; p (len bytes) is borrowed for the call. Return 0 to go on,
 * nonzero to stop decoding (ws_decode returns it). */
typedef int (*ws_on_message_t)(void *arg, int op, const uint8_t *p, size_t len);

typedef struct ws_decoder {
    int server;         /* frames must come masked (a server's decoder) */
    size_t max_message; /* a data message's bytes, at most */
    /* state (the decoder's) */
    uint8_t hdr[14];
    size_t hdr_len; /* header bytes so far */
    int op;         /* the current frame's opcode */
    int fin;
    uint8_t mask[4];
    int masked;
    uint64_t left; /* payload bytes of the current frame still to come */
    uint64_t done; /* payload bytes of the current frame so far (for the mask) */
    int msg_op;    /* the data message in progress (0: none) */
    buf_t msg;     /* its bytes so far */
    uint8_t ctl[WS_CONTROL_MAX];
    size_t ctl_len;
    int err;        /* sticky: the first error, or KP_ECLOSED after a close */
    int close_code; /* the close code owed to the peer after an error */
} ws_decoder_t;

/* A decoder for the server's end (server 1) or the client's (0). */
void ws_decoder_init(ws_decoder_t *d, int server, size_t max_message);
void ws_decoder_free(ws_decoder_t *d);

/* Feed n bytes; each message completed is handed to on_message in order.
 * Returns 0 (every byte taken) or an error (see ERRORS; sticky). */
int ws_decode(ws_decoder_t *d, const void *p, size_t n, ws_on_message_t on_message, void *arg);

/* The close code to send the peer after ws_decode failed (1002, 1007,
 * 1009; 1011 for KP_ENOMEM), 0 if it has not failed, or after a close
 * frame or a stop by on_message (the caller's to choose). */
int ws_decoder_close_code(const ws_decoder_t *d);

/* The status code of a close frame's payload (WS_CLOSE_NO_STATUS when
 * empty) and its reason (borrowed from p, not NUL-terminated). */
int ws_close_status(const uint8_t *p, size_t len, const char **reason, size_t *reason_len);

/* Append one frame to out: op, fin (0: more fragments follow), the
 * payload. mask NULL: unmasked (a server's frames); else the 4-byte masking
 * key (a client's; RFC 6455 wants it unpredictable). Errors: KP_EINVAL (a
 * control frame fragmented or over WS_CONTROL_MAX, an unknown op),
 * KP_ETOOLARGE, KP_ENOMEM (out's). */
int ws_encode(buf_t *out, int op, int fin, const void *p, size_t n, const uint8_t *mask);

/* Append a close frame with `code` and `reason` (truncated to fit 125
 * bytes at a UTF-8 boundary); code 0: no payload. Errors: as ws_encode;
 * KP_EINVAL also for a code that may not be sent (1005, ...) or a reason
 * that is not UTF-8. */
int ws_encode_close(buf_t *out, int code, const char *reason, const uint8_t *mask);

#endif
