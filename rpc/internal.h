/* rpc internals shared by the module's files (never included outside
 * rpc/): the generated messages and the server's hand-written frames. */
#pragma once

#include "rpc/rpc.h"
#include "rpc/kin.pb-c.h"
#include "rpc/ttrpc.pb-c.h"

/* A Response frame, header included: status (code, msg) and an optional
 * payload message packed straight into out. */
size_t rpc_response_frame_size(int code, size_t msg_len, size_t payload_len);
void rpc_response_frame_write(uint8_t *out, uint32_t stream_id, int code, const char *msg,
			      size_t msg_len, const ProtobufCMessage *payload, size_t payload_len);

/* Listening sockets (transport.c): non-blocking, O_CLOEXEC. */
int rpc_listen_unix(const char *path, mode_t mode, int *ret_fd);
int rpc_listen_vsock(uint32_t port, int *ret_fd);
/* Fills in who is on the other end of an accepted socket. */
int rpc_peer_identify(int fd, enum rpc_transport transport, struct rpc_peer *ret);
