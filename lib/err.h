/* err: kin's one error type. A failure is an -errno (what functions
 * return), a status code numbered like gRPC's (what a client is told) and
 * one sentence that names the object and the cause (`cell "web":
 * memory.max: Invalid argument`). Every module fills a struct err; the
 * caller that decides reports it (a log line, an RPC status). The one
 * errno→code table is err_code_from_errno. Included by lib/lib.h. */
#pragma once

#include <stdarg.h>

/* gRPC status codes (kin.v1.Code in proto/kin.proto, the wire's numbers). */
enum err_code {
	ERR_OK = 0,
	ERR_CANCELLED = 1,
	ERR_UNKNOWN = 2,
	ERR_INVALID_ARGUMENT = 3,
	ERR_DEADLINE_EXCEEDED = 4,
	ERR_NOT_FOUND = 5,
	ERR_ALREADY_EXISTS = 6,
	ERR_PERMISSION_DENIED = 7,
	ERR_RESOURCE_EXHAUSTED = 8,
	ERR_FAILED_PRECONDITION = 9,
	ERR_ABORTED = 10,
	ERR_OUT_OF_RANGE = 11,
	ERR_UNIMPLEMENTED = 12,
	ERR_INTERNAL = 13,
	ERR_UNAVAILABLE = 14,
	ERR_DATA_LOSS = 15,
	ERR_UNAUTHENTICATED = 16,
};
#define ERR_CODE_MAX ERR_UNAUTHENTICATED

#define ERR_MSG_MAX 512
struct err {
	int errnum;            /* -errno, as returned; 0 when none applies */
	int code;              /* enum err_code */
	char msg[ERR_MSG_MAX]; /* one sentence, cut to fit */
};

/* "NOT_FOUND"; "CODE_<n>" for a code out of range (a static buffer). */
const char *err_code_name(int code);
/* The code an errno means when nothing more is known (-ENOENT or ENOENT:
 * NOT_FOUND, ...); unknown ones are INTERNAL. */
int err_code_from_errno(int err);

/* Fills e (NULL is fine: nothing is kept) and returns neg_errno, so a
 * failure is one line: `return err_set(e, -EINVAL, ERR_INVALID_ARGUMENT,
 * "cell \"%s\": ...", name);`. */
int err_set(struct err *e, int neg_errno, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int err_setv(struct err *e, int neg_errno, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
/* The same with the code from err_code_from_errno(neg_errno). */
int err_set_errno(struct err *e, int neg_errno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Empties e: code OK, no errno, no sentence. */
void err_clear(struct err *e);
