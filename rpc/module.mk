# rpc: ttrpc framing, server, client, transports, routing. Its messages
# come from proto/ (proto/module.mk); it links nothing of its own. (Its test
# programs, the load and route clients and the Go peer: tests/tests.mk.)
