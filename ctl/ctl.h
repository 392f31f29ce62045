/* ctl: `kin ctl`, the client of every kin.v1 service. It speaks to kin
 * only through rpc/'s client and proto/'s messages; it includes no header
 * of cells/, zone/ or vm/. */
#pragma once

/* `kin ctl [--socket PATH|--connect ADDR] [-o json] COMMAND`: exit 0 ok,
 * 1 RPC error, 2 usage error, 3 unreachable. */
int ctl_main(int argc, char **argv);
