/* err: the error type's code names and the one errno→code table (the
 * rest is lib/err.h). */
#include "lib/lib.h"

#include <errno.h>
#include <stdio.h>

static const char *const code_names[] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

const char *err_code_name(int code)
{
	static char buf[32];
	if (code >= 0 && code <= ERR_CODE_MAX)
		return code_names[code];
	snprintf(buf, sizeof(buf), "CODE_%d", code);
	return buf;
}

int err_code_from_errno(int err)
{
	switch (err < 0 ? -err : err) {
	case 0:
		return ERR_OK;
	case EINVAL:
	case EBADMSG:
	case ENAMETOOLONG:
	case ERANGE:
	case E2BIG:
		return ERR_INVALID_ARGUMENT;
	case ENOENT:
	case ESRCH:
	case ENODEV:
	case ENXIO:
		return ERR_NOT_FOUND;
	case EEXIST:
		return ERR_ALREADY_EXISTS;
	case EPERM:
	case EACCES:
		return ERR_PERMISSION_DENIED;
	case ENOMEM:
	case ENOSPC:
	case EMFILE:
	case ENFILE:
	case ENOBUFS:
	case EMSGSIZE:
	case EDQUOT:
	case EUSERS:
		return ERR_RESOURCE_EXHAUSTED;
	/* The object is not in a state (or of a kind) that allows it. */
	case EBUSY:
	case ENOTEMPTY:
	case EALREADY:
	case EINPROGRESS:
	case ENOTDIR:
	case EISDIR:
	case ENOEXEC:
	case ELOOP:
	case ETXTBSY:
		return ERR_FAILED_PRECONDITION;
	case EOPNOTSUPP:
	case ENOSYS:
		return ERR_UNIMPLEMENTED;
	/* Worth trying again later. */
	case EAGAIN:
	case ECONNREFUSED:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case ESHUTDOWN:
	case EPIPE:
	case ECONNRESET:
		return ERR_UNAVAILABLE;
	case ETIMEDOUT:
		return ERR_DEADLINE_EXCEEDED;
	case ECANCELED:
		return ERR_CANCELLED;
	default:
		return ERR_INTERNAL;
	}
}

int err_setv(struct err *e, int neg_errno, int code, const char *fmt, va_list ap)
{
	if (e) {
		e->errnum = neg_errno;
		e->code = code;
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	}
	return neg_errno;
}

int err_set(struct err *e, int neg_errno, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_setv(e, neg_errno, code, fmt, ap);
	va_end(ap);
	return neg_errno;
}

int err_set_errno(struct err *e, int neg_errno, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_setv(e, neg_errno, err_code_from_errno(neg_errno), fmt, ap);
	va_end(ap);
	return neg_errno;
}

void err_clear(struct err *e)
{
	if (e) {
		e->errnum = 0;
		e->code = ERR_OK;
		e->msg[0] = '\0';
	}
}
