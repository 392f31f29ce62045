// ttrpc-peer: containerd's Go ttrpc (Debian's golang-github-containerd-ttrpc-dev)
// against kin, to prove wire compatibility with an implementation not
// written here, and to give `make bench` a peer to compare with.
//
//	ttrpc-peer client SOCKET   call kin.v1.Health on kin; exit 0 if all is as expected
//	ttrpc-peer server SOCKET   serve kin.v1.Health (Check, Version) until killed
//
// The same over TCP with mutual TLS 1.3 (Go's crypto/tls; CERT and KEY are
// this side's PEM certificate and key, CA the PEM CA(s) the peer's
// certificate must chain to):
//
//	ttrpc-peer client-tls HOST:PORT CERT KEY CA [SERVER_NAME]
//	    the checks `client` makes; SERVER_NAME (default: HOST) is what the
//	    server's certificate must name. Prints one line per check; exit 0,
//	    or 1 with the error on stderr.
//	ttrpc-peer call-tls HOST:PORT CERT KEY CA SERVICE METHOD [SERVER_NAME]
//	    one call with an empty request to any method. Prints "OK" (exit 0),
//	    or the status the server answered, "PERMISSION_DENIED: message"
//	    (exit 1); exit 3 with the error on stderr when no answer came (connect,
//	    handshake, certificate refused by either side, connection closed);
//	    exit 2 for bad usage or a CERT, KEY or CA that does not load.
//	ttrpc-peer server-tls HOST:PORT CERT KEY CA
//	    serve kin.v1.Health over TLS 1.3, a client certificate required and
//	    verified against CA; prints "ready HOST:PORT" (the port bound: PORT 0
//	    picks a free one) once listening; serves until SIGTERM/SIGINT.
//
// KIN_TARGET in the environment is sent as the metadata kin-target by
// client, client-tls and call-tls (client and client-tls send "" without it,
// as client always did; call-tls sends none).
//
// Benchmarks: a raw ttrpc client (Request frames hand-built once, Response
// frames parsed by hand, no client library in the way, as
// tests/bench/rpc_bench.c) making unary kin.v1.Health/Check calls:
//
//	ttrpc-peer bench SOCKET CLIENTS CALLS                  over a unix socket
//	ttrpc-peer bench-tls HOST:PORT CERT KEY CA CLIENTS CALLS [SERVER_NAME]
//
// Both print one line, the four figures of rpc_bench then one more:
//
//	median_us p99_us calls_per_s_1 calls_per_s_CLIENTS connect_us
//
// median/p99: round trip of CALLS calls one at a time on one connection
// (after CALLS/10 warm-up calls); calls_per_s_1: the same calls per second;
// calls_per_s_CLIENTS: CALLS calls in all by CLIENTS connections each with
// one call in flight; connect_us: median over 50 fresh connections of
// connect (+ TLS handshake) + the first call answered.
//
// The kin.v1 messages are declared by hand with protobuf struct tags (as
// ttrpc's own types.go does), matching rpc/kin.proto field for field.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/gogo/protobuf/proto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type CheckRequest struct{}

func (m *CheckRequest) Reset()         { *m = CheckRequest{} }
func (m *CheckRequest) String() string { return "CheckRequest{}" }
func (*CheckRequest) ProtoMessage()    {}

type CheckResponse struct {
	Status int32 `protobuf:"varint,1,opt,name=status,proto3"`
}

func (m *CheckResponse) Reset()         { *m = CheckResponse{} }
func (m *CheckResponse) String() string { return fmt.Sprintf("%+v", *m) }
func (*CheckResponse) ProtoMessage()    {}

type VersionRequest struct{}

func (m *VersionRequest) Reset()         { *m = VersionRequest{} }
func (m *VersionRequest) String() string { return "VersionRequest{}" }
func (*VersionRequest) ProtoMessage()    {}

type VersionResponse struct {
	Version       string `protobuf:"bytes,1,opt,name=version,proto3"`
	Role          string `protobuf:"bytes,2,opt,name=role,proto3"`
	Hostname      string `protobuf:"bytes,3,opt,name=hostname,proto3"`
	KernelRelease string `protobuf:"bytes,4,opt,name=kernel_release,proto3"`
	UptimeNs      uint64 `protobuf:"varint,5,opt,name=uptime_ns,proto3"`
	Zone          string `protobuf:"bytes,6,opt,name=zone,proto3"`
	Pid           uint32 `protobuf:"varint,7,opt,name=pid,proto3"`
}

func (m *VersionResponse) Reset()         { *m = VersionResponse{} }
func (m *VersionResponse) String() string { return fmt.Sprintf("%+v", *m) }
func (*VersionResponse) ProtoMessage()    {}

// Raw is any message as its encoded bytes: it marshals to exactly what it
// holds (nothing for an empty request) and takes any answer as it is.
// ttrpc's codec is gogo/protobuf's proto.Marshal/Unmarshal, which use a
// message's own Marshal/Unmarshal when it has them.
type Raw []byte

func (m *Raw) Reset()                   { *m = nil }
func (m *Raw) String() string           { return fmt.Sprintf("Raw(%d bytes)", len(*m)) }
func (*Raw) ProtoMessage()              {}
func (m *Raw) Marshal() ([]byte, error) { return append([]byte(nil), *m...), nil }
func (m *Raw) Unmarshal(b []byte) error { *m = append(Raw(nil), b...); return nil }

const serving = 1

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "ttrpc-peer: "+format+"\n", args...)
	os.Exit(1)
}

// setupExit: the exit code of failSetup (call-tls keeps 1 for "the server
// answered with an error status").
var setupExit = 1

func failSetup(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "ttrpc-peer: "+format+"\n", args...)
	os.Exit(setupExit)
}

// grpcCodeNames: the canonical names (google/rpc/code.proto), as kin prints them.
var grpcCodeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
	"DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
	"RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

func codeName(c codes.Code) string {
	if int(c) < len(grpcCodeNames) {
		return grpcCodeNames[c]
	}
	return fmt.Sprintf("CODE_%d", uint32(c))
}

// ---- TLS ----------------------------------------------------------------------

func loadPool(path string) *x509.CertPool {
	pem, err := os.ReadFile(path)
	if err != nil {
		failSetup("CA: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		failSetup("CA %s: no PEM certificate in it", path)
	}
	return pool
}

func loadPair(cert, key string) tls.Certificate {
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		failSetup("certificate %s, key %s: %v", cert, key, err)
	}
	return pair
}

func clientTLSConfig(addr, cert, key, ca, serverName string) *tls.Config {
	if serverName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			failSetup("%s: %v (want HOST:PORT)", addr, err)
		}
		serverName = host
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{loadPair(cert, key)},
		RootCAs:      loadPool(ca),
		ServerName:   serverName,
	}
}

// errConn keeps the first read error: in TLS 1.3 the client's handshake is
// over before the server has looked at the client's certificate, so a
// refusal ("remote error: tls: bad certificate") arrives on the first read,
// which ttrpc's client turns into a bare "ttrpc: closed".
type errConn struct {
	net.Conn
	mu  sync.Mutex
	err error
}

func (c *errConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *errConn) explain(err error) error {
	if _, ok := status.FromError(err); ok && err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil && c.err != io.EOF && !strings.Contains(err.Error(), c.err.Error()) {
		return fmt.Errorf("%v (%v)", err, c.err)
	}
	return err
}

func versionName(v uint16) string {
	switch v {
	case tls.VersionTLS13:
		return "TLS 1.3"
	case tls.VersionTLS12:
		return "TLS 1.2"
	}
	return fmt.Sprintf("TLS 0x%04x", v)
}

func dialTLS(addr string, cfg *tls.Config) (*errConn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	return &errConn{Conn: conn}, nil
}

// ---- client, client-tls, call-tls -------------------------------------------------

func callContext(def bool) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if t, ok := os.LookupEnv("KIN_TARGET"); ok {
		ctx = ttrpc.WithMetadata(ctx, ttrpc.MD{"kin-target": []string{t}})
	} else if def {
		ctx = ttrpc.WithMetadata(ctx, ttrpc.MD{"kin-target": []string{""}})
	}
	return ctx, cancel
}

// checks: what client and client-tls expect of kin.v1.Health.
func checks(client *ttrpc.Client, explain func(error) error) {
	ctx, cancel := callContext(true)
	defer cancel()

	var check CheckResponse
	if err := client.Call(ctx, "kin.v1.Health", "Check", &CheckRequest{}, &check); err != nil {
		fail("Health.Check: %v", explain(err))
	}
	if check.Status != serving {
		fail("Health.Check: status %d, want SERVING (1)", check.Status)
	}
	fmt.Println("Check: SERVING")

	var v VersionResponse
	if err := client.Call(ctx, "kin.v1.Health", "Version", &VersionRequest{}, &v); err != nil {
		fail("Health.Version: %v", explain(err))
	}
	if v.Version == "" || v.Role == "" || v.KernelRelease == "" || v.Pid == 0 {
		fail("Health.Version: incomplete answer %+v", v)
	}
	fmt.Printf("Version: %s role %s hostname %s kernel %s uptime %dns pid %d\n",
		v.Version, v.Role, v.Hostname, v.KernelRelease, v.UptimeNs, v.Pid)

	// kin's errors arrive as gRPC statuses.
	err := client.Call(ctx, "kin.v1.Health", "Nope", &CheckRequest{}, &check)
	if status.Code(err) != codes.Unimplemented {
		fail("Health.Nope: got %v, want Unimplemented", explain(err))
	}
	fmt.Printf("Nope: %v\n", err)

	// Many calls in flight on one connection, from many goroutines.
	errs := make(chan error, 200)
	for i := 0; i < 200; i++ {
		go func() {
			var r CheckResponse
			errs <- client.Call(ctx, "kin.v1.Health", "Check", &CheckRequest{}, &r)
		}()
	}
	for i := 0; i < 200; i++ {
		if err := <-errs; err != nil {
			fail("concurrent Check: %v", explain(err))
		}
	}
	fmt.Println("200 concurrent calls: ok")
}

func runClient(path string) {
	conn, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		fail("dial %s: %v", path, err)
	}
	client := ttrpc.NewClient(conn)
	defer client.Close()
	checks(client, func(err error) error { return err })
}

func runClientTLS(addr, cert, key, ca, serverName string) {
	cfg := clientTLSConfig(addr, cert, key, ca, serverName)
	conn, err := dialTLS(addr, cfg)
	if err != nil {
		fail("%v", err)
	}
	st := conn.Conn.(*tls.Conn).ConnectionState()
	fmt.Printf("TLS: %s %s with %s, server %q verified\n", versionName(st.Version),
		tls.CipherSuiteName(st.CipherSuite), addr, st.PeerCertificates[0].Subject)
	client := ttrpc.NewClient(conn)
	defer client.Close()
	checks(client, conn.explain)
}

func runCallTLS(addr, cert, key, ca, service, method, serverName string) {
	setupExit = 2
	cfg := clientTLSConfig(addr, cert, key, ca, serverName)
	conn, err := dialTLS(addr, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ttrpc-peer: %v\n", err)
		os.Exit(3)
	}
	client := ttrpc.NewClient(conn)
	defer client.Close()
	ctx, cancel := callContext(false)
	defer cancel()
	var resp Raw
	err = client.Call(ctx, service, method, &Raw{}, &resp)
	if err == nil {
		fmt.Println("OK")
		return
	}
	if st, ok := status.FromError(err); ok {
		fmt.Printf("%s: %s\n", codeName(st.Code()), st.Message())
		client.Close()
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "ttrpc-peer: %s/%s: %v\n", service, method, conn.explain(err))
	client.Close()
	os.Exit(3)
}

// ---- server, server-tls -----------------------------------------------------------

func kernelRelease() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

// serve: kin.v1.Health on l until SIGTERM/SIGINT; cleanup runs before the exit.
func serve(l net.Listener, cleanup func()) {
	s, err := ttrpc.NewServer()
	if err != nil {
		fail("server: %v", err)
	}
	start := time.Now()
	kernel := kernelRelease()
	s.Register("kin.v1.Health", map[string]ttrpc.Method{
		"Check": func(ctx context.Context, unmarshal func(interface{}) error) (interface{}, error) {
			var req CheckRequest
			if err := unmarshal(&req); err != nil {
				return nil, err
			}
			return &CheckResponse{Status: serving}, nil
		},
		"Version": func(ctx context.Context, unmarshal func(interface{}) error) (interface{}, error) {
			var req VersionRequest
			if err := unmarshal(&req); err != nil {
				return nil, err
			}
			h, _ := os.Hostname()
			return &VersionResponse{Version: "go", Role: "peer", Hostname: h,
				KernelRelease: kernel, UptimeNs: uint64(time.Since(start)),
				Pid: uint32(os.Getpid())}, nil
		},
	})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		s.Close()
		cleanup()
		os.Exit(0)
	}()
	if err := s.Serve(context.Background(), l); err != nil && err != ttrpc.ErrServerClosed {
		fail("serve: %v", err)
	}
}

func runServer(path string) {
	os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		fail("listen %s: %v", path, err)
	}
	serve(l, func() { os.Remove(path) })
}

func runServerTLS(addr, cert, key, ca string) {
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{loadPair(cert, key)},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    loadPool(ca),
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fail("listen %s: %v", addr, err)
	}
	// The handshake runs on each connection's first read, in the goroutine
	// ttrpc gives that connection: a slow peer holds up no other.
	fmt.Printf("ready %s\n", l.Addr())
	serve(tls.NewListener(l, cfg), func() {})
}

// ---- bench, bench-tls --------------------------------------------------------------

const (
	frameHeader  = 10
	frameRequest = 1
	frameReply   = 2
	frameMax     = 4 << 20
)

// rawConn: unary kin.v1.Health/Check calls one at a time on one connection.
type rawConn struct {
	c   net.Conn
	id  uint32
	req []byte
	buf []byte
}

var checkRequest = func() []byte {
	body, err := proto.Marshal(&ttrpc.Request{Service: "kin.v1.Health", Method: "Check"})
	if err != nil {
		panic(err)
	}
	f := make([]byte, frameHeader+len(body))
	binary.BigEndian.PutUint32(f, uint32(len(body)))
	f[8] = frameRequest
	copy(f[frameHeader:], body)
	return f
}()

func newRawConn(c net.Conn) *rawConn {
	return &rawConn{c: c, id: 1, req: append([]byte(nil), checkRequest...), buf: make([]byte, 4096)}
}

// hasStatus: whether a Response's bytes carry field 1 (status) at all.
func hasStatus(b []byte) bool {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return true // malformed: let proto say what is wrong
		}
		b = b[n:]
		if key>>3 == 1 {
			return true
		}
		switch key & 7 {
		case 0:
			_, n = binary.Uvarint(b)
		case 1:
			n = 8
		case 2:
			l, m := binary.Uvarint(b)
			if m <= 0 || uint64(len(b)-m) < l {
				return true
			}
			n = m + int(l)
		case 5:
			n = 4
		default:
			return true
		}
		if n <= 0 || n > len(b) {
			return true
		}
		b = b[n:]
	}
	return false
}

func (r *rawConn) call() error {
	binary.BigEndian.PutUint32(r.req[4:], r.id)
	if _, err := r.c.Write(r.req); err != nil {
		return err
	}
	var h [frameHeader]byte
	if _, err := io.ReadFull(r.c, h[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > frameMax {
		return fmt.Errorf("frame of %d bytes", n)
	}
	if int(n) > len(r.buf) {
		r.buf = make([]byte, n)
	}
	body := r.buf[:n]
	if _, err := io.ReadFull(r.c, body); err != nil {
		return err
	}
	if sid := binary.BigEndian.Uint32(h[4:]); sid != r.id || h[8] != frameReply {
		return fmt.Errorf("frame type %d on stream %d, want a Response on %d", h[8], sid, r.id)
	}
	r.id += 2
	if hasStatus(body) {
		var resp ttrpc.Response
		if err := proto.Unmarshal(body, &resp); err != nil {
			return fmt.Errorf("Response: %v", err)
		}
		if resp.Status != nil && resp.Status.Code != int32(codes.OK) {
			return status.ErrorProto(resp.Status)
		}
	}
	return nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func runBench(dial func() (net.Conn, error), clients, calls int) {
	const connects = 50
	first := make([]time.Duration, connects)
	for i := range first {
		t := time.Now()
		c, err := dial()
		if err != nil {
			fail("bench: %v", err)
		}
		if err := newRawConn(c).call(); err != nil {
			fail("bench: first call: %v", explainConn(c, err))
		}
		first[i] = time.Since(t)
		c.Close()
	}
	sort.Slice(first, func(i, j int) bool { return first[i] < first[j] })

	// Round trips, one connection, one call at a time.
	c, err := dial()
	if err != nil {
		fail("bench: %v", err)
	}
	rc := newRawConn(c)
	for i := 0; i < calls/10; i++ {
		if err := rc.call(); err != nil {
			fail("bench: %v", explainConn(c, err))
		}
	}
	lat := make([]time.Duration, calls)
	t0 := time.Now()
	for i := range lat {
		t := time.Now()
		if err := rc.call(); err != nil {
			fail("bench: %v", explainConn(c, err))
		}
		lat[i] = time.Since(t)
	}
	tput1 := float64(calls) / time.Since(t0).Seconds()
	c.Close()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })

	// Throughput: CLIENTS connections, one call in flight on each.
	conns := make([]*rawConn, clients)
	for i := range conns {
		c, err := dial()
		if err != nil {
			fail("bench: %v", err)
		}
		conns[i] = newRawConn(c)
		if err := conns[i].call(); err != nil { // the handshake, out of the timing
			fail("bench: %v", explainConn(c, err))
		}
	}
	var left int64 = int64(calls)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	t0 = time.Now()
	for _, rc := range conns {
		wg.Add(1)
		go func(rc *rawConn) {
			defer wg.Done()
			for atomic.AddInt64(&left, -1) >= 0 {
				if err := rc.call(); err != nil {
					errs <- explainConn(rc.c, err)
					return
				}
			}
		}(rc)
	}
	wg.Wait()
	tputN := float64(calls) / time.Since(t0).Seconds()
	close(errs)
	if err := <-errs; err != nil {
		fail("bench: %d clients: %v", clients, err)
	}
	for _, rc := range conns {
		rc.c.Close()
	}
	fmt.Printf("%.1f %.1f %.0f %.0f %.1f\n", us(lat[calls/2]), us(lat[calls*99/100]),
		tput1, tputN, us(first[connects/2]))
}

func explainConn(c net.Conn, err error) error {
	if ec, ok := c.(*errConn); ok {
		return ec.explain(err)
	}
	return err
}

func benchCounts(clients, calls string) (int, int) {
	n, err1 := strconv.Atoi(clients)
	m, err2 := strconv.Atoi(calls)
	if err1 != nil || err2 != nil || n < 1 || m < 1 {
		fail("bench: CLIENTS and CALLS are positive numbers, not %q %q", clients, calls)
	}
	return n, m
}

// ---- main -------------------------------------------------------------------------

const usage = `usage: ttrpc-peer client SOCKET
       ttrpc-peer server SOCKET
       ttrpc-peer bench SOCKET CLIENTS CALLS
       ttrpc-peer client-tls HOST:PORT CERT KEY CA [SERVER_NAME]
       ttrpc-peer call-tls HOST:PORT CERT KEY CA SERVICE METHOD [SERVER_NAME]
       ttrpc-peer server-tls HOST:PORT CERT KEY CA
       ttrpc-peer bench-tls HOST:PORT CERT KEY CA CLIENTS CALLS [SERVER_NAME]`

func main() {
	a := os.Args
	argc := func(min, max int) bool { return len(a)-2 >= min && len(a)-2 <= max }
	opt := func(i int) string {
		if i < len(a) {
			return a[i]
		}
		return ""
	}
	switch {
	case len(a) < 2:
	case a[1] == "client" && argc(1, 1):
		runClient(a[2])
		return
	case a[1] == "server" && argc(1, 1):
		runServer(a[2])
		return
	case a[1] == "bench" && argc(3, 3):
		clients, calls := benchCounts(a[3], a[4])
		runBench(func() (net.Conn, error) {
			return net.DialTimeout("unix", a[2], 5*time.Second)
		}, clients, calls)
		return
	case a[1] == "client-tls" && argc(4, 5):
		runClientTLS(a[2], a[3], a[4], a[5], opt(6))
		return
	case a[1] == "call-tls" && argc(6, 7):
		runCallTLS(a[2], a[3], a[4], a[5], a[6], a[7], opt(8))
		return
	case a[1] == "server-tls" && argc(4, 4):
		runServerTLS(a[2], a[3], a[4], a[5])
		return
	case a[1] == "bench-tls" && argc(6, 7):
		clients, calls := benchCounts(a[6], a[7])
		cfg := clientTLSConfig(a[2], a[3], a[4], a[5], opt(8))
		cfg.ClientSessionCache = nil // every connect a full handshake
		runBench(func() (net.Conn, error) {
			c, err := dialTLS(a[2], cfg)
			if err != nil {
				return nil, err
			}
			return c, nil
		}, clients, calls)
		return
	}
	fmt.Fprintln(os.Stderr, usage)
	os.Exit(2)
}
